//! `pods/binding`: how a scheduler assigns a pod to a node, once.

mod common;
use common::*;
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(s: &Server, name: &str, extra: Value) -> Value {
    let mut body = json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    if let (Some(spec), Some(more)) = (body["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(more.clone());
    }
    let (code, created) = s.post(PODS, &body);
    assert_eq!(code, 201, "{created}");
    created
}

fn binding(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "annotations": {"scheduler.example/picked": "yes"}},
           "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

each_shard_count!(a_pod_is_bound_once, |shards| {
    let s = Server::start(shards);
    let created = pod(&s, "web", json!({}));
    let (code, unbound) = s.get("/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName=");
    assert_eq!((code, names(&unbound)), (200, vec!["web".to_string()]));
    let mut w = s.watch(&format!(
        "{PODS}?watch=1&resourceVersion={}&timeoutSeconds=5",
        rv(&created)
    ));

    let (code, status) = s.post(&format!("{PODS}/web/binding"), &binding("web", "node-1"));
    assert_eq!(code, 201, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");

    let (_, bound) = s.get(&format!("{PODS}/web"));
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    assert_eq!(
        bound["metadata"]["annotations"]["scheduler.example/picked"],
        "yes"
    );
    let conditions = bound["status"]["conditions"].as_array().unwrap();
    let scheduled = conditions
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap();
    assert_eq!(scheduled["status"], "True");
    assert!(scheduled["lastTransitionTime"].is_string());
    assert_eq!(bound["status"]["phase"], "Pending");
    let ev = w.next_event().unwrap();
    assert_eq!(
        (ev["type"].as_str(), &ev["object"]["spec"]["nodeName"]),
        (Some("MODIFIED"), &json!("node-1"))
    );
    let (_, unbound) = s.get("/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName=");
    assert!(names(&unbound).is_empty());

    // Once bound, always bound.
    let (code, again) = s.post(&format!("{PODS}/web/binding"), &binding("web", "node-2"));
    assert_eq!(code, 409, "{again}");
    assert_eq!(
        again["message"],
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
    );
    let (_, still) = s.get(&format!("{PODS}/web"));
    assert_eq!(still["spec"]["nodeName"], "node-1");
});

#[test]
fn bad_bindings_are_refused() {
    let s = Server::start(1);
    pod(&s, "p", json!({}));
    pod(
        &s,
        "gated",
        json!({"schedulingGates": [{"name": "example.com/wait"}]}),
    );
    let cases = [
        ("p", binding("other", "n"), 400),
        (
            "p",
            json!({"metadata": {"name": "p"}, "target": {"kind": "Pod", "name": "n"}}),
            422,
        ),
        ("p", json!({"metadata": {"name": "p"}, "target": {}}), 422),
        (
            "p",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}}),
            400,
        ),
        ("gated", binding("gated", "n"), 409),
        ("missing", binding("missing", "n"), 404),
    ];
    for (name, body, want) in cases {
        let (code, out) = s.post(&format!("{PODS}/{name}/binding"), &body);
        assert_eq!(code, want, "{name} {body}: {out}");
        assert_eq!(out["kind"], "Status");
    }
    // A stale uid precondition is a conflict; nothing was bound.
    let mut stale = binding("p", "n");
    stale["metadata"]["uid"] = json!("not-the-uid");
    let (code, _) = s.post(&format!("{PODS}/p/binding"), &stale);
    assert_eq!(code, 409);
    let (_, p) = s.get(&format!("{PODS}/p"));
    assert!(p["spec"].get("nodeName").is_none(), "{p}");
    // Only create: a binding is not read back.
    assert_eq!(s.get(&format!("{PODS}/p/binding")).0, 405);
}

#[test]
fn discovery_shows_the_binding_subresource() {
    let s = Server::start(1);
    let (_, core) = s.get("/api/v1");
    let b = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/binding")
        .cloned()
        .unwrap();
    assert_eq!(b["kind"], "Binding");
    assert_eq!(b["verbs"], json!(["create"]));
}

/// The legacy `bindings` collection binds the pod its Binding names, as
/// `pods/{name}/binding` does.
#[test]
fn the_legacy_bindings_collection_binds_the_named_pod() {
    let s = Server::start(1);
    let pod = json!({"metadata": {"name": "old-style"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    assert_eq!(s.post("/api/v1/namespaces/default/pods", &pod).0, 201);
    let binding = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"kind": "Node", "name": "n1"}})
    };
    let (code, out) = s.post("/api/v1/namespaces/default/bindings", &binding("old-style"));
    assert_eq!((code, &out["status"]), (201, &json!("Success")), "{out}");
    let (_, bound) = s.get("/api/v1/namespaces/default/pods/old-style");
    assert_eq!(bound["spec"]["nodeName"], "n1");
    let (code, out) = s.post("/api/v1/namespaces/default/bindings", &binding("old-style"));
    assert_eq!(code, 409, "{out}");
    assert_eq!(
        s.post("/api/v1/namespaces/default/bindings", &binding("ghost"))
            .0,
        404
    );
    assert_eq!(
        s.post(
            "/api/v1/namespaces/default/bindings",
            &json!({"target": {"name": "n1"}})
        )
        .0,
        422
    );
    // Create-only: nothing to list.
    assert_eq!(s.get("/api/v1/namespaces/default/bindings").0, 405);
}
