//! Server-side apply over HTTP and the managedFields every write records.

mod common;

use common::Server;
use serde_json::{json, Value};

const APPLY: &str = "application/apply-patch+yaml";
const PATH: &str = "/apis/apps/v1/namespaces/default/deployments/web";

fn config(replicas: u32, image: &str, env: &[(&str, &str)]) -> String {
    let env: String = env
        .iter()
        .map(|(n, v)| format!("\n        - name: {n}\n          value: \"{v}\""))
        .collect();
    let env = if env.is_empty() {
        String::new()
    } else {
        format!("\n        env:{env}")
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: {image}{env}\n"
    )
}

fn apply(s: &Server, manager: &str, force: bool, body: &str) -> (u16, Value) {
    let force = if force { "&force=true" } else { "" };
    s.apply_yaml(&format!("{PATH}?fieldManager={manager}{force}"), body)
}

fn manager<'a>(obj: &'a Value, name: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == name)
        .unwrap_or_else(|| panic!("no entry for {name}: {obj}"))
}

#[test]
fn two_managers_conflict_then_force() {
    let s = Server::start(2);
    // Create on apply: 201, the applier owns what it applied.
    let (code, created) = apply(&s, "alice", false, &config(2, "nginx:1.25", &[("A", "1")]));
    assert_eq!(code, 201, "{created}");
    let alice = manager(&created, "alice");
    assert_eq!(alice["operation"], "Apply");
    assert_eq!(alice["apiVersion"], "apps/v1");
    assert_eq!(alice["fieldsType"], "FieldsV1");
    assert_eq!(alice["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    assert!(alice["time"].is_string());
    // Defaults were applied but are not alice's.
    assert_eq!(created["spec"]["revisionHistoryLimit"], 10);
    assert!(alice["fieldsV1"]["f:spec"]
        .get("f:revisionHistoryLimit")
        .is_none());

    // Bob changes replicas: conflict with alice.
    let bob =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n";
    let (code, err) = apply(&s, "bob", false, bob);
    assert_eq!(code, 409, "{err}");
    assert_eq!(err["reason"], "Conflict");
    assert_eq!(
        err["message"],
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
    );
    assert_eq!(
        err["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.replicas"}])
    );
    assert_eq!(s.get(PATH).1["spec"]["replicas"], 2, "nothing was written");

    // Forced, bob takes replicas over.
    let (code, forced) = apply(&s, "bob", true, bob);
    assert_eq!(code, 200, "{forced}");
    assert_eq!(forced["spec"]["replicas"], 5);
    assert!(manager(&forced, "bob")["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_some());
    assert!(manager(&forced, "alice")["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_none());

    // Alice re-applies without env var A and with a new image: A goes,
    // replicas (now bob's) stays, no conflict since alice no longer
    // asks for a different replicas... she still asks for 2: conflict.
    let (code, err) = apply(&s, "alice", false, &config(2, "nginx:1.26", &[]));
    assert_eq!(code, 409, "{err}");
    assert_eq!(
        err["message"],
        "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas"
    );
    let (code, out) = apply(&s, "alice", false, &config(5, "nginx:1.26", &[]));
    assert_eq!(code, 200, "{out}");
    let c = &out["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.26");
    assert!(
        c.get("env").is_none(),
        "the env var alice stopped applying is gone: {c}"
    );
    // Re-applying the same configuration is a no-op (same resourceVersion).
    let (code, again) = apply(&s, "alice", false, &config(5, "nginx:1.26", &[]));
    assert_eq!(code, 200);
    assert_eq!(
        again["metadata"]["resourceVersion"],
        out["metadata"]["resourceVersion"]
    );
}

#[test]
fn apply_options_and_errors() {
    let s = Server::start(1);
    let (code, err) = s.send("PATCH", PATH, APPLY, config(1, "x", &[]).as_bytes());
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["message"], "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch");
    let (code, err) = s.send(
        "PATCH",
        &format!("{PATH}?fieldManager=m"),
        APPLY,
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  bogus: 1\n",
    );
    assert_eq!(code, 500);
    assert_eq!(
        err["message"],
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.bogus: field not declared in schema"
    );
    // Bodies that are no configuration of this kind.
    for (body, code, message) in [
        ("- a\n", 400, "the body of the request must be a YAML or JSON object"),
        ("", 400, "the body of the request must be a YAML or JSON object"),
        ("kind: Deployment\nmetadata: {name: web}\n", 400,
         "Incorrect version specified in apply patch. Specified patch version: , expected: apps/v1"),
        ("apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n", 400,
         "Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1"),
        ("apiVersion: apps/v1\nmetadata: {name: web}\n", 500,
         "failed to create typed patch object (default/web; apps/v1, Kind=): no corresponding type for apps/v1, Kind="),
        ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, managedFields: []}\n", 400,
         "metadata.managedFields must be nil"),
    ] {
        let (got, err) = s.send("PATCH", &format!("{PATH}?fieldManager=m"), APPLY, body.as_bytes());
        assert_eq!((got, err["message"].as_str().unwrap()), (code, message), "{body}");
    }
    assert_eq!(s.get(PATH).0, 404, "nothing was created");
    let (code, err) = s.send(
        "PATCH",
        &format!("{PATH}?fieldManager=m"),
        APPLY,
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: other\n",
    );
    assert_eq!(code, 400, "{err}");
    let dup = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  paused: true\n  paused: false\n";
    let (code, err) = s.send(
        "PATCH",
        &format!("{PATH}?fieldManager=m&fieldValidation=Strict"),
        APPLY,
        dup.as_bytes(),
    );
    assert_eq!(code, 400, "{err}");
    assert_eq!(
        err["message"],
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"paused\" already set in map"
    );
    // force belongs to apply only.
    let (code, err) = s.patch(
        &format!("{PATH}?force=true"),
        "application/merge-patch+json",
        &json!({}),
    );
    assert_eq!(code, 422, "{err}");
    // Applying into a namespace that does not exist is 404.
    let (code, _) = s.send(
        "PATCH",
        "/api/v1/namespaces/nowhere/configmaps/c?fieldManager=m",
        APPLY,
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
    );
    assert_eq!(code, 404);
}

#[test]
fn every_write_records_its_manager() {
    let s = Server::start(2);
    let cm = "/api/v1/namespaces/default/configmaps";
    let body = json!({"metadata": {"name": "m", "labels": {"a": "1"}}, "data": {"k": "v"}});
    let (code, created) = s.send(
        "POST",
        &format!("{cm}?fieldManager=creator"),
        "application/json",
        body.to_string().as_bytes(),
    );
    assert_eq!(code, 201, "{created}");
    let e = manager(&created, "creator");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
    // A patch without fieldManager is recorded under the User-Agent's product.
    let (code, _, _) = s.send_warned(
        "PATCH",
        &format!("{cm}/m"),
        "application/merge-patch+json",
        br#"{"data": {"x": "y"}}"#,
    );
    assert_eq!(code, 200);
    let (_, live) = s.get(&format!("{cm}/m"));
    let entries = live["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{live}");
    assert!(entries.iter().any(|e| e["manager"] == "ureq"), "{live}");
    // A PUT that changes a field takes it from its previous owner.
    let mut put = live.clone();
    put["data"]["k"] = json!("changed");
    let (code, out) = s.send(
        "PUT",
        &format!("{cm}/m?fieldManager=editor"),
        "application/json",
        put.to_string().as_bytes(),
    );
    assert_eq!(code, 200, "{out}");
    assert!(manager(&out, "editor")["fieldsV1"]["f:data"]
        .get("f:k")
        .is_some());
    assert!(manager(&out, "creator")["fieldsV1"]["f:data"]
        .get("f:k")
        .is_none());
}
