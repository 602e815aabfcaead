//! MutatingAdmissionPolicy (beta in kube 1.34, behind its feature gate
//! and the v1beta1 version): off by default; with both on, apply
//! configurations and JSON patches change the objects bound policies
//! match, with params, match conditions and variables, in policy order,
//! reinvoked when a later policy changes the object; failures meet the
//! failure policy, atomic fields are left alone, and the policies
//! themselves are validated as kube validates them.

mod common;
use common::*;
use serde_json::{json, Value};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings";

fn gated() -> Server {
    Server::start_with(
        2,
        &[
            "--feature-gates=MutatingAdmissionPolicy=true",
            "--runtime-config=admissionregistration.k8s.io/v1beta1=true",
        ],
    )
}

fn create(s: &Server, path: &str, body: Value) {
    let (code, out) = s.post(path, &body);
    assert_eq!(code, 201, "{out}");
}

/// A policy on configmaps (CREATE and UPDATE) with these mutations.
fn policy(name: &str, extra: Value, mutations: Value) -> Value {
    let mut p = json!({"metadata": {"name": name}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
        "reinvocationPolicy": "Never",
        "mutations": mutations}});
    for (k, v) in extra.as_object().unwrap() {
        p["spec"][k] = v.clone();
    }
    p
}

fn bind(s: &Server, policy: &str, extra: Value) {
    let mut b = json!({"metadata": {"name": format!("{policy}-binding")},
        "spec": {"policyName": policy}});
    for (k, v) in extra.as_object().unwrap() {
        b["spec"][k] = v.clone();
    }
    create(s, BINDINGS, b);
}

/// Creates ConfigMaps in `ns` labelled `case` until `done` holds for
/// the answer (informers pick policies up asynchronously, as kube's).
fn until_in_effect(s: &Server, ns: &str, case: &str, done: impl Fn(u16, &Value) -> bool) {
    eventually(10, "the policy in effect", || {
        let (code, body) = s.post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &json!({"metadata": {"name": unique("probe"), "labels": {"case": case}}}),
        );
        done(code, &body).then_some(())
    });
}

#[test]
fn off_unless_the_gate_and_the_version_are_on() {
    let s = Server::start(1);
    assert_eq!(s.get(POLICIES).0, 404);
    let (_, groups) = s.get("/apis/admissionregistration.k8s.io");
    assert!(!groups.to_string().contains("v1beta1"), "{groups}");
    let s = gated();
    let (code, list) = s.get(POLICIES);
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "MutatingAdmissionPolicyList");
}

#[test]
fn policies_are_validated_as_kube_validates_them() {
    let s = gated();
    let (code, body) = s.post(
        POLICIES,
        &json!({"metadata": {"name": "bad"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}},
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "object.("}}]}}),
    );
    assert_eq!(code, 422, "{body}");
    let fields: Vec<&str> = body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    for f in [
        "spec.matchConstraints.resourceRules.operations",
        "spec.mutations[0].jsonPatch",
        "spec.mutations[0].applyConfiguration",
        "spec.mutations[1].applyConfiguration.expression",
        "spec.reinvocationPolicy",
    ] {
        assert!(fields.contains(&f), "{f} not in {fields:?}");
    }
    // failurePolicy is defaulted, as in kube.
    create(
        &s,
        POLICIES,
        policy(
            "ok",
            json!({}),
            json!([{"patchType": "JSONPatch",
        "jsonPatch": {"expression": "[]"}}]),
        ),
    );
    let (_, p) = s.get(&format!("{POLICIES}/ok"));
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    assert_eq!(p["metadata"]["generation"], 1);
}

#[test]
fn policies_mutate_with_params_conditions_and_reinvocation() {
    let s = gated();
    let ns = namespace(&s, "mutated");
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    create(
        &s,
        &cms,
        json!({"metadata": {"name": "team"}, "data": {"team": "platform"}}),
    );
    // a-labels (IfNeeded) runs before b-mark (policies run by name): it
    // sees b-mark's label only when reinvoked.
    create(
        &s,
        POLICIES,
        policy(
            "a-labels",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "reinvocationPolicy": "IfNeeded",
                "matchConditions": [{"name": "not-skipped",
                    "expression": "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"}],
                "variables": [{"name": "sawMark",
                    "expression": "has(object.metadata.labels) && 'mark' in object.metadata.labels"}]}),
            json!([
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: {'team': params.data.team, 'saw-mark': variables.sawMark ? 'yes' : 'no'}}}"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "has(object.metadata.annotations) ? [] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/by'), value: 'policy'}]"}}]),
        ),
    );
    bind(
        &s,
        "a-labels",
        json!({"paramRef": {"name": "team", "namespace": ns, "parameterNotFoundAction": "Deny"}}),
    );
    create(
        &s,
        POLICIES,
        policy(
            "b-mark",
            json!({}),
            json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {'mark': 'set'}}}"}}]),
        ),
    );
    bind(&s, "b-mark", json!({}));
    until_in_effect(&s, &ns, "probe", |code, body| {
        code == 201
            && body["metadata"]["labels"]["team"] == "platform"
            && body["metadata"]["labels"]["mark"] == "set"
    });

    let (code, cm) = s.post(
        &cms,
        &json!({"metadata": {"name": "plain", "labels": {"own": "kept"}}, "data": {"k": "v"}}),
    );
    assert_eq!(code, 201, "{cm}");
    let labels = &cm["metadata"]["labels"];
    assert_eq!(labels["own"], "kept");
    assert_eq!(labels["team"], "platform");
    assert_eq!(labels["mark"], "set");
    assert_eq!(labels["saw-mark"], "yes", "reinvoked after b-mark: {cm}");
    assert_eq!(cm["metadata"]["annotations"]["example.com/by"], "policy");
    assert_eq!(cm["data"]["k"], "v");
    // Stored as mutated.
    let (_, stored) = s.get(&format!("{cms}/plain"));
    assert_eq!(stored["metadata"]["labels"], *labels);

    // A false match condition skips a-labels (b-mark still runs).
    let (code, cm) = s.post(
        &cms,
        &json!({"metadata": {"name": "skipped", "labels": {"skip": "1"}}}),
    );
    assert_eq!(code, 201, "{cm}");
    assert!(cm["metadata"]["labels"].get("team").is_none(), "{cm}");
    assert_eq!(cm["metadata"]["labels"]["mark"], "set");

    // Updates are mutated too: a label taken away comes back.
    let mut plain = stored.clone();
    plain["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("team");
    let (code, updated) = s.put(&format!("{cms}/plain"), &plain);
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["metadata"]["labels"]["team"], "platform");
}

#[test]
fn failures_meet_the_failure_policy_and_atomics_are_refused() {
    let s = gated();
    let ns = namespace(&s, "failing");
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let broken = |name: &str, failure: &str| {
        policy(
            name,
            json!({"failurePolicy": failure,
                "matchConditions": [{"name": "mine",
                    "expression": format!("has(object.metadata.labels) && object.metadata.labels['case'] == '{name}'")}]}),
            json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {'x': object.data.missing}}}"}}]),
        )
    };
    create(&s, POLICIES, broken("closed", "Fail"));
    bind(&s, "closed", json!({}));
    create(&s, POLICIES, broken("open", "Ignore"));
    bind(&s, "open", json!({}));
    until_in_effect(&s, &ns, "closed", |code, _| code == 403);
    let (code, body) = s.post(
        &cms,
        &json!({"metadata": {"name": "c", "labels": {"case": "closed"}}}),
    );
    assert_eq!(code, 403, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.starts_with("policy 'closed' with binding 'closed-binding' denied request: "),
        "{msg}"
    );
    assert!(msg.contains("no such key"), "{msg}");
    assert_eq!(body["details"]["causes"][0]["message"], msg);
    let (code, body) = s.post(
        &cms,
        &json!({"metadata": {"name": "o", "labels": {"case": "open"}}}),
    );
    assert_eq!(code, 201, "{body}");
    assert!(body["metadata"]["labels"].get("x").is_none());

    // An apply configuration may not set an atomic list (container args).
    create(
        &s,
        POLICIES,
        json!({"metadata": {"name": "args"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'c', args: ['x']}]}}}}"}}]}}),
    );
    bind(&s, "args", json!({}));
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let (code, body) = eventually(10, "the policy in effect", || {
        let (code, body) = s.post(
            &deployments,
            &json!({"metadata": {"name": unique("d")}, "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        );
        (code != 201).then_some((code, body))
    });
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains(
            "may not mutate atomic arrays, maps or structs: .spec.template.spec.containers[0].args"
        ),
        "{body}"
    );
}
