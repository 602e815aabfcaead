//! What a custom resource's `scale` subresource reads must be readable:
//! kube refuses a write that leaves the replica counts or the selector
//! at their paths with a value the Scale object could not carry, so
//! `kubectl scale` and the HorizontalPodAutoscaler never meet one.

use crate::catalog::{FieldPath, ScaleSelector, ScaleSpec};
use crate::status::{field_invalid, field_invalid_raw, StatusCause};
use serde_json::Value;

/// The problems with `obj`'s replica counts and selector, as kube words
/// them (paths written as the CRD gives them: `.spec.replicas`). On an
/// update (`old`), a spec count the write leaves as it was is not judged
/// again: a `/status` write (which keeps the spec) is checked for the
/// status only, as kube does.
pub fn validate(scale: Option<&ScaleSpec>, obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let Some(scale) = scale else {
        return Vec::new();
    };
    let mut causes = Vec::new();
    let at = |v: &Value| {
        nested(v, &scale.spec_replicas, "", |x| Some(x.clone()))
            .ok()
            .flatten()
    };
    if old.is_none_or(|o| at(o) != at(obj)) {
        causes.extend(replicas(&scale.spec_replicas, obj));
    }
    causes.extend(replicas(&scale.status_replicas, obj));
    if let ScaleSelector::String(path) = &scale.selector {
        if !path.is_empty() {
            if let Err(detail) = nested(obj, path, "string", |v| v.as_str().map(drop)) {
                causes.push(field_invalid(&dotted(path), "", &detail));
            }
        }
    }
    causes
}

/// A replica count: absent, or an integer in `0..=i32::MAX`.
fn replicas(path: &FieldPath, obj: &Value) -> Option<StatusCause> {
    let at = dotted(path);
    match nested(obj, path, "int64", Value::as_i64) {
        Err(detail) => Some(field_invalid_raw(&at, "0", &detail)),
        Ok(Some(n)) if n < 0 => Some(field_invalid_raw(
            &at,
            &n.to_string(),
            "should be a non-negative integer",
        )),
        Ok(Some(n)) if n > i64::from(i32::MAX) => Some(field_invalid_raw(
            &at,
            &n.to_string(),
            &format!("should be less than or equal to {}", i32::MAX),
        )),
        Ok(_) => None,
    }
}

/// The value at `path` read as `want` (kube's `unstructured.Nested*`):
/// `Ok(None)` when a key on the way is missing, an accessor error when a
/// value on the way is not an object or the value is not a `want`.
fn nested<T>(
    obj: &Value,
    path: &FieldPath,
    want: &str,
    read: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, String> {
    let mut at = obj;
    for (i, key) in path.iter().enumerate() {
        if at.is_null() {
            return Ok(None);
        }
        let Some(map) = at.as_object() else {
            // kube names the key it was looking for, and spells the type
            // without %T's space.
            return Err(accessor_error(&path[..=i], at, "map[string]interface{}"));
        };
        match map.get(&**key) {
            Some(v) => at = v,
            None => return Ok(None),
        }
    }
    read(at)
        .map(Some)
        .ok_or_else(|| accessor_error(path, at, want))
}

fn accessor_error(path: &[Box<str>], value: &Value, want: &str) -> String {
    format!(
        "{} accessor error: {} is of the type {}, expected {want}",
        dotted(path),
        crate::status::go_print(value),
        go_type(value)
    )
}

fn dotted(path: &[Box<str>]) -> String {
    path.iter().fold(String::new(), |mut s, k| {
        s.push('.');
        s.push_str(k);
        s
    })
}

/// A decoded JSON value's Go type, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::field_path;
    use serde_json::json;

    fn spec() -> ScaleSpec {
        ScaleSpec {
            spec_replicas: field_path(&["spec", "replicas"]),
            status_replicas: field_path(&["status", "replicas"]),
            selector: ScaleSelector::String(field_path(&["status", "selector"])),
        }
    }

    fn messages(obj: Value) -> Vec<String> {
        validate(Some(&spec()), &obj, None)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn absent_and_valid_values_pass() {
        assert!(messages(json!({})).is_empty());
        assert!(messages(
            json!({"spec": {"replicas": 3}, "status": {"replicas": 0, "selector": "a=b"}})
        )
        .is_empty());
        assert!(validate(None, &json!({"spec": {"replicas": -1}}), None).is_empty());
        let stale = json!({"spec": {"replicas": -1}, "status": {"replicas": 1}});
        assert!(
            validate(Some(&spec()), &stale, Some(&stale)).is_empty(),
            "an unchanged spec count is not judged again"
        );
    }

    #[test]
    fn out_of_range_counts_are_refused_as_kube_words_them() {
        assert_eq!(
            messages(json!({"spec": {"replicas": -1}, "status": {"replicas": 2147483648_i64}})),
            [
                ".spec.replicas: Invalid value: -1: should be a non-negative integer",
                ".status.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647",
            ]
        );
    }

    #[test]
    fn wrong_types_are_accessor_errors() {
        assert_eq!(
            messages(json!({"spec": {"replicas": "three"}, "status": {"replicas": 1.5, "selector": 5}})),
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: three is of the type string, expected int64",
                ".status.replicas: Invalid value: 0: .status.replicas accessor error: 1.5 is of the type float64, expected int64",
                ".status.selector: Invalid value: \"\": .status.selector accessor error: 5 is of the type int64, expected string",
            ]
        );
        assert_eq!(
            messages(json!({"spec": ["x"]})),
            [".spec.replicas: Invalid value: 0: .spec.replicas accessor error: [x] is of the type []interface {}, expected map[string]interface{}"]
        );
        assert!(
            messages(json!({"spec": null})).is_empty(),
            "a null on the way is not found"
        );
    }
}
