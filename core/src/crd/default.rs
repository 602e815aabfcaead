//! Defaulting from the schema, as kube applies it to custom resources on
//! the way in (create, update, patch) and on the way out of storage: an
//! absent property with a `default` gets a copy of it, in objects, list
//! items and map values alike, top-down, so a defaulted object is
//! defaulted inside too. A `null` where the schema does not allow one is
//! dropped, or replaced by the default when there is one.

use super::structural::Structural;
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
            if schema.has_defaults() {
                for (key, prop) in &schema.properties {
                    if let Some(d) = &prop.default {
                        if !map.contains_key(&**key) {
                            map.insert(key.to_string(), d.clone());
                            *changed = true;
                        }
                    }
                }
            }
            // Only nulls and containers need their schema looked up:
            // scalars are left as they are.
            let mut dropped = false;
            for (key, v) in map.iter_mut() {
                if !(v.is_null() || v.is_object() || v.is_array()) {
                    continue;
                }
                let Some(sub) = schema.member(key) else {
                    continue;
                };
                if v.is_null() {
                    if sub.nullable {
                        continue;
                    }
                    *changed = true;
                    match &sub.default {
                        Some(d) => *v = d.clone(),
                        // Dropped below (a retain would visit every key).
                        None => {
                            dropped = true;
                            continue;
                        }
                    }
                }
                walk(v, sub, changed);
            }
            if dropped {
                map.retain(|key, v| {
                    !v.is_null() || schema.member(key).is_none_or(|sub| sub.nullable)
                });
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
                    if v.is_object() || v.is_array() {
                        walk(v, item, changed);
                    }
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
