//! CustomResourceDefinitions over protobuf. A CRD's schema
//! (JSONSchemaProps) has a JSON form no plain field mapping gives: Go's
//! types marshal `$ref`/`$schema` and the `x-kubernetes-*` keywords under
//! names their protobuf fields do not carry, the `items`,
//! `additionalProperties`/`additionalItems` and `dependencies` unions as
//! whichever side is set, and `default`/`example`/`enum` (raw JSON in
//! protobuf) as the JSON they hold. This puts a decoded CRD's schemas in
//! the form a JSON client sends; zero values are dropped where the CRD is
//! defaulted, for both encodings.

use base64::Engine;
use serde_json::Value;

/// Protobuf field names of JSONSchemaProps whose JSON names differ.
const RENAMED: &[(&str, &str)] = &[
    ("schema", "$schema"),
    ("ref", "$ref"),
    (
        "xKubernetesPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    (
        "xKubernetesEmbeddedResource",
        "x-kubernetes-embedded-resource",
    ),
    ("xKubernetesIntOrString", "x-kubernetes-int-or-string"),
    ("xKubernetesListMapKeys", "x-kubernetes-list-map-keys"),
    ("xKubernetesListType", "x-kubernetes-list-type"),
    ("xKubernetesMapType", "x-kubernetes-map-type"),
    ("xKubernetesValidations", "x-kubernetes-validations"),
];

/// Rewrites every schema of a decoded CRD into its JSON form.
pub(super) fn crd_schemas_to_json(crd: &mut Value) {
    for_each_version_schema(crd, schema_to_json);
}

/// Applies `f` (at depth 0) to the schema of every version of a CRD.
fn for_each_version_schema(crd: &mut Value, f: fn(&mut Value, usize)) {
    let Some(versions) = crd
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for v in versions {
        if let Some(schema) = v.pointer_mut("/schema/openAPIV3Schema") {
            f(schema, 0);
        }
    }
}

/// Deeper schemas than this are left as decoded (the decoder already
/// bounds nesting; this only keeps the walk's stack bounded too).
const MAX_DEPTH: usize = 200;

fn schema_to_json(schema: &mut Value, depth: usize) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    rename(node, true);
    map_literals(node, raw_json);
    if let Some(items) = node.get_mut("items") {
        *items = match items.as_object_mut() {
            Some(u) => match (u.remove("schema"), u.remove("jSonSchemas")) {
                (_, Some(Value::Array(list))) if !list.is_empty() => Value::Array(list),
                (Some(one), _) => one,
                _ => Value::Null,
            },
            None => Value::Null,
        };
    }
    for k in ["additionalProperties", "additionalItems"] {
        if let Some(v) = node.get_mut(k) {
            *v = schema_or_bool(v);
        }
    }
    if let Some(Value::Object(deps)) = node.get_mut("dependencies") {
        for v in deps.values_mut() {
            *v = match v.as_object_mut() {
                Some(u) => match (u.remove("schema"), u.remove("property")) {
                    (Some(s), _) => s,
                    (None, Some(p)) => p,
                    _ => Value::Array(Vec::new()),
                },
                None => Value::Null,
            };
        }
    }
    node.retain(|_, v| !v.is_null());
    crate::schema::for_each_child_schema(node, |s| schema_to_json(s, depth + 1));
}

/// Rewrites every schema of a CRD from its JSON form into the field
/// layout of its protobuf messages: the inverse of
/// [`crd_schemas_to_json`], for encoding a CRD.
pub(super) fn crd_schemas_to_proto(crd: &mut Value) {
    for_each_version_schema(crd, schema_to_proto);
}

fn schema_to_proto(schema: &mut Value, depth: usize) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    // Children are still in JSON form, which is what the walk reads.
    crate::schema::for_each_child_schema(node, |s| schema_to_proto(s, depth + 1));
    rename(node, false);
    map_literals(node, json_message);
    if let Some(items) = node.get_mut("items") {
        *items = match items.take() {
            Value::Array(list) => serde_json::json!({"jSonSchemas": list}),
            one => serde_json::json!({"schema": one}),
        };
    }
    for k in ["additionalProperties", "additionalItems"] {
        if let Some(v) = node.get_mut(k) {
            *v = match v.take() {
                Value::Bool(b) => serde_json::json!({"allows": b}),
                schema => serde_json::json!({"allows": true, "schema": schema}),
            };
        }
    }
    if let Some(Value::Object(deps)) = node.get_mut("dependencies") {
        for v in deps.values_mut() {
            *v = match v.take() {
                Value::Array(props) => serde_json::json!({"property": props}),
                schema => serde_json::json!({"schema": schema}),
            };
        }
    }
}

/// Renames the keywords whose protobuf and JSON names differ: to the JSON
/// names when `to_json`, else back.
fn rename(node: &mut serde_json::Map<String, Value>, to_json: bool) {
    for (proto, json) in RENAMED {
        let (from, to) = if to_json {
            (proto, json)
        } else {
            (json, proto)
        };
        if let Some(v) = node.remove(*from) {
            node.insert((*to).into(), v);
        }
    }
}

/// Rewrites the literal values a schema holds (`default`, `example` and
/// each of `enum`) with `f`.
fn map_literals(node: &mut serde_json::Map<String, Value>, f: fn(&Value) -> Value) {
    for k in ["default", "example"] {
        if let Some(v) = node.get_mut(k) {
            *v = f(v);
        }
    }
    if let Some(Value::Array(values)) = node.get_mut("enum") {
        for v in values {
            *v = f(v);
        }
    }
}

/// A JSON value as the JSON message `{"raw": base64}`.
fn json_message(v: &Value) -> Value {
    let raw = serde_json::to_vec(v).unwrap_or_default();
    serde_json::json!({"raw": base64::engine::general_purpose::STANDARD.encode(raw)})
}

/// `{"raw": base64}` (the JSON message) as the JSON it holds.
fn raw_json(v: &Value) -> Value {
    v.get("raw")
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

/// `{"allows": bool, "schema": {...}}`: the schema when there is one.
fn schema_or_bool(v: &mut Value) -> Value {
    let Some(u) = v.as_object_mut() else {
        return Value::Null;
    };
    match u.remove("schema") {
        Some(s) => s,
        None => Value::Bool(u.get("allows").and_then(Value::as_bool).unwrap_or(false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Value {
        json!({"raw": base64::engine::general_purpose::STANDARD.encode(v.to_string())})
    }

    #[test]
    fn a_protobuf_schema_reads_as_its_json_form() {
        let mut crd = json!({"spec": {"versions": [{"schema": {"openAPIV3Schema": {
            "type": "object", "id": "", "xKubernetesPreserveUnknownFields": false,
            "properties": {"spec": {"type": "object",
                "additionalProperties": {"allows": true},
                "properties": {
                    "ports": {"type": "array", "xKubernetesListType": "map",
                        "xKubernetesListMapKeys": ["name"],
                        "items": {"schema": {"type": "object", "ref": "x",
                            "default": raw(json!({"name": "a"}))}}},
                    "mode": {"type": "string", "enum": [raw(json!("a")), raw(json!("b"))]},
                    "extra": {"type": "object",
                        "additionalProperties": {"allows": false, "schema": {"type": "string"}}}}}}}}}]}});
        crd_schemas_to_json(&mut crd);
        let expected = json!({"type": "object", "id": "",
            "x-kubernetes-preserve-unknown-fields": false,
            "properties": {"spec": {"type": "object", "additionalProperties": true,
                "properties": {
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "$ref": "x", "default": {"name": "a"}}},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "extra": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
        assert_eq!(
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
            expected
        );
        // And back: the JSON form maps onto the protobuf layout.
        let mut again = crd.clone();
        crd_schemas_to_proto(&mut again);
        crd_schemas_to_json(&mut again);
        assert_eq!(again, crd);
    }
}
