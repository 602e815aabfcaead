//! Defaulting from the schema, as kube applies it to custom resources on
//! the way in (create, update, patch) and on the way out of storage: an
//! absent property with a `default` gets a copy of it, in objects, list
//! items and map values alike, top-down, so a defaulted object is
//! defaulted inside too. A `null` where the schema does not allow one is
//! dropped, or replaced by the default when there is one.

use super::structural::{Additional, Structural};
use serde_json::Value;

/// Applies `schema`'s defaults to `value`. Returns whether anything changed.
pub fn apply(value: &mut Value, schema: &Structural) -> bool {
    let mut changed = false;
    walk(value, schema, &mut changed);
    changed
}

fn walk(value: &mut Value, schema: &Structural, changed: &mut bool) {
    match value {
        Value::Object(map) => {
            for (key, prop) in &schema.properties {
                match map.get_mut(&**key) {
                    Some(Value::Null) if !prop.nullable => {
                        match &prop.default {
                            Some(d) => map.insert(key.to_string(), d.clone()),
                            None => map.remove(&**key),
                        };
                        *changed = true;
                    }
                    None => {
                        if let Some(d) = &prop.default {
                            map.insert(key.to_string(), d.clone());
                            *changed = true;
                        }
                    }
                    Some(_) => {}
                }
            }
            for (key, v) in map.iter_mut() {
                let sub = match schema.properties.get(key.as_str()) {
                    Some(p) => p,
                    None => match &schema.additional {
                        Additional::Schema(s) => s,
                        _ => continue,
                    },
                };
                walk(v, sub, changed);
            }
            if let Additional::Schema(values) = &schema.additional {
                if !values.nullable {
                    let extra =
                        |key: &str, v: &Value| v.is_null() && !schema.properties.contains_key(key);
                    match &values.default {
                        Some(d) => {
                            for (key, v) in map.iter_mut() {
                                if extra(key, v) {
                                    *v = d.clone();
                                    *changed = true;
                                }
                            }
                        }
                        None => {
                            let before = map.len();
                            map.retain(|key, v| !extra(key, v));
                            *changed |= map.len() != before;
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &schema.items {
                for v in items.iter_mut() {
                    if v.is_null() && !item.nullable {
                        if let Some(d) = &item.default {
                            *v = d.clone();
                            *changed = true;
                        }
                    }
                    walk(v, item, changed);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Structural {
        Structural::parse(&v)
    }

    #[test]
    fn fills_absent_fields_at_every_depth() {
        let s = schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "default": {}, "properties": {
                "replicas": {"type": "integer", "default": 1},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"}}}},
                "labels": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"on": {"type": "boolean", "default": true}}}}}}}}));
        let mut v = json!({});
        assert!(apply(&mut v, &s));
        assert_eq!(v, json!({"spec": {"replicas": 1}}));
        let mut v = json!({"spec": {"replicas": 3, "ports": [{}, {"protocol": "UDP"}],
            "labels": {"a": {}}}});
        apply(&mut v, &s);
        assert_eq!(
            v,
            json!({"spec": {"replicas": 3, "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}],
                "labels": {"a": {"on": true}}}})
        );
        assert!(!apply(&mut v, &s), "a defaulted object is a fixed point");
    }

    #[test]
    fn nulls_are_dropped_or_defaulted_unless_nullable() {
        let s = schema(json!({"type": "object", "properties": {
            "a": {"type": "string", "default": "x"},
            "b": {"type": "string"},
            "c": {"type": "string", "nullable": true, "default": "y"}}}));
        let mut v = json!({"a": null, "b": null, "c": null});
        apply(&mut v, &s);
        assert_eq!(v, json!({"a": "x", "c": null}));
    }
}
