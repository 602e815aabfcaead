//! What may change in a stored pod, and through which door: the pod
//! itself only its images, a shorter deadline and more tolerations;
//! ephemeral containers only through `/ephemeralcontainers` (as
//! `kubectl debug` adds them); cpu and memory only through `/resize`.

mod common;
use common::kubectl::Kubectl;
use common::*;
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(s: &Server, name: &str) -> Value {
    let (code, p) = s.post(
        PODS,
        &json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "app",
            "image": "nginx:1", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}),
    );
    assert_eq!(code, 201, "{p}");
    p
}

#[test]
fn a_pods_spec_is_immutable_but_for_kubes_few_fields() {
    let s = Server::start(1);
    let mut p = pod(&s, "web");
    p["spec"]["containers"][0]["image"] = json!("nginx:2");
    p["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
    let (code, updated) = s.put(&format!("{PODS}/web"), &p);
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["containers"][0]["image"], "nginx:2");

    let mut moved = updated.clone();
    moved["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
    let (code, st) = s.put(&format!("{PODS}/web"), &moved);
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["details"]["causes"][0]["field"], "spec", "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("pod updates may not change fields other than"),
        "{st}"
    );
    let (code, st) = s.patch(
        &format!("{PODS}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"tolerations": []}}),
    );
    assert_eq!(code, 422, "tolerations are only added: {st}");
}

#[test]
fn ephemeral_containers_are_added_through_their_subresource() {
    let s = Server::start(1);
    pod(&s, "web");
    // Through the pod itself: refused.
    let (code, st) = s.patch(
        &format!("{PODS}/web"),
        "application/strategic-merge-patch+json",
        &json!({"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}),
    );
    assert_eq!(code, 422, "{st}");
    // kubectl debug adds one through /ephemeralcontainers.
    let k = Kubectl::new(&s);
    let out = k.ok(&["debug", "web", "--image=busybox", "--container=dbg"]);
    assert!(out.is_empty() || out.contains("dbg"), "{out}");
    let (_, p) = s.get(&format!("{PODS}/web"));
    let eph = &p["spec"]["ephemeralContainers"][0];
    assert_eq!(eph["name"], "dbg", "{p}");
    assert_eq!(eph["image"], "busybox");
    assert_eq!(eph["terminationMessagePolicy"], "File", "defaulted: {eph}");
    // Existing ones stay as they are; names are unique; no ports.
    let sub = format!("{PODS}/web/ephemeralcontainers");
    let (code, st) = s.patch(
        &sub,
        "application/merge-patch+json",
        &json!({"spec": {"ephemeralContainers": [{"name": "app", "image": "x",
            "ports": [{"containerPort": 80}]}]}}),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(
        cause_fields(&st),
        [
            "spec.ephemeralContainers",
            "spec.ephemeralContainers[0].name",
            "spec.ephemeralContainers[0].ports"
        ],
        "{st}"
    );
    let (code, got) = s.get(&sub);
    assert_eq!(code, 200);
    assert_eq!(got["kind"], "Pod");
}

#[test]
fn resize_changes_only_cpu_and_memory() {
    let s = Server::start(1);
    pod(&s, "web");
    let sub = format!("{PODS}/web/resize");
    let (code, p) = s.patch(
        &sub,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"containers": [{"name": "app", "image": "ignored",
            "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}}]}}),
    );
    assert_eq!(code, 200, "{p}");
    let c = &p["spec"]["containers"][0];
    assert_eq!(c["resources"]["requests"]["cpu"], "250m");
    assert_eq!(c["image"], "nginx:1", "nothing but resources is taken");
    // The pod itself cannot change them.
    let (code, st) = s.patch(
        &format!("{PODS}/web"),
        "application/strategic-merge-patch+json",
        &json!({"spec": {"containers": [{"name": "app",
            "resources": {"requests": {"cpu": "500m"}}}]}}),
    );
    assert_eq!(code, 422, "{st}");
    // Other resources, and a QoS class change, are refused.
    let (code, st) = s.patch(
        &sub,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"containers": [{"name": "app",
            "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]}}),
    );
    assert_eq!(code, 422, "{st}");
    assert!(st["message"]
        .as_str()
        .unwrap()
        .contains("only cpu and memory resources are mutable"));
    let (code, st) = s.patch(
        &sub,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"containers": [{"name": "app", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
    );
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("QOS Class may not change"),
        "{st}"
    );
}
