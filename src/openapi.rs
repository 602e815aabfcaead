//! OpenAPI v3 discovery: the index at /openapi/v3 and one document per
//! group version with every resource path and operation.
//!
//! kubectl reads these to decide whether the server validates fields
//! itself (it looks for the `fieldValidation` parameter on each kind's
//! PATCH operation) and otherwise refuses `create -f` without
//! `--validate=false`. Schemas here carry only the envelope (apiVersion,
//! kind, metadata) and open objects; full kind schemas for `kubectl
//! explain` come with the kubectl surface work.

use kubeshard_core::catalog::{CatalogSnapshot, ResourceInfo};
use serde_json::{json, Map, Value};

/// `api/v1`, `apis/apps/v1`: the keys of the v3 index.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// GET /openapi/v3: where each group version's document lives.
pub fn v3_index(cat: &CatalogSnapshot) -> Vec<u8> {
    let mut paths = Map::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in cat.resources() {
        let key = (r.group.clone(), r.version.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let p = gv_path(&r.group, &r.version);
        let hash = format!(
            "{:016X}",
            xxhash_rust::xxh3::xxh3_64(
                &gv_document_bytes(cat, &r.group, &r.version).unwrap_or_default()
            )
        );
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
    }
    serde_json::to_vec(&json!({"paths": paths})).expect("serializes")
}

/// GET /openapi/v3/{api/v1 | apis/g/v}: None when not served.
pub fn v3_document(cat: &CatalogSnapshot, path: &str) -> Option<Vec<u8>> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["api", v] => gv_document_bytes(cat, "", v),
        ["apis", g, v] => gv_document_bytes(cat, g, v),
        _ => None,
    }
}

fn gv_document_bytes(cat: &CatalogSnapshot, group: &str, version: &str) -> Option<Vec<u8>> {
    let resources = cat.group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for r in resources {
        add_resource(&mut paths, r);
        schemas.insert(schema_name(r), kind_schema(r));
    }
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {"schemas": schemas}
    });
    Some(serde_json::to_vec(&doc).expect("serializes"))
}

fn schema_name(r: &ResourceInfo) -> String {
    let group = if r.group.is_empty() {
        "core".to_string()
    } else {
        r.group.clone()
    };
    format!("io.k8s.api.{group}.{}.{}", r.version, r.kind)
}

fn gvk(r: &ResourceInfo) -> Value {
    json!({"group": r.group, "version": r.version, "kind": r.kind})
}

fn kind_schema(r: &ResourceInfo) -> Value {
    json!({
        "type": "object",
        "description": format!("{} is served by kubeshard.", r.kind),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        },
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-group-version-kind": [gvk(r)]
    })
}

fn query(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        query(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        query(
            "fieldManager",
            "A name associated with the actor or entity that is making these changes.",
        ),
        query(
            "fieldValidation",
            "How the server handles unknown or duplicate fields: Ignore, Warn or Strict.",
        ),
    ]
}

fn operation(r: &ResourceInfo, action: &str, op_id: &str, extra: Vec<Value>, body: bool) -> Value {
    let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(r))});
    let mut op = json!({
        "operationId": op_id,
        "parameters": extra,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(r)
    });
    if body {
        op["requestBody"] = json!({"content": {"*/*": {"schema": reference}}, "required": true});
    }
    op
}

fn add_resource(paths: &mut Map<String, Value>, r: &ResourceInfo) {
    let prefix = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    let scoped = if r.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{prefix}/{}", r.plural)
    };
    let mut scope_params = vec![query(
        "pretty",
        "If 'true', then the output is pretty printed.",
    )];
    if r.namespaced {
        scope_params.push(path_param("namespace"));
    }
    let list_params = [
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "watch",
        "allowWatchBookmarks",
        "sendInitialEvents",
    ]
    .iter()
    .map(|p| query(p, ""))
    .collect();
    let kind = &r.kind;
    let mut collection = json!({"parameters": scope_params.clone()});
    if r.supports("list") {
        collection["get"] = operation(r, "list", &format!("list{kind}"), list_params, false);
    }
    if r.supports("create") {
        collection["post"] = operation(r, "post", &format!("create{kind}"), write_params(), true);
    }
    paths.insert(scoped.clone(), collection);

    let mut item_params = scope_params;
    item_params.push(path_param("name"));
    let mut item = json!({"parameters": item_params});
    item["get"] = operation(r, "get", &format!("read{kind}"), vec![], false);
    if r.supports("update") {
        item["put"] = operation(r, "put", &format!("replace{kind}"), write_params(), true);
    }
    if r.supports("patch") {
        let mut p = write_params();
        p.push(query(
            "force",
            "Force is going to \"force\" Apply requests.",
        ));
        item["patch"] = operation(r, "patch", &format!("patch{kind}"), p, true);
    }
    if r.supports("delete") {
        item["delete"] = operation(
            r,
            "delete",
            &format!("delete{kind}"),
            vec![
                query("dryRun", ""),
                query("gracePeriodSeconds", ""),
                query("propagationPolicy", ""),
            ],
            true,
        );
    }
    paths.insert(format!("{scoped}/{{name}}"), item.clone());
    for sub in &r.subresources {
        let mut s = item.clone();
        if let Some(m) = s.as_object_mut() {
            m.remove("delete");
        }
        paths.insert(format!("{scoped}/{{name}}/{sub}"), s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;

    #[test]
    fn kubectl_finds_field_validation_on_patch() {
        let cat = Catalog::with_builtins().snapshot();
        let index: Value = serde_json::from_slice(&v3_index(&cat)).unwrap();
        let url = index["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="));
        assert!(index["paths"]["apis/apps/v1"].is_object());
        let doc: Value = serde_json::from_slice(&v3_document(&cat, "api/v1").unwrap()).unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "ConfigMap"
        );
        assert!(patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation"));
        assert!(doc["paths"]["/api/v1/namespaces/{name}"]["patch"].is_object());
        assert!(v3_document(&cat, "apis/nope/v1").is_none());
    }
}
