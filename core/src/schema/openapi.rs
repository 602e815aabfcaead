//! The registry's definitions rendered as OpenAPI: v3 component schemas
//! (per group version documents) and v2 definitions (the one swagger
//! document), each with the `x-kubernetes-group-version-kind` of the kinds
//! it serves, list kinds included. Each kind's definition comes from its
//! own registry (a runtime kind's schema), what it references from there
//! or else from the built-in one (metadata, envelopes).

use super::{SchemaRegistry, REF_PREFIX};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One served kind, as the catalog describes it.
pub struct ServedKind<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub list_kind: &'a str,
    /// Where the kind's schema lives.
    pub registry: &'a SchemaRegistry,
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// The name kube gives a kind's definition; kinds the registry does not
/// know get one in the same style.
pub fn definition_name(k: &ServedKind<'_>) -> String {
    k.registry
        .kind_definition(k.group, k.version, k.kind)
        .map(str::to_string)
        .unwrap_or_else(|| {
            let group = if k.group.is_empty() { "core" } else { k.group };
            format!("io.k8s.api.{group}.{}.{}", k.version, k.kind)
        })
}

/// The list kind's definition name (`io.k8s.api.core.v1.PodList`).
pub fn list_definition_name(k: &ServedKind<'_>) -> String {
    let item = definition_name(k);
    match item.rsplit_once('.') {
        Some((prefix, _)) => format!("{prefix}.{}", k.list_kind),
        None => k.list_kind.to_string(),
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// Component schemas (v3) for `kinds`: their definitions, everything those
/// reference, list kinds and the envelopes every group version serves
/// (from `base`, the built-in registry).
pub fn v3_schemas(base: &SchemaRegistry, kinds: &[ServedKind<'_>]) -> Map<String, Value> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    // (definition, the registry its references resolve in first)
    let mut roots: Vec<(String, &SchemaRegistry)> = [
        "Status",
        "DeleteOptions",
        "ListMeta",
        "ObjectMeta",
        "Patch",
        "WatchEvent",
    ]
    .iter()
    .map(|n| (format!("{META}.{n}"), base))
    .collect();
    for k in kinds {
        let name = definition_name(k);
        let mut def = k
            .registry
            .definitions()
            .get(&name)
            .cloned()
            .unwrap_or_else(|| {
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                   "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                  "metadata": {"$ref": format!("{REF_PREFIX}{META}.ObjectMeta")}}})
            });
        add_gvk(&mut def, gvk(k.group, k.version, k.kind));
        roots.push((name.clone(), k.registry));
        out.insert(name.clone(), def);
        out.insert(list_definition_name(k), list_schema(&name, k));
    }
    out.insert(format!("{META}.WatchEvent"), watch_event());
    // Everything the roots reference, transitively.
    let mut pending = roots;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    while let Some((name, reg)) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let (def, reg) = match out.get(&name) {
            Some(d) => (d.clone(), reg),
            None => match reg.definitions().get(&name) {
                Some(d) => (d.clone(), reg),
                None => match base.definitions().get(&name) {
                    Some(d) => (d.clone(), base),
                    None => continue,
                },
            },
        };
        out.entry(name).or_insert_with(|| def.clone());
        let mut refs = Vec::new();
        collect_refs(&def, &mut refs);
        pending.extend(refs.into_iter().map(|r| (r, reg)));
    }
    for def in out.values_mut() {
        int_or_string_as_kube_renders_it(def, false);
    }
    out.into_iter().collect()
}

/// The same schemas as swagger 2.0 definitions: `#/definitions/` refs and
/// `$ref` with siblings instead of the v3 `allOf` wrapper.
/// A runtime kind's definition is cut to what kubectl's swagger 2.0
/// reader copes with, as kube publishes a CRD's: a kind that keeps
/// unknown fields at its root is a bare object, and nodes that are
/// nullable or keep unknown fields lose their structure.
pub fn v2_definitions(base: &SchemaRegistry, kinds: &[ServedKind<'_>]) -> Map<String, Value> {
    let runtime: BTreeSet<String> = kinds
        .iter()
        .filter(|k| !std::ptr::eq(k.registry, base))
        .map(definition_name)
        .collect();
    v3_schemas(base, kinds)
        .into_iter()
        .map(|(k, mut v)| {
            if runtime.contains(&k) {
                runtime_kind_v2(&mut v);
            }
            to_v2(&mut v);
            int_or_string_as_kube_renders_it(&mut v, true);
            (k, v)
        })
        .collect()
}

fn runtime_kind_v2(def: &mut Value) {
    if def.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        let gvk = def.get("x-kubernetes-group-version-kind").cloned();
        *def = json!({"type": "object"});
        if let Some(gvk) = gvk {
            def["x-kubernetes-group-version-kind"] = gvk;
        }
        return;
    }
    structural_v2(def);
}

/// kube's swagger 2.0 form of a structural schema node: no `nullable`
/// (a nullable node loses its type and structure, and is no longer
/// required), no structure under a node that keeps unknown fields, and
/// no `array` type without items.
fn structural_v2(node: &mut Value) {
    let Some(m) = node.as_object_mut() else {
        return;
    };
    let is = |m: &Map<String, Value>, key: &str| m.get(key) == Some(&Value::Bool(true));
    let nullable_props: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(_, v)| v.get("nullable") == Some(&Value::Bool(true)))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| {
            !r.as_str()
                .is_some_and(|r| nullable_props.iter().any(|n| n == r))
        });
        if required.is_empty() {
            m.remove("required");
        }
    }
    if is(m, "nullable") {
        for key in ["type", "items", "properties"] {
            m.remove(key);
        }
    }
    m.remove("nullable");
    if is(m, "x-kubernetes-preserve-unknown-fields") {
        m.remove("items");
        m.remove("properties");
    }
    if m.get("type").and_then(Value::as_str) == Some("array") && !m.contains_key("items") {
        m.remove("type");
    }
    super::for_each_child_schema(m, structural_v2);
}

fn add_gvk(def: &mut Value, entry: Value) {
    if let Some(m) = def.as_object_mut() {
        let list = m
            .entry("x-kubernetes-group-version-kind")
            .or_insert_with(|| json!([]));
        if let Some(a) = list.as_array_mut() {
            if !a.contains(&entry) {
                a.push(entry);
            }
        }
    }
}

fn list_schema(item: &str, k: &ServedKind<'_>) -> Value {
    json!({
        "description": format!("{} is a list of {} objects.", k.list_kind, k.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": "The versioned schema of this representation of an object."},
            "kind": {"type": "string", "description": "The REST resource this object represents."},
            "items": {"type": "array", "description": format!("The {} objects.", k.kind),
                      "items": {"$ref": format!("{REF_PREFIX}{item}")}},
            "metadata": {"allOf": [{"$ref": format!("{REF_PREFIX}{META}.ListMeta")}],
                         "description": "Standard list metadata."}
        },
        "x-kubernetes-group-version-kind": [gvk(k.group, k.version, k.list_kind)]
    })
}

fn watch_event() -> Value {
    json!({
        "description": "An event in a watch stream.",
        "type": "object",
        "required": ["type", "object"],
        "properties": {
            "object": {"type": "object", "description": "The object: the new state for ADDED and MODIFIED, the last state for DELETED, a Status for ERROR."},
            "type": {"type": "string", "description": "ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."}
        }
    })
}

/// The definition names `v` refers to (`$ref`s at any depth).
pub(crate) fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                if let Some(name) = r.strip_prefix(REF_PREFIX) {
                    out.push(name.to_string());
                }
            }
            m.values().for_each(|c| collect_refs(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

/// IntOrString and Quantity as kube renders them: a string with a format
/// in swagger 2.0, a `oneOf` of both types in OpenAPI v3.
fn int_or_string_as_kube_renders_it(def: &mut Value, v2: bool) {
    if let Some(m) = def.as_object_mut() {
        if m.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            && !m.contains_key("type")
        {
            if v2 {
                m.insert("type".into(), json!("string"));
                m.insert("format".into(), json!("int-or-string"));
            } else {
                m.insert(
                    "oneOf".into(),
                    json!([{"type": "integer"}, {"type": "string"}]),
                );
            }
        }
    }
}

fn to_v2(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(all)) = m.get("allOf") {
                if all.len() == 1 && all[0].get("$ref").is_some() {
                    let target = all[0]["$ref"].clone();
                    m.remove("allOf");
                    m.insert("$ref".into(), target);
                }
            }
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(name) = r.strip_prefix(REF_PREFIX) {
                    *r = format!("#/definitions/{name}");
                }
            }
            m.values_mut().for_each(to_v2);
        }
        Value::Array(a) => a.iter_mut().for_each(to_v2),
        _ => {}
    }
}
