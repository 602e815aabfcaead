//! Value validation of custom resources against their structural schema,
//! with kube's field errors: the path, the error type and kube-openapi's
//! wording (`spec.replicas in body must be of type integer: "string"`).
//!
//! An update is validated with ratcheting, as kube does since 1.30: a
//! value the update leaves as it was (an object property, a map-list item
//! by its keys) is not checked again, so tightening a schema never locks
//! out objects stored under the old one.

use super::structural::{same_keys, Additional, Structural, Type};
use crate::status::{field_invalid, field_invalid_raw, field_required, StatusCause};
use serde_json::Value;

/// kube's `FieldValueTypeInvalid`: rendered like Invalid, reasoned apart
/// (it blocks the CEL rules).
fn type_invalid(path: &str, value: &str, detail: &str) -> StatusCause {
    StatusCause {
        reason: "FieldValueTypeInvalid".into(),
        ..field_invalid(path, value, detail)
    }
}

/// An error kube does not tie to a field (value validations): field
/// `<nil>`, an empty value.
fn unbound(detail: &str) -> StatusCause {
    field_invalid(NIL, "", detail)
}

/// How kube names the field of an error on no path.
const NIL: &str = "<nil>";

fn too_many(path: &str, count: usize, max: u64) -> StatusCause {
    StatusCause {
        reason: "FieldValueTooMany".into(),
        field: path.to_string(),
        message: format!("Too many: {count}: must have at most {max} items"),
    }
}

fn too_long(path: &str, max: u64) -> StatusCause {
    crate::status::field_too_long(path, max as usize)
}

/// Where a value sits: rendered (`spec.ports[1].name`) only when an
/// error names it, so a valid object formats no paths.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root(s) => f.write_str(s),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// Error types that keep kube from running the CEL rules.
const BLOCKING: [&str; 5] = [
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
];

/// Everything wrong with a custom resource `obj` (an update's `old`
/// state ratchets): schema values, list invariants, then CEL rules.
pub fn custom_resource(schema: &Structural, obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    // The root's apiVersion, kind and metadata are the server's to check.
    for (key, prop) in &schema.properties {
        if matches!(&**key, "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let old_v = old.and_then(|o| o.get(&**key));
        match map.get(&**key) {
            Some(v) => node(prop, v, old_v, &Path::Root(key), &mut out),
            None if schema.checks.required.iter().any(|r| r == key) => {
                out.push(field_required(key, ""))
            }
            None => {}
        }
    }
    for r in &schema.checks.required {
        if !schema.properties.contains_key(r) && !map.contains_key(&**r) {
            out.push(field_required(r, ""));
        }
    }
    if schema.has_rules() {
        if out.iter().any(|c| BLOCKING.contains(&c.reason.as_str())) {
            out.push(field_invalid_raw(
                NIL,
                "null",
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            super::cel::validate(schema, obj, old, &mut out);
        }
    }
    out
}

/// Checks one value (not a resource root) against its schema: used for
/// defaults in CRD validation.
pub fn value(schema: &Structural, v: &Value, path: &str) -> Vec<StatusCause> {
    let mut out = Vec::new();
    node(schema, v, None, &Path::Root(path), &mut out);
    out
}

fn node(
    s: &Structural,
    v: &Value,
    old: Option<&Value>,
    path: &Path<'_>,
    out: &mut Vec<StatusCause>,
) {
    if old == Some(v) {
        return;
    }
    if v.is_null() {
        if !s.nullable && s.ty.is_some_and(|t| t != Type::Any) {
            let t = s.ty.map_or("", Type::name);
            out.push(type_invalid(
                &path.to_string(),
                "null",
                &format!("{path} in body must be of type {t}: \"null\""),
            ));
        }
        return;
    }
    if s.int_or_string {
        if !(v.is_string() || is_integer(v)) {
            let actual = type_name(v);
            out.push(type_invalid(
                &path.to_string(),
                actual,
                &format!("{path} in body must be of type integer,string: {actual:?}"),
            ));
            return;
        }
    } else if let Some(t) = s.ty.filter(|t| *t != Type::Any) {
        let fits = match t {
            Type::Object => v.is_object(),
            Type::Array => v.is_array(),
            Type::String => v.is_string(),
            Type::Integer => is_integer(v),
            Type::Number => v.is_number(),
            Type::Boolean => v.is_boolean(),
            Type::Any => true,
        };
        if !fits {
            let actual = type_name(v);
            out.push(type_invalid(
                &path.to_string(),
                actual,
                &format!("{path} in body must be of type {}: {actual:?}", t.name()),
            ));
            return;
        }
    }
    checks(s, v, path, out);
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                let sub = match s.properties.get(key.as_str()) {
                    Some(p) => p,
                    None => match &s.additional {
                        Additional::Schema(a) => a,
                        Additional::Denied if !s.preserve_unknown => {
                            out.push(field_invalid(
                                &path.to_string(),
                                key,
                                &format!("{path}.{key} in body is a forbidden property"),
                            ));
                            continue;
                        }
                        _ => continue,
                    },
                };
                if s.embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let old_child = old.and_then(|o| o.get(key));
                node(sub, child, old_child, &Path::Key(path, key), out);
            }
            if s.embedded {
                embedded(map, path, out);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &s.items {
                for (i, child) in items.iter().enumerate() {
                    let old_child = s.correlated(old, child);
                    node(item, child, old_child, &Path::Index(path, i), out);
                }
            }
            list_invariants(s, items, path, out);
        }
        _ => {}
    }
}

/// The value validations of one node (kube-openapi's wording).
fn checks(s: &Structural, v: &Value, path: &Path<'_>, out: &mut Vec<StatusCause>) {
    let c = &s.checks;
    if !c.enumeration.is_empty() && !c.enumeration.contains(v) {
        let allowed: Vec<String> = c
            .enumeration
            .iter()
            .map(|e| match e {
                Value::String(s) => crate::status::go_quote(s),
                other => crate::status::go_quote(&other.to_string()),
            })
            .collect();
        out.push(StatusCause {
            reason: "FieldValueNotSupported".into(),
            field: path.to_string(),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                super::definition::render(v),
                allowed.join(", ")
            ),
        });
    }
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(max) = c.maximum {
                if (c.exclusive_maximum && x >= max) || x > max {
                    let how = if c.exclusive_maximum {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    out.push(field_invalid_raw(
                        &path.to_string(),
                        &n.to_string(),
                        &format!("{path} in body should be {how} {}", num(max)),
                    ));
                }
            }
            if let Some(min) = c.minimum {
                if (c.exclusive_minimum && x <= min) || x < min {
                    let how = if c.exclusive_minimum {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    out.push(field_invalid_raw(
                        &path.to_string(),
                        &n.to_string(),
                        &format!("{path} in body should be {how} {}", num(min)),
                    ));
                }
            }
            if let Some(m) = c.multiple_of.filter(|m| *m > 0.0) {
                let q = x / m;
                if (q - q.round()).abs() > 1e-9 {
                    out.push(field_invalid_raw(
                        &path.to_string(),
                        &n.to_string(),
                        &format!("{path} in body should be a multiple of {}", num(m)),
                    ));
                }
            }
        }
        Value::String(text) => {
            // Counted only when a length is bounded.
            let len = match (c.max_length, c.min_length) {
                (None, None) => 0,
                _ => text.chars().count() as u64,
            };
            // kube stops at the first failing string check.
            if c.max_length.is_some_and(|max| len > max) {
                out.push(too_long(&path.to_string(), c.max_length.unwrap_or(0)));
            } else if let Some(min) = c.min_length.filter(|min| len < *min) {
                out.push(field_invalid(
                    &path.to_string(),
                    text,
                    &format!("{path} in body should be at least {min} chars long"),
                ));
            } else if let Some(p) = c
                .pattern
                .as_ref()
                .filter(|p| !p.regex.as_ref().is_some_and(|r| r.is_match(text)))
            {
                out.push(field_invalid(
                    &path.to_string(),
                    text,
                    &format!("{path} in body should match '{}'", p.source),
                ));
            }
            if let Some(f) = s.format.as_deref() {
                if !super::formats::valid(f, text) {
                    out.push(type_invalid(
                        &path.to_string(),
                        text,
                        &format!(
                            "{path} in body must be of type {f}: {}",
                            crate::status::go_quote(text)
                        ),
                    ));
                }
            }
        }
        Value::Array(items) => {
            if let Some(max) = c.max_items {
                if items.len() as u64 > max {
                    out.push(too_many(&path.to_string(), items.len(), max));
                }
            }
            if let Some(min) = c.min_items {
                if (items.len() as u64) < min {
                    out.push(field_invalid_raw(
                        &path.to_string(),
                        &v.to_string(),
                        &format!("{path} in body should have at least {min} items"),
                    ));
                }
            }
        }
        Value::Object(map) => {
            if let Some(max) = c.max_properties {
                if map.len() as u64 > max {
                    out.push(too_many(&path.to_string(), map.len(), max));
                }
            }
            if let Some(min) = c.min_properties {
                if (map.len() as u64) < min {
                    out.push(field_invalid_raw(
                        &path.to_string(),
                        &v.to_string(),
                        &format!("{path} in body should have at least {min} properties"),
                    ));
                }
            }
            for r in &c.required {
                if !map.contains_key(&**r) {
                    out.push(field_required(&format!("{path}.{r}"), ""));
                }
            }
        }
        _ => {}
    }
    let passes = |sub: &Structural| {
        let mut errs = Vec::new();
        checks(sub, v, path, &mut errs);
        nested(sub, v, path, &mut errs);
        errs.is_empty()
    };
    if !c.all_of.is_empty() && !c.all_of.iter().all(passes) {
        for sub in &c.all_of {
            checks(sub, v, path, out);
            nested(sub, v, path, out);
        }
        out.push(unbound(&format!(
            "{:?} must validate all the schemas (allOf)",
            path.to_string()
        )));
    }
    if !c.any_of.is_empty() && !c.any_of.iter().any(passes) {
        out.push(unbound(&format!(
            "{:?} must validate at least one schema (anyOf)",
            path.to_string()
        )));
    }
    if !c.one_of.is_empty() {
        let n = c.one_of.iter().filter(|s| passes(s)).count();
        if n != 1 {
            let found = if n == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {n} valid alternatives")
            };
            out.push(unbound(&format!(
                "{:?} must validate one and only one schema (oneOf). {found}",
                path.to_string()
            )));
        }
    }
    if let Some(not) = &c.not {
        if passes(not) {
            out.push(unbound(&format!(
                "{:?} must not validate the schema (not)",
                path.to_string()
            )));
        }
    }
}

/// A value validation's own properties and items (junctors may describe
/// children too).
fn nested(s: &Structural, v: &Value, path: &Path<'_>, out: &mut Vec<StatusCause>) {
    match v {
        Value::Object(map) => {
            for (k, sub) in &s.properties {
                if let Some(child) = map.get(&**k) {
                    let p = Path::Key(path, k);
                    checks(sub, child, &p, out);
                    nested(sub, child, &p, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &s.items {
                for (i, child) in items.iter().enumerate() {
                    let p = Path::Index(path, i);
                    checks(item, child, &p, out);
                    nested(item, child, &p, out);
                }
            }
        }
        _ => {}
    }
}

/// Set lists hold no value twice; map lists no two items with the same
/// keys.
fn list_invariants(s: &Structural, items: &[Value], path: &Path<'_>, out: &mut Vec<StatusCause>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for (i, v) in items.iter().enumerate() {
                if items[..i].contains(v) {
                    out.push(crate::status::StatusCause {
                        reason: "FieldValueDuplicate".into(),
                        field: format!("{path}[{i}]"),
                        message: format!("Duplicate value: {}", super::definition::render(v)),
                    });
                }
            }
        }
        Some("map") => {
            let keys = &s.list_map_keys;
            for (i, v) in items.iter().enumerate() {
                if items[..i].iter().any(|o| same_keys(o, v, keys)) {
                    let key: serde_json::Map<String, Value> = keys
                        .iter()
                        .filter_map(|k| v.get(&**k).map(|x| (k.to_string(), x.clone())))
                        .collect();
                    out.push(crate::status::StatusCause {
                        reason: "FieldValueDuplicate".into(),
                        field: format!("{path}[{i}]"),
                        message: format!("Duplicate value: {}", Value::Object(key)),
                    });
                }
            }
        }
        _ => {}
    }
}

/// An embedded resource names its apiVersion and kind, and its metadata
/// follows the usual rules.
fn embedded(map: &serde_json::Map<String, Value>, path: &Path<'_>, out: &mut Vec<StatusCause>) {
    for key in ["apiVersion", "kind"] {
        match map.get(key) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => out.push(field_required(
                &format!("{path}.{key}"),
                "must not be empty",
            )),
        }
    }
    if let Some(md) = map.get("metadata") {
        if let Some(name) = md.get("name").and_then(Value::as_str) {
            for msg in crate::validation::is_dns1123_subdomain(name) {
                out.push(field_invalid(&format!("{path}.metadata.name"), name, &msg));
            }
        }
    }
}

/// Prunes `v` against `s` (fields the schema does not know); true if
/// something was dropped. Used for defaults, which must come pruned.
pub fn prune(v: &mut Value, s: &Structural) -> bool {
    match v {
        Value::Object(map) => {
            if s.preserve_unknown && s.properties.is_empty() {
                return false;
            }
            let mut dropped = false;
            map.retain(|k, _| {
                let keep = s.properties.contains_key(k.as_str())
                    || !matches!(s.additional, Additional::Unset | Additional::Denied)
                    || s.preserve_unknown
                    || (s.embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
                dropped |= !keep;
                keep
            });
            for (k, child) in map.iter_mut() {
                if let Some(sub) = s.member(k) {
                    dropped |= prune(child, sub);
                }
            }
            dropped
        }
        Value::Array(items) => match &s.items {
            Some(item) => items
                .iter_mut()
                .fold(false, |d, child| prune(child, item) | d),
            None => false,
        },
        _ => false,
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The JSON type of a value as kube-openapi names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A bound as Go prints a float64 (`10`, `2.5`).
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}
