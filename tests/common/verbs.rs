//! One object through every verb a served resource supports: create,
//! get, watch, update, each patch type, server-side apply, list (and the
//! Table view) and delete, checking what a client would see at each step.

use super::{names, rv, Server};
use serde_json::{json, Value};

/// Walks `manifest` through every verb at the collection `path`; calls
/// `inspect` with the created object while it still exists. Answers the
/// created object.
pub fn every_verb(s: &Server, path: &str, manifest: &Value, inspect: impl FnOnce(&Value)) -> Value {
    let (code, created) = s.post(path, manifest);
    assert_eq!(code, 201, "{path}: {created}");
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    let one = format!("{path}/{name}");
    let (code, got) = s.get(&one);
    assert_eq!(
        (code, &got["metadata"]["uid"]),
        (200, &created["metadata"]["uid"]),
        "{path}"
    );
    let mut w = s.watch(&format!(
        "{path}?watch=1&resourceVersion={}&timeoutSeconds=10",
        rv(&created)
    ));
    // A read-modify-write, retried on a conflict as clients do: some
    // kinds have a controller writing them too (a CRD's status).
    let mut latest = got.clone();
    let (code, updated) = loop {
        let mut put = latest.clone();
        put["metadata"]["labels"] = json!({"step": "put"});
        match s.put(&one, &put) {
            (409, _) => latest = s.get(&one).1,
            answer => break answer,
        }
    };
    assert_eq!(code, 200, "{path}: {updated}");
    for (ct, patch) in [
        (
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"merge": "yes"}}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"metadata": {"labels": {"smp": "yes"}}}),
        ),
        (
            "application/json-patch+json",
            json!([{"op": "add", "path": "/metadata/labels/json", "value": "yes"}]),
        ),
    ] {
        let (code, patched) = s.patch(&one, ct, &patch);
        assert_eq!(code, 200, "{path} {ct}: {patched}");
    }
    let apply = json!({"apiVersion": created["apiVersion"], "kind": created["kind"],
        "metadata": {"name": name, "labels": {"applied": "yes"}}});
    let (code, applied) = s.send(
        "PATCH",
        &format!("{one}?fieldManager=test&force=true"),
        "application/apply-patch+yaml",
        serde_json::to_string(&apply).unwrap().as_bytes(),
    );
    assert_eq!(code, 200, "{path} apply: {applied}");
    for label in ["step", "merge", "smp", "json", "applied"] {
        assert!(
            applied["metadata"]["labels"].get(label).is_some(),
            "{path}: {label} in {applied}"
        );
    }
    let (code, list) = s.get(path);
    assert_eq!(code, 200);
    assert!(names(&list).contains(&name), "{path}: {list}");
    inspect(&created);
    let (code, gone) = s.delete(&one);
    assert!(matches!(code, 200 | 202), "{path}: {gone}");
    let types: Vec<String> = w
        .until(|e| e["type"] == "DELETED")
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        types.first().map(String::as_str),
        Some("MODIFIED"),
        "{path}: {types:?}"
    );
    assert_eq!(
        types.last().map(String::as_str),
        Some("DELETED"),
        "{path}: {types:?}"
    );
    assert!(
        types.len() >= 6,
        "{path}: put, three patches, apply, delete: {types:?}"
    );
    created
}
