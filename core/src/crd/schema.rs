//! A CRD's schemas in the form the schema registry compiles (the one
//! strategic merge, server-side apply, pruning, field validation and
//! OpenAPI read): each served version's `openAPIV3Schema` as a named
//! definition, completed the way kube completes a structural schema —
//! `apiVersion`, `kind` and `metadata` at the root and in embedded
//! resources, and an object that lists no properties and keeps no
//! unknown fields holding none — plus the built-in definitions
//! `metadata` refers to.

use crate::schema::{SchemaRegistry, REF_PREFIX};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// kube's definition name for a custom kind: the group reversed, then
/// version and kind (`com.example.stable.v1.CronTab`).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// A registry holding `versions` (version, kind, openAPIV3Schema) of one
/// group's kind.
pub fn registry(group: &str, versions: &[(&str, &str, &Value)]) -> SchemaRegistry {
    let mut defs = BTreeMap::new();
    let mut kinds = HashMap::new();
    for (version, kind, schema) in versions {
        let name = definition_name(group, version, kind);
        let mut def = complete((*schema).clone());
        add_envelope(&mut def);
        defs.insert(name.clone(), def);
        kinds.insert(
            (group.to_string(), version.to_string(), kind.to_string()),
            name,
        );
    }
    let borrowed = add_referenced_builtins(&mut defs);
    // The built-in definitions' text is the built-in registry's to keep.
    SchemaRegistry::new(defs, kinds).drop_sources(&borrowed)
}

/// The root of a kind (and every embedded resource) carries apiVersion,
/// kind and metadata whatever the schema says of them, documented as
/// every built-in kind documents them (`kubectl explain` shows it).
fn add_envelope(def: &mut Value) {
    let Some(obj) = def.as_object_mut() else {
        *def = json!({"type": "object"});
        return add_envelope(def);
    };
    obj.insert("type".into(), json!("object"));
    let props = obj
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("properties was made an object");
    for (name, field) in envelope() {
        props.insert(name.to_string(), field.clone());
    }
}

/// apiVersion, kind and metadata as a built-in kind's definition has
/// them (descriptions included), metadata without the defaults and list
/// extensions a built-in kind's metadata carries.
fn envelope() -> &'static [(&'static str, Value)] {
    static ENVELOPE: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    ENVELOPE.get_or_init(|| {
        let builtin = crate::schema::builtin().definitions();
        let props = builtin
            .get("io.k8s.api.core.v1.ConfigMap")
            .and_then(|d| d.get("properties"));
        let description = |name: &str| {
            props
                .and_then(|p| p.pointer(&format!("/{name}/description")))
                .cloned()
                .unwrap_or_else(|| json!(""))
        };
        let meta_ref = json!([{"$ref": format!("{REF_PREFIX}{OBJECT_META}")}]);
        vec![
            (
                "apiVersion",
                json!({"type": "string", "description": description("apiVersion")}),
            ),
            (
                "kind",
                json!({"type": "string", "description": description("kind")}),
            ),
            (
                "metadata",
                json!({"description": description("metadata"), "allOf": meta_ref}),
            ),
        ]
    })
}

/// Completes a schema node (and everything under it) for compiling.
fn complete(mut node: Value) -> Value {
    let Some(obj) = node.as_object_mut() else {
        return node;
    };
    // Value validations and CEL rules are not shape: the registry never
    // reads them, and junctors would be taken for wrappers.
    for key in ["allOf", "anyOf", "oneOf", "not"] {
        obj.remove(key);
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for v in props.values_mut() {
            *v = complete(std::mem::take(v));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(v @ Value::Object(_)) = obj.get_mut(key) {
            *v = complete(std::mem::take(v));
        }
    }
    let preserve = flag(obj, "x-kubernetes-preserve-unknown-fields");
    if flag(obj, "x-kubernetes-embedded-resource") {
        add_envelope(&mut node);
        return node;
    }
    let obj = node.as_object_mut().expect("checked above");
    let is_object = obj.get("type").and_then(Value::as_str) == Some("object");
    if is_object
        && !preserve
        && !obj.contains_key("properties")
        && !obj.contains_key("additionalProperties")
    {
        obj.insert("properties".into(), json!({}));
    }
    node
}

fn flag(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Copies the built-in definitions the completed schemas refer to
/// (ObjectMeta and what it refers to), so the registry compiles alone.
fn add_referenced_builtins(defs: &mut BTreeMap<String, Value>) -> Vec<String> {
    let builtin = crate::schema::builtin().definitions();
    let mut todo = vec![OBJECT_META.to_string()];
    let mut added = Vec::new();
    while let Some(name) = todo.pop() {
        if defs.contains_key(&name) {
            continue;
        }
        let Some(def) = builtin.get(&name) else {
            continue;
        };
        crate::schema::openapi::collect_refs(def, &mut todo);
        defs.insert(name.clone(), def.clone());
        added.push(name);
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldvalidation;
    use serde_json::json;

    #[test]
    fn pruning_follows_the_completed_schema() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "a": {"type": "string"},
                "empty": {"type": "object"},
                "kept": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}});
        let reg = registry("example.com", &[("v1", "Widget", &schema)]);
        let s = reg.kind("example.com", "v1", "Widget").unwrap();
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "bogus": 1},
            "spec": {"a": "x", "b": 1, "empty": {"gone": 1}, "kept": {"stays": {"x": 1}},
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"any": 1}, "other": 2}},
            "extra": true});
        let issues = fieldvalidation::prune(&mut obj, s);
        assert_eq!(
            obj,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"a": "x", "empty": {}, "kept": {"stays": {"x": 1}},
                    "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"any": 1}}}})
        );
        let mut names: Vec<String> = issues.iter().map(|i| i.to_string()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "unknown field \"extra\"",
                "unknown field \"metadata.bogus\"",
                "unknown field \"spec.b\"",
                "unknown field \"spec.embedded.other\"",
                "unknown field \"spec.empty.gone\""
            ]
        );
        assert_eq!(
            definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
    }

    fn v2_of(schema: &Value) -> Value {
        use crate::schema::openapi::{v2_definitions, ServedKind};
        let reg = registry("example.com", &[("v1", "Widget", schema)]);
        let kind = ServedKind {
            group: "example.com",
            version: "v1",
            kind: "Widget",
            list_kind: "WidgetList",
            registry: &reg,
        };
        let mut defs = v2_definitions(crate::schema::builtin(), &[kind]);
        defs.remove("com.example.v1.Widget").unwrap()
    }

    /// `kubectl explain` prints the envelope's documentation, as for a
    /// built-in kind.
    #[test]
    fn the_envelope_is_documented() {
        let def = v2_of(&json!({"type": "object", "properties": {"spec": {"type": "object"}}}));
        let props = &def["properties"];
        assert!(props["apiVersion"]["description"]
            .as_str()
            .unwrap()
            .starts_with("APIVersion defines the versioned schema"));
        assert!(props["kind"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Kind is a string value"));
        assert!(props["metadata"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Standard object's metadata."));
        assert_eq!(
            props["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }

    /// kube publishes a kind that keeps unknown fields at its root as a
    /// bare object in swagger 2.0, and cuts nullable and unknown-keeping
    /// nodes to what kubectl's swagger reader copes with.
    #[test]
    fn swagger_gets_kubes_structural_v2_form() {
        let open = v2_of(&json!({"type": "object", "description": "d",
            "x-kubernetes-preserve-unknown-fields": true}));
        assert_eq!(
            open,
            json!({"type": "object", "x-kubernetes-group-version-kind": [
                {"group": "example.com", "kind": "Widget", "version": "v1"}]})
        );
        let def = v2_of(&json!({"type": "object", "properties": {"spec": {
            "type": "object", "required": ["a", "n"], "properties": {
                "a": {"type": "string"},
                "n": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
                "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                      "properties": {"x": {"type": "string"}}},
                "l": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                      "items": {"type": "string"}}}}}}));
        let spec = &def["properties"]["spec"];
        assert_eq!(spec["required"], json!(["a"]));
        assert_eq!(spec["properties"]["n"], json!({}));
        assert_eq!(
            spec["properties"]["p"],
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            spec["properties"]["l"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
    }
}
