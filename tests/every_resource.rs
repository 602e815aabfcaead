//! Every resource discovery lists goes through every verb it serves, from
//! one valid manifest per resource (tests/fixtures/resources.yaml), and an
//! invalid one gets kube's 422. A served resource without a manifest
//! fails the test, so a kind cannot be added without being exercised.

mod common;
use common::resources::{fixtures, served};
use common::*;
use serde_json::{json, Value};

/// Covered by their own lifecycle tests: a namespace's deletion waits for
/// the namespace controller to empty it.
const ELSEWHERE: &[&str] = &["core/v1/namespaces"];

#[test]
fn every_served_resource_goes_through_every_verb() {
    let s = Server::start(2);
    let fixtures = fixtures();
    let served = served(&s);
    let missing: Vec<&str> = served
        .iter()
        .map(|r| r.key.as_str())
        .filter(|k| !fixtures.contains_key(*k) && !ELSEWHERE.contains(k))
        .collect();
    assert!(
        missing.is_empty(),
        "no manifest in tests/fixtures/resources.yaml for {missing:?}"
    );
    let unserved: Vec<&String> = fixtures
        .keys()
        .filter(|k| !served.iter().any(|r| &r.key == *k))
        .collect();
    assert!(
        unserved.is_empty(),
        "manifests for resources not served: {unserved:?}"
    );
    assert!(served.len() >= 56, "only {} resources served", served.len());
    for r in served
        .iter()
        .filter(|r| !ELSEWHERE.contains(&r.key.as_str()))
    {
        let mut manifest = fixtures[&r.key].clone();
        manifest["apiVersion"] = json!(r.api_version);
        manifest["kind"] = json!(r.kind);
        // A name no kind accepts (not even the path-segment names of RBAC
        // objects): kube's 422, naming the field.
        let mut bad = manifest.clone();
        bad["metadata"]["name"] = json!("not/valid");
        let (code, status) = s.post(&r.path, &bad);
        assert_eq!(code, 422, "{}: {status}", r.key);
        assert_eq!(status["reason"], "Invalid", "{}", r.key);
        assert_eq!(
            status["details"]["causes"][0]["field"], "metadata.name",
            "{}: {status}",
            r.key
        );
        verbs::every_verb(&s, &r.path, &manifest, |created| {
            assert_eq!(created["kind"], r.kind.as_str(), "{}", r.key);
            assert!(created["metadata"]["uid"].is_string(), "{}", r.key);
        });
    }
}

/// Kind-specific rules a user meets first, each refused with kube's 422
/// on the field at fault.
#[test]
fn kind_rules_refuse_what_kube_refuses() {
    let s = Server::start(1);
    let fixtures = fixtures();
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "certificates.k8s.io/v1/certificatesigningrequests",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            json!({"spec": {"request": null}}),
            "spec.request",
        ),
        (
            "certificates.k8s.io/v1/certificatesigningrequests",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            json!({"spec": {"signerName": "kubernetes.io/legacy-unknown"}}),
            "spec.signerName",
        ),
        (
            "batch/v1/jobs",
            "/apis/batch/v1/namespaces/default/jobs",
            json!({"spec": {"template": {"spec": {"restartPolicy": "Always"}}}}),
            "spec.template.spec.restartPolicy",
        ),
        (
            "core/v1/services",
            "/api/v1/namespaces/default/services",
            json!({"spec": {"clusterIP": "192.168.0.1"}}),
            "spec.clusterIPs[0]",
        ),
        (
            "core/v1/pods",
            "/api/v1/namespaces/default/pods",
            json!({"spec": {"containers": null}}),
            "spec.containers",
        ),
        (
            "core/v1/pods",
            "/api/v1/namespaces/default/pods",
            json!({"spec": {"containers": [{"name": "No_Such", "image": "x", "ports": [{"containerPort": 70000}]}]}}),
            "spec.containers[0].ports[0].containerPort",
        ),
        (
            "apps/v1/deployments",
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": ""}]}}}}),
            "spec.template.spec.containers[0].image",
        ),
        (
            "networking.k8s.io/v1/ipaddresses",
            "/apis/networking.k8s.io/v1/ipaddresses",
            json!({"metadata": {"name": "fd00:0::1"}}),
            "metadata.name",
        ),
    ];
    for (key, path, patch, field) in cases {
        let mut obj = fixtures[key].clone();
        json_patch::merge(&mut obj, &patch);
        let (code, status) = s.post(path, &obj);
        assert_eq!(code, 422, "{key} {patch}: {status}");
        let fields: Vec<&str> = status["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["field"].as_str())
            .collect();
        assert!(fields.contains(&field), "{key} {patch}: {status}");
    }
}
