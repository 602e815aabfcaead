//! Protobuf on the wire, as client-go's typed and metadata clients use it:
//! GET, LIST and WATCH of every built-in kind decoded by an independent
//! implementation of kube's types (k8s-pb), errors as protobuf Status,
//! metadata views, custom resources refused or answered in JSON, and a
//! reflector that lists and watches in protobuf through a 410.

mod common;
use common::protobuf::*;
use common::protobuf_kinds::prost_reencodes;
use common::resources::{fixtures, served};
use common::*;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// What protobuf cannot tell apart from absence (empty lists, maps and
/// nulls), and the zero values Go's JSON leaves out of `omitempty` fields
/// (which the decoder drops as Go would), removed, so that JSON and a
/// protobuf round trip compare.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The JSON kubeshard's own decoder makes of a protobuf body: the same
/// object as the JSON GET, up to what protobuf cannot carry.
fn as_json(body: &[u8]) -> Value {
    kubeshard_core::protobuf::decode_object(body).expect("decodes")
}

#[test]
fn every_built_in_kind_is_served_in_protobuf() {
    let s = Server::start(2);
    let fixtures = fixtures();
    let served = served(&s);
    assert!(served.len() >= 56, "only {} resources served", served.len());
    for r in &served {
        let Some(manifest) = fixtures.get(&r.key) else {
            continue; // every_resource.rs requires a manifest for each
        };
        let mut manifest = manifest.clone();
        manifest["apiVersion"] = json!(r.api_version);
        manifest["kind"] = json!(r.kind);
        let (_, before) = s.get(&r.path);
        let (code, created) = s.post(&r.path, &manifest);
        assert!(code == 201 || code == 200, "{}: {created}", r.key);
        let name = created["metadata"]["name"].as_str().unwrap();
        let path = format!("{}/{name}", r.path);

        // GET: the kind's message, read as kube's types read it, and
        // everything the JSON form of the same version says (controllers
        // may write in between: read until both are of one version).
        let (e, body, json_get) = eventually(10, "a stable object", || {
            let (code, ct, body) = s.get_bytes(&path, PROTOBUF_OR_JSON);
            assert_eq!((code, ct.as_str()), (200, PROTOBUF), "{}", r.key);
            let (_, json_get) = s.get(&path);
            let e = envelope(&body);
            let same = as_json(&body)["metadata"]["resourceVersion"]
                == json_get["metadata"]["resourceVersion"];
            same.then_some((e, body, json_get))
        });
        assert_eq!(
            (e.api_version.as_str(), e.kind.as_str()),
            (r.api_version.as_str(), r.kind.as_str())
        );
        prost_reencodes(&e.api_version, &e.kind, &e.raw)
            .unwrap_or_else(|err| panic!("{}: {err}", r.key));
        assert_eq!(
            normalized(&as_json(&body)),
            normalized(&json_get),
            "{}",
            r.key
        );

        // LIST: the list kind, its metadata, the same items (read until
        // both encodings are of one revision, as above).
        let (list, decoded, json_list) = eventually(10, "a stable list", || {
            let (code, _, body) = s.get_bytes(&r.path, PROTOBUF);
            assert_eq!(code, 200, "{}", r.key);
            let (_, json_list) = s.get(&r.path);
            let decoded = as_json(&body);
            let same =
                decoded["metadata"]["resourceVersion"] == json_list["metadata"]["resourceVersion"];
            same.then(|| (envelope(&body), decoded, json_list))
        });
        assert_eq!(list.kind, format!("{}List", r.kind));
        prost_reencodes(&list.api_version, &list.kind, &list.raw)
            .unwrap_or_else(|err| panic!("{} list: {err}", r.key));
        assert_eq!(names(&decoded), names(&json_list), "{}", r.key);

        // WATCH from before the create: its ADDED event.
        let mut w = s.watch_protobuf(
            &format!(
                "{}?watch=1&timeoutSeconds=10&resourceVersion={}",
                r.path,
                rv_of_list(&before)
            ),
            PROTOBUF,
        );
        let (kind, obj) = w
            .next_event()
            .unwrap_or_else(|| panic!("{}: no event", r.key));
        assert_eq!(
            (kind.as_str(), obj.kind.as_str()),
            ("ADDED", r.kind.as_str()),
            "{}",
            r.key
        );
        prost_reencodes(&obj.api_version, &obj.kind, &obj.raw).unwrap();
    }
}

fn rv_of_list(list: &Value) -> &str {
    list["metadata"]["resourceVersion"].as_str().unwrap()
}

#[test]
fn typed_clients_create_update_and_delete_in_protobuf() {
    let s = Server::start(1);
    // kubectl's and client-go's typed clients send protobuf and ask for it.
    let cm = configmap("pb", json!({"app": "x"}));
    let body = kubeshard_core::protobuf::encode_object(&cm).unwrap();
    let resp = s.agent_request("POST", CMS, PROTOBUF, PROTOBUF_OR_JSON, body.object());
    assert_eq!(resp.0, 201);
    assert_eq!(resp.1, PROTOBUF);
    let created: core::ConfigMap = envelope(&resp.2).decode();
    let md = created.metadata.unwrap();
    assert_eq!(md.name(), "pb");
    assert_eq!(md.labels["app"], "x");
    assert!(!md.uid().is_empty());
    assert!(md.creation_timestamp.is_some());

    // Errors are protobuf Status.
    let (code, ct, body) = s.get_bytes(&format!("{CMS}/missing"), PROTOBUF);
    assert_eq!((code, ct.as_str()), (404, PROTOBUF));
    let e = envelope(&body);
    assert_eq!((e.api_version.as_str(), e.kind.as_str()), ("v1", "Status"));
    let status: meta::Status = e.decode();
    assert_eq!((status.code(), status.reason()), (404, "NotFound"));
    assert_eq!(status.message(), "configmaps \"missing\" not found");
    assert_eq!(status.details.unwrap().name(), "missing");

    // A delete answers with the deleted object (or a Status) in protobuf.
    let (code, ct, body) = s.agent_request(
        "DELETE",
        &format!("{CMS}/pb"),
        "application/json",
        PROTOBUF,
        b"",
    );
    // ConfigMaps answer a delete with a Success Status, here in protobuf.
    assert_eq!((code, ct.as_str()), (200, PROTOBUF));
    let status: meta::Status = envelope(&body).decode();
    assert_eq!(status.status(), "Success");
    assert_eq!(status.details.unwrap().name(), "pb");
}

#[test]
fn metadata_clients_list_and_watch_partial_objects_in_protobuf() {
    let s = Server::start(2);
    let (_, first) = s.post(CMS, &configmap("m1", json!({"tier": "a"})));
    // What client-go's metadata informers send.
    let list_accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let (code, ct, body) = s.get_bytes(CMS, list_accept);
    assert_eq!(code, 200);
    assert!(
        ct.starts_with("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList"),
        "{ct}"
    );
    let e = envelope(&body);
    assert_eq!(
        (e.api_version.as_str(), e.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadataList")
    );
    prost_reencodes(&e.api_version, &e.kind, &e.raw).unwrap();
    let list: meta::PartialObjectMetadataList = e.decode();
    let m1 = list
        .items
        .iter()
        .find(|i| i.metadata.as_ref().unwrap().name() == "m1")
        .unwrap();
    assert_eq!(m1.metadata.as_ref().unwrap().labels["tier"], "a");
    let rv = list.metadata.unwrap().resource_version().to_string();

    let watch_accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let mut w = s.watch_protobuf(
        &format!("{CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=10&resourceVersion={rv}"),
        watch_accept,
    );
    s.post(CMS, &configmap("m2", json!({"tier": "b"})));
    let (kind, obj) = w.next_event().unwrap();
    assert_eq!(
        (kind.as_str(), obj.kind.as_str()),
        ("ADDED", "PartialObjectMetadata")
    );
    let partial: meta::PartialObjectMetadata = obj.decode();
    assert_eq!(partial.metadata.unwrap().name(), "m2");

    // A single object's metadata view.
    let one_accept =
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let (code, _, body) = s.get_bytes(&format!("{CMS}/m1"), one_accept);
    assert_eq!(code, 200);
    let one: meta::PartialObjectMetadata = envelope(&body).decode();
    assert_eq!(one.metadata.unwrap().resource_version(), rv_str(&first));
    // Tables are JSON only, as in kube.
    let (code, _, _) = s.get_bytes(
        CMS,
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
    );
    assert_eq!(code, 406);
}

fn rv_str(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap()
}

#[test]
fn custom_resources_have_no_protobuf_form_but_their_definitions_do() {
    let s = Server::start(1);
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "string", "enum": ["S", "M"], "default": "S"},
            "ports": {"type": "array", "items": {"type": "integer"}},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}});
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, _) = s.post(crds, &crd);
    assert_eq!(code, 201);
    // The definition itself is a built-in kind: its schema goes through
    // JSONSchemaProps' protobuf layout and back unchanged.
    let path = format!("{crds}/gadgets.example.com");
    let e = s.get_protobuf(&path);
    prost_reencodes(&e.api_version, &e.kind, &e.raw).unwrap();
    let (_, _, body) = s.get_bytes(&path, PROTOBUF);
    let (_, json_crd) = s.get(&path);
    assert_eq!(
        as_json(&body)["spec"]["versions"][0]["schema"],
        json_crd["spec"]["versions"][0]["schema"]
    );
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    eventually(5, "the CRD to be served", || {
        (s.get(gadgets).0 == 200).then_some(())
    });
    let (code, _, body) = s.get_bytes(gadgets, PROTOBUF);
    assert_eq!(code, 406, "{}", String::from_utf8_lossy(&body));
    let (code, ct, _) = s.get_bytes(gadgets, PROTOBUF_OR_JSON);
    assert_eq!((code, ct.as_str()), (200, "application/json"));
}

/// A reflector as client-go runs one in protobuf: list, watch from the
/// list's resourceVersion, and on 410 Gone list again and watch on.
#[test]
fn a_protobuf_reflector_relists_through_a_410() {
    let s = Server::start_with(1, &["--watch-history-max-events", "5"]);
    s.post(CMS, &configmap("r0", json!({})));
    let list = |s: &Server| -> (Vec<String>, String) {
        let l: core::ConfigMapList = s.get_protobuf(CMS).decode();
        let names = l
            .items
            .iter()
            .map(|c| c.metadata.as_ref().unwrap().name().to_string())
            .collect();
        (names, l.metadata.unwrap().resource_version().to_string())
    };
    let (names, rv) = list(&s);
    assert!(names.contains(&"r0".to_string()));
    // The reflector falls behind further than the server keeps history.
    for i in 1..20 {
        s.post(CMS, &configmap(&format!("r{i}"), json!({})));
    }
    let mut w = s.watch_protobuf(&format!("{CMS}?watch=1&resourceVersion={rv}"), PROTOBUF);
    let (kind, obj) = w.next_event().unwrap();
    assert_eq!((kind.as_str(), obj.kind.as_str()), ("ERROR", "Status"));
    let status: meta::Status = obj.decode();
    assert_eq!((status.code(), status.reason()), (410, "Expired"));
    assert!(
        status.message().starts_with("too old resource version"),
        "{}",
        status.message()
    );
    assert!(w.next_event().is_none());
    // Relist, then watch on from the new list.
    let (names, rv) = list(&s);
    assert_eq!(names.len(), 20);
    let mut w = s.watch_protobuf(
        &format!("{CMS}?watch=1&timeoutSeconds=10&resourceVersion={rv}"),
        PROTOBUF,
    );
    s.post(CMS, &configmap("after", json!({})));
    let (kind, obj) = w.next_event().unwrap();
    assert_eq!(kind, "ADDED");
    let cm: core::ConfigMap = obj.decode();
    assert_eq!(cm.metadata.unwrap().name(), "after");
}
