//! How a mutating policy's mutation changes the object: an apply
//! configuration is merged in as server-side apply merges (structs and
//! granular maps key by key, associative lists item by item) but may not
//! touch atomic values, which it would replace whole; a JSON patch is
//! applied as written, and one whose `test` fails changes nothing.

use kubeshard_core::apply;
use kubeshard_core::schema::{ListType, Schema};
use serde_json::{Map, Value};

/// Merges the apply configuration `patch` into `object`.
pub fn apply_configuration(
    object: &mut Value,
    patch: &Value,
    schema: Option<Schema<'_>>,
) -> Result<(), String> {
    if !patch.is_object() {
        return Err(format!(
            "unsupported return type from ApplyConfiguration expression: {}",
            kind(patch)
        ));
    }
    let mut found = Vec::new();
    atomics(patch, schema, &mut String::new(), &mut found);
    if !found.is_empty() {
        return Err(format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            found.join(", ")
        ));
    }
    *object = apply::merge(object, patch, schema)
        .map_err(|e| format!("error applying patch: failed to merge patch: {}", e.0))?;
    Ok(())
}

/// The places where `value` sets an atomic struct, map or list.
fn atomics(value: &Value, schema: Option<Schema<'_>>, path: &mut String, out: &mut Vec<String>) {
    let Some(schema) = schema else {
        return;
    };
    match value {
        Value::Object(fields) => {
            if schema.is_atomic_map() {
                out.push(path.clone());
            }
            for (k, v) in fields {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                atomics(v, schema.member(k).map(|(s, _)| s), path, out);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            if schema.list_type() == Some(&ListType::Atomic) {
                out.push(path.clone());
            }
            for (i, v) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                atomics(v, schema.items(), path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Applies the JSON patch `ops` (a list of JSONPatch objects) to `object`.
pub fn json_patch(object: &mut Value, ops: &Value) -> Result<(), String> {
    let Value::Array(items) = ops else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    };
    let mut operations = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(op) = item else {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                kind(item)
            ));
        };
        let mut clean = Map::new();
        for key in ["op", "path", "from", "value"] {
            if let Some(v) = op.get(key) {
                if key == "from" && v.as_str().is_some_and(str::is_empty) {
                    continue;
                }
                clean.insert(key.into(), v.clone());
            }
        }
        operations.push(Value::Object(clean));
    }
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(operations)).map_err(|e| format!("JSON Patch: {e}"))?;
    let mut patched = object.clone();
    match json_patch::patch(&mut patched, &patch) {
        Ok(()) => {
            *object = patched;
            Ok(())
        }
        // A failed test means: leave the object as it is.
        Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => Ok(()),
        Err(e) => Err(format!("JSON Patch: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Schema<'static> {
        kubeshard_core::schema::builtin()
            .kind("apps", "v1", "Deployment")
            .unwrap()
    }

    #[test]
    fn apply_configurations_merge_and_leave_atomics_alone() {
        let mut d = json!({"metadata": {"name": "d", "labels": {"a": "1"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "app", "image": "x"}, {"name": "side", "image": "y"}]}}}});
        let patch = json!({"metadata": {"labels": {"b": "2"}}, "spec": {"template": {"spec": {
            "containers": [{"name": "side", "image": "z"}]}}}});
        apply_configuration(&mut d, &patch, Some(deployment())).unwrap();
        assert_eq!(d["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        let containers = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers.as_array().unwrap().len(), 2);
        assert_eq!(containers[1], json!({"name": "side", "image": "z"}));
        // Container args are an atomic list.
        let atomic = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "args": ["x"]}]}}}});
        let err = apply_configuration(&mut d, &atomic, Some(deployment())).unwrap_err();
        assert!(
            err.ends_with("may not mutate atomic arrays, maps or structs: .spec.template.spec.containers[0].args"),
            "{err}"
        );
        assert!(apply_configuration(&mut d, &json!([1]), None).is_err());
    }

    #[test]
    fn json_patches_apply_and_a_failed_test_changes_nothing() {
        let mut o = json!({"metadata": {"name": "o"}});
        json_patch(
            &mut o,
            &json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}, "from": ""}]),
        )
        .unwrap();
        assert_eq!(o["metadata"]["labels"], json!({"a": "b"}));
        let before = o.clone();
        json_patch(
            &mut o,
            &json!([{"op": "test", "path": "/metadata/name", "value": "other"},
                {"op": "remove", "path": "/metadata/labels"}]),
        )
        .unwrap();
        assert_eq!(o, before);
        let err = json_patch(&mut o, &json!([{"op": "remove", "path": "/spec/x"}])).unwrap_err();
        assert!(err.starts_with("JSON Patch: "), "{err}");
        assert!(json_patch(&mut o, &json!({"op": "add"})).is_err());
    }
}
