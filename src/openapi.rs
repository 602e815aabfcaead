//! OpenAPI documents: `/openapi/v3` (an index of per group version
//! documents) and `/openapi/v2` (one swagger document), both with every
//! served resource's paths and the real schemas of its kind from the
//! schema registry — what `kubectl explain`, kubectl's client-side
//! strategic merge and its field-validation probe read.
//!
//! Extension servers' documents (fetched by the aggregator) are merged
//! in: their group versions in the v3 index, their paths and definitions
//! in the v2 document (ours win a conflict).
//!
//! Documents are built once per catalog snapshot, published routes and
//! executor, and served as bytes.

use crate::aggregated::Routes;
use kubeshard_core::catalog::{CatalogSnapshot, ResourceInfo};
use kubeshard_core::schema::openapi::{self as render, ServedKind};
use kubeshard_core::schema::{self, REF_PREFIX};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

/// The documents of one catalog snapshot.
pub struct Documents {
    pub v3_index: Vec<u8>,
    /// `api/v1`, `apis/apps/v1` → document bytes.
    pub v3: BTreeMap<String, Vec<u8>>,
    pub v2: Vec<u8>,
    /// The protobuf form of `v2`, rendered on first request.
    v2_pb: std::cell::OnceCell<Vec<u8>>,
}

type Cached = (Arc<CatalogSnapshot>, u64, Rc<Documents>);

thread_local! {
    static CACHE: RefCell<Option<Cached>> = const { RefCell::new(None) };
}

/// The documents for `cat` and `routes`, built on first use per executor.
pub fn documents(cat: &Arc<CatalogSnapshot>, routes: &Routes) -> Rc<Documents> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((snap, generation, docs)) = c.as_ref() {
            if Arc::ptr_eq(snap, cat) && *generation == routes.generation {
                return docs.clone();
            }
        }
        let docs = Rc::new(build(cat, routes));
        *c = Some((cat.clone(), routes.generation, docs.clone()));
        docs
    })
}

/// `api/v1`, `apis/apps/v1`: the keys of the v3 index.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn served(r: &ResourceInfo) -> ServedKind<'_> {
    ServedKind {
        group: &r.group,
        version: &r.version,
        kind: &r.kind,
        list_kind: &r.list_kind,
        registry: r.schema_registry(),
    }
}

fn build(cat: &CatalogSnapshot, routes: &Routes) -> Documents {
    let mut v3 = BTreeMap::new();
    let mut index = Map::new();
    let mut gvs: Vec<(String, String)> = Vec::new();
    for r in cat.resources() {
        let key = (r.group.clone(), r.version.clone());
        if !gvs.contains(&key) {
            gvs.push(key);
        }
    }
    let local = gvs
        .iter()
        .filter(|(g, v)| routes.get(g, v).is_none())
        .map(|(g, v)| (gv_path(g, v), v3_document(cat.group_version(g, v))));
    let remote = routes.remotes().filter(|r| r.available).filter_map(|r| {
        Some((
            gv_path(&r.group, &r.version),
            (**r.openapi_v3.as_ref()?).clone(),
        ))
    });
    for (p, bytes) in local.chain(remote) {
        let hash = format!("{:016X}", xxhash_rust::xxh3::xxh3_64(&bytes));
        index.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
        v3.insert(p, bytes);
    }
    let v3_index = serde_json::to_vec(&json!({"paths": index})).expect("serializes");
    let all: Vec<&Arc<ResourceInfo>> = cat.resources().collect();
    let extensions: Vec<&Value> = routes
        .remotes()
        .filter(|r| r.available)
        .filter_map(|r| r.openapi_v2.as_deref())
        .collect();
    Documents {
        v3_index,
        v3,
        v2: v2_document(&all, &extensions),
        v2_pb: std::cell::OnceCell::new(),
    }
}

/// The paths of `resources` and the kinds they serve.
fn paths_and_kinds<'r>(
    resources: &[&'r Arc<ResourceInfo>],
    f: Flavor,
) -> (Map<String, Value>, Vec<ServedKind<'r>>) {
    let mut paths = Map::new();
    for r in resources {
        add_resource(&mut paths, r, f);
    }
    (paths, resources.iter().map(|r| served(r)).collect())
}

fn v3_document(resources: Vec<&Arc<ResourceInfo>>) -> Vec<u8> {
    let reg = schema::builtin();
    let (paths, kinds) = paths_and_kinds(&resources, Flavor::V3);
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "components": {
            "schemas": render::v3_schemas(reg, &kinds),
            "securitySchemes": {"BearerToken": {"type": "apiKey", "in": "header", "name": "authorization",
                                "description": "Bearer token authentication"}}
        },
        "security": [{"BearerToken": []}]
    });
    serde_json::to_vec(&doc).expect("serializes")
}

/// `extensions`: extension servers' `{"paths", "definitions"}`, added
/// where they name what this document does not.
fn v2_document(resources: &[&Arc<ResourceInfo>], extensions: &[&Value]) -> Vec<u8> {
    let reg = schema::builtin();
    let (mut paths, kinds) = paths_and_kinds(resources, Flavor::V2);
    let mut definitions = render::v2_definitions(reg, &kinds);
    for ext in extensions {
        for (into, from) in [
            (&mut paths, ext.get("paths")),
            (&mut definitions, ext.get("definitions")),
        ] {
            for (k, v) in from.and_then(Value::as_object).into_iter().flatten() {
                into.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    let doc = json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.34.0"},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "in": "header", "name": "authorization",
                                 "description": "Bearer token authentication"}},
        "security": [{"BearerToken": []}]
    });
    serde_json::to_vec(&doc).expect("serializes")
}

/// GET /openapi/v3/{api/v1 | apis/g/v}: None when not served.
pub fn v3_document_for(docs: &Documents, path: &str) -> Option<Vec<u8>> {
    docs.v3.get(path.trim_matches('/')).cloned()
}

/// The media type client-go asks `/openapi/v2` for (its `@` makes it an
/// invalid media type, so answers carry the dotted spelling kube uses).
const V2_PROTOBUF_ASKED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// GET /openapi/v2: the protobuf form when the client lists it first among
/// the forms kubeshard serves, JSON otherwise; 406 for anything else.
pub fn v2_response(
    cat: &Arc<CatalogSnapshot>,
    routes: &Routes,
    accept: &str,
) -> Result<(Vec<u8>, &'static str), kubeshard_core::status::ApiError> {
    let docs = documents(cat, routes);
    if accept.trim().is_empty() {
        return Ok((docs.v2.clone(), "application/json"));
    }
    for clause in accept.split(',') {
        let media = clause.split(';').next().unwrap_or("").trim();
        match media {
            V2_PROTOBUF_ASKED | V2_PROTOBUF => {
                let pb = docs.v2_pb.get_or_init(|| {
                    let doc: Value = serde_json::from_slice(&docs.v2).expect("our own JSON");
                    crate::openapi_pb::encode(&doc)
                });
                return Ok((pb.clone(), V2_PROTOBUF));
            }
            "application/json" | "*/*" | "application/*" => {
                return Ok((docs.v2.clone(), "application/json"))
            }
            _ => {}
        }
    }
    Err(kubeshard_core::status::ApiError::not_acceptable(&[
        "application/json",
        V2_PROTOBUF,
    ]))
}

#[derive(Clone, Copy, PartialEq)]
enum Flavor {
    V2,
    V3,
}

impl Flavor {
    fn reference(self, definition: &str) -> Value {
        match self {
            Flavor::V3 => json!({"$ref": format!("{REF_PREFIX}{definition}")}),
            Flavor::V2 => json!({"$ref": format!("#/definitions/{definition}")}),
        }
    }

    fn param(self, name: &str, location: &str, description: &str, ty: &str) -> Value {
        let mut p =
            json!({"name": name, "in": location, "description": description, "uniqueItems": true});
        if location == "path" {
            p["required"] = json!(true);
        }
        match self {
            Flavor::V3 => p["schema"] = json!({"type": ty, "uniqueItems": true}),
            Flavor::V2 => p["type"] = json!(ty),
        }
        p
    }

    fn query(self, name: &str, description: &str) -> Value {
        let ty = match name {
            "limit" | "timeoutSeconds" | "gracePeriodSeconds" => "integer",
            "watch" | "allowWatchBookmarks" | "sendInitialEvents" | "force" | "pretty" => "boolean",
            _ => "string",
        };
        self.param(name, "query", description, ty)
    }
}

fn gvk(r: &ResourceInfo) -> Value {
    json!({"group": r.group, "version": r.version, "kind": r.kind})
}

fn write_params(f: Flavor) -> Vec<Value> {
    vec![
        f.query(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        f.query(
            "fieldManager",
            "A name associated with the actor or entity that is making these changes.",
        ),
        f.query(
            "fieldValidation",
            "How the server handles unknown or duplicate fields: Ignore, Warn or Strict.",
        ),
    ]
}

fn operation(
    f: Flavor,
    r: &ResourceInfo,
    action: &str,
    op_id: &str,
    mut params: Vec<Value>,
    body: Option<&[&str]>,
    response: &str,
) -> Value {
    let reference = f.reference(response);
    let mut op = json!({
        "operationId": op_id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(r)
    });
    let kind_ref = f.reference(&render::definition_name(&served(r)));
    match f {
        Flavor::V3 => {
            op["responses"] = json!({"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}});
            if let Some(types) = body {
                let content: Map<String, Value> = types
                    .iter()
                    .map(|t| (t.to_string(), json!({"schema": kind_ref})))
                    .collect();
                op["requestBody"] = json!({"content": content, "required": true});
            }
        }
        Flavor::V2 => {
            op["responses"] = json!({"200": {"description": "OK", "schema": reference}});
            op["produces"] = json!(["application/json", "application/yaml"]);
            op["schemes"] = json!(["https"]);
            if let Some(types) = body {
                op["consumes"] = json!(types);
                params.push(
                    json!({"name": "body", "in": "body", "required": true, "schema": kind_ref}),
                );
            }
        }
    }
    op["parameters"] = Value::Array(params);
    op
}

const WRITE_TYPES: &[&str] = &["application/json", "application/yaml"];
const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

fn add_resource(paths: &mut Map<String, Value>, r: &ResourceInfo, f: Flavor) {
    let kind_def = render::definition_name(&served(r));
    let list_def = render::list_definition_name(&served(r));
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
    let mut scope_params = vec![f.query("pretty", "If 'true', then the output is pretty printed.")];
    if r.namespaced {
        scope_params.push(f.param(
            "namespace",
            "path",
            "object name and auth scope, such as for teams and projects",
            "string",
        ));
    }
    let list_params: Vec<Value> = [
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
    .map(|p| f.query(p, ""))
    .collect();
    let kind = &r.kind;
    let ns = if r.namespaced { "Namespaced" } else { "" };
    // kube's operation ids: verb, "Namespaced" for namespaced kinds, kind.
    let op =
        |action: &str, verb: &str, params: Vec<Value>, body: Option<&[&str]>, response: &str| {
            operation(
                f,
                r,
                action,
                &format!("{verb}{ns}{kind}"),
                params,
                body,
                response,
            )
        };
    let status_def = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
    let mut collection = json!({"parameters": scope_params.clone()});
    if r.supports("list") {
        collection["get"] = op("list", "list", list_params, None, &list_def);
    }
    if r.supports("create") {
        collection["post"] = op(
            "post",
            "create",
            write_params(f),
            Some(WRITE_TYPES),
            &kind_def,
        );
    }
    if r.supports("deletecollection") {
        let params = vec![f.query("dryRun", "")];
        collection["delete"] = op(
            "deletecollection",
            "deleteCollection",
            params,
            None,
            status_def,
        );
    }
    paths.insert(scoped.clone(), collection);

    let mut item_params = scope_params;
    item_params.push(f.param("name", "path", &format!("name of the {kind}"), "string"));
    let mut item = json!({"parameters": item_params});
    item["get"] = op("get", "read", vec![], None, &kind_def);
    if r.supports("update") {
        item["put"] = op(
            "put",
            "replace",
            write_params(f),
            Some(WRITE_TYPES),
            &kind_def,
        );
    }
    if r.supports("patch") {
        let mut p = write_params(f);
        p.push(f.query("force", "Force is going to \"force\" Apply requests."));
        item["patch"] = op("patch", "patch", p, Some(PATCH_TYPES), &kind_def);
    }
    if r.supports("delete") {
        let params = ["dryRun", "gracePeriodSeconds", "propagationPolicy"]
            .iter()
            .map(|q| f.query(q, ""))
            .collect();
        item["delete"] = op("delete", "delete", params, None, &kind_def);
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

    fn docs() -> Rc<Documents> {
        documents(&Catalog::with_builtins().snapshot(), &Routes::default())
    }

    /// Every `$ref` with `prefix` names a definition of `defs`.
    fn assert_refs_resolve(doc: &Value, prefix: &str, defs: &Value) {
        let text = doc.to_string();
        for part in text.split(&format!("\"$ref\":\"{prefix}")).skip(1) {
            let name = &part[..part.find('"').unwrap()];
            assert!(defs.get(name).is_some(), "dangling reference {name}");
        }
    }

    #[test]
    fn kubectl_finds_field_validation_on_patch() {
        let docs = docs();
        let index: Value = serde_json::from_slice(&docs.v3_index).unwrap();
        let url = index["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="));
        assert!(index["paths"]["apis/apps/v1"].is_object());
        let doc: Value =
            serde_json::from_slice(&v3_document_for(&docs, "api/v1").unwrap()).unwrap();
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
        assert!(v3_document_for(&docs, "apis/nope/v1").is_none());
    }

    #[test]
    fn v3_schemas_are_the_kinds_with_merge_extensions() {
        let docs = docs();
        let doc: Value =
            serde_json::from_slice(&v3_document_for(&docs, "api/v1").unwrap()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let pod = &schemas["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        assert!(pod["description"].as_str().unwrap().len() > 10);
        let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert!(
            schemas["io.k8s.api.core.v1.Container"]["properties"]["image"]["description"]
                .is_string()
        );
        assert_eq!(
            schemas["io.k8s.api.core.v1.PodList"]["x-kubernetes-group-version-kind"][0]["kind"],
            "PodList"
        );
        assert_refs_resolve(&doc, "#/components/schemas/", schemas);
    }

    #[test]
    fn v2_negotiates_json_and_protobuf() {
        let cat = Catalog::with_builtins().snapshot();
        let (json_doc, ct) = v2_response(&cat, &Routes::default(), "application/json").unwrap();
        assert_eq!(ct, "application/json");
        assert!(json_doc.starts_with(b"{"));
        let (pb, ct) = v2_response(&cat, &Routes::default(), V2_PROTOBUF_ASKED).unwrap();
        assert_eq!(ct, V2_PROTOBUF);
        // Field 1 (swagger) comes first: tag 0x0a, length 3, "2.0".
        assert_eq!(&pb[..5], b"\x0a\x032.0");
        assert_eq!(
            v2_response(&cat, &Routes::default(), "text/html")
                .unwrap_err()
                .code,
            406
        );
    }

    #[test]
    fn v2_is_swagger_with_definitions() {
        let docs = docs();
        let doc: Value = serde_json::from_slice(&docs.v2).unwrap();
        assert_eq!(doc["swagger"], "2.0");
        let defs = &doc["definitions"];
        let dep = &defs["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            dep["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        assert_eq!(
            dep["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
        assert_eq!(
            defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"],
            "int-or-string"
        );
        assert!(!doc.to_string().contains("#/components/schemas/"));
        assert_refs_resolve(&doc, "#/definitions/", defs);
        assert!(
            doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
                .is_object()
        );
    }
}

#[cfg(test)]
mod runtime_kind_tests {
    use super::*;
    use kubeshard_core::catalog::{Catalog, SchemaSource};
    use kubeshard_core::schema::SchemaRegistry;
    use std::collections::HashMap;

    /// A kind built at runtime is documented from its own schema: its
    /// definition and what that references within its registry, with
    /// metadata from the built-in one.
    #[test]
    fn a_runtime_kind_is_documented_from_its_own_schema() {
        let catalog = Catalog::with_builtins();
        let mut widget = catalog
            .snapshot()
            .lookup("", "v1", "configmaps")
            .unwrap()
            .as_ref()
            .clone();
        (
            widget.group,
            widget.version,
            widget.kind,
            widget.list_kind,
            widget.plural,
        ) = (
            "example.com".into(),
            "v1".into(),
            "Widget".into(),
            "WidgetList".into(),
            "widgets".into(),
        );
        let defs = BTreeMap::from([
            (
                "com.example.v1.Widget".to_string(),
                json!({"type": "object", "properties": {
                    "metadata": {"$ref": format!("{REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")},
                    "spec": {"$ref": format!("{REF_PREFIX}com.example.v1.WidgetSpec")}}}),
            ),
            (
                "com.example.v1.WidgetSpec".to_string(),
                json!({"type": "object", "properties": {"color": {"type": "string"}}}),
            ),
        ]);
        let kinds = HashMap::from([(
            ("example.com".into(), "v1".into(), "Widget".into()),
            "com.example.v1.Widget".to_string(),
        )]);
        widget.schema_source = SchemaSource::Own(Arc::new(SchemaRegistry::new(defs, kinds)));
        catalog.register(widget);
        let docs = documents(&catalog.snapshot(), &Routes::default());
        let doc: Value =
            serde_json::from_slice(&v3_document_for(&docs, "apis/example.com/v1").unwrap())
                .unwrap();
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["com.example.v1.Widget"]["x-kubernetes-group-version-kind"][0]["kind"],
            "Widget"
        );
        assert_eq!(
            schemas["com.example.v1.WidgetSpec"]["properties"]["color"]["type"],
            "string"
        );
        assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
        assert!(schemas["com.example.v1.WidgetList"].is_object());
        let v2: Value = serde_json::from_slice(&docs.v2).unwrap();
        assert_eq!(
            v2["definitions"]["com.example.v1.WidgetSpec"]["properties"]["color"]["type"],
            "string"
        );
    }
}
