//! ValidatingAdmissionPolicy and its bindings: CEL validations with
//! params from a ConfigMap, variables, messageExpression and reasons, Deny
//! and Warn actions, match conditions and resource rules, a missing param
//! under `parameterNotFoundAction: Deny`, a policy that does not
//! compile refused when written and one that fails meeting its failure
//! policy, and type errors reported in the
//! policy's status.

mod common;
use common::*;
use serde_json::{json, Value};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"metadata": {"name": name}, "spec": {"replicas": replicas,
        "selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn create(s: &Server, path: &str, body: Value) {
    let (code, out) = s.post(path, &body);
    assert_eq!(code, 201, "{out}");
}

#[test]
fn policies_validate_with_params_variables_and_actions() {
    let s = Server::start(2);
    let ns = namespace(&s, "policed");
    create(
        &s,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        json!({"metadata": {"name": "limits"}, "data": {"maxReplicas": "3"}}),
    );
    create(
        &s,
        POLICIES,
        json!({"metadata": {"name": "replicas"}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
            "variables": [{"name": "name", "expression": "object.metadata.name"},
                {"name": "bad", "expression": "variables.name.startsWith('bad-')"}],
            "validations": [
                {"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                    "messageExpression": "'replicas must be at most ' + params.data.maxReplicas"},
                {"expression": "!variables.bad", "message": "bad names are not welcome", "reason": "Forbidden"},
                {"expression": "object.spec.template.spec.containers.all(c, c.image != 'latest')"}]}}),
    );
    create(
        &s,
        BINDINGS,
        json!({"metadata": {"name": "replicas-binding"}, "spec": {"policyName": "replicas",
            "validationActions": ["Deny"],
            "paramRef": {"name": "limits", "namespace": ns, "parameterNotFoundAction": "Deny"}}}),
    );
    // Typed against Deployment and the ConfigMap params: nothing to report.
    assert_eq!(type_checked(&s, "replicas", 1), Vec::<Value>::new());
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let (code, body) = eventually(10, "the policy in effect", || {
        let (code, body) = s.post(&deployments, &deployment(&unique("big"), 5));
        (code != 201).then_some((code, body))
    });
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let msg = body["message"].as_str().unwrap();
    assert!(msg.starts_with("deployments.apps \"big-"), "{msg}");
    assert!(msg.ends_with(
        "is forbidden: ValidatingAdmissionPolicy 'replicas' with binding 'replicas-binding' denied request: replicas must be at most 3"
    ), "{msg}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "ValidatingAdmissionPolicy 'replicas' with binding 'replicas-binding' denied request: replicas must be at most 3"
    );
    let (code, body) = s.post(&deployments, &deployment("bad-one", 1));
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: bad names are not welcome"),
        "{body}"
    );
    assert_eq!(s.post(&deployments, &deployment("fine", 2)).0, 201);
    // Match conditions: an exempt label skips the policy.
    let mut exempt = deployment("exempt-big", 9);
    exempt["metadata"]["labels"] = json!({"exempt": "yes"});
    assert_eq!(s.post(&deployments, &exempt).0, 201);
    // The params change: the limit follows.
    let (code, _) = s.patch(
        &format!("/api/v1/namespaces/{ns}/configmaps/limits"),
        "application/merge-patch+json",
        &json!({"data": {"maxReplicas": "10"}}),
    );
    assert_eq!(code, 200);
    assert_eq!(s.post(&deployments, &deployment("bigger", 8)).0, 201);

    // A Warn binding warns and admits.
    create(
        &s,
        POLICIES,
        json!({"metadata": {"name": "labels"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                "message": "configmaps should name their team"}]}}),
    );
    create(
        &s,
        BINDINGS,
        json!({"metadata": {"name": "labels-warn"}, "spec": {"policyName": "labels",
            "validationActions": ["Warn"]}}),
    );
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let (code, warnings, _) = eventually(10, "the warn binding in effect", || {
        let r = s.send_warned(
            "POST",
            &cms,
            "application/json",
            json!({"metadata": {"name": unique("cm")}})
                .to_string()
                .as_bytes(),
        );
        (!r.1.is_empty()).then_some(r)
    });
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        ["Validation failed for ValidatingAdmissionPolicy 'labels' with binding 'labels-warn': configmaps should name their team"]
    );
}

#[test]
fn missing_params_and_broken_policies_meet_their_failure_policy() {
    let s = Server::start(1);
    let ns = namespace(&s, "broken");
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["secrets"]}]});
    create(
        &s,
        POLICIES,
        json!({"metadata": {"name": "needs-params"}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": rules,
            "validations": [{"expression": "true"}]}}),
    );
    create(
        &s,
        BINDINGS,
        json!({"metadata": {"name": "needs-params"}, "spec": {"policyName": "needs-params",
            "validationActions": ["Deny"],
            "paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"}}}),
    );
    let secrets = format!("/api/v1/namespaces/{ns}/secrets");
    let (code, body) = eventually(10, "the binding in effect", || {
        let r = s.post(&secrets, &json!({"metadata": {"name": unique("s")}}));
        (r.0 != 201).then_some(r)
    });
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().unwrap().ends_with(
        "ValidatingAdmissionPolicy 'needs-params' with binding 'needs-params' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    ), "{body}");
    assert_eq!(s.delete(&format!("{BINDINGS}/needs-params")).0, 200);

    // An expression that does not compile is refused when written, as
    // kube refuses it.
    let (code, body) = s.post(
        POLICIES,
        &json!({"metadata": {"name": "uncompilable"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.spec.nothing == undefinedThing"}]}}),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "spec.validations[0].expression"
    );
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.contains(
            "compilation failed: ERROR: <input>:1:24: undeclared reference to 'undefinedThing'"
        ),
        "{msg}"
    );

    // An expression that fails when evaluated: Fail refuses, Ignore admits.
    for (name, policy) in [("strict", "Fail"), ("lenient", "Ignore")] {
        create(
            &s,
            POLICIES,
            json!({"metadata": {"name": name}, "spec": {"failurePolicy": policy,
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}],
                    "objectSelector": {"matchLabels": {"policy": name}}},
                "validations": [{"expression": "object.data.nothing == 'x'"}]}}),
        );
        create(
            &s,
            BINDINGS,
            json!({"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}),
        );
    }
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let labelled = |name: String, policy: &str| json!({"metadata": {"name": name, "labels": {"policy": policy}}, "data": {"k": "v"}});
    let (code, body) = eventually(10, "the strict policy in effect", || {
        let r = s.post(&cms, &labelled(unique("c"), "strict"));
        (r.0 != 201).then_some(r)
    });
    assert_eq!(code, 422, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.contains("ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: ")
            && msg.contains("no such key: nothing"),
        "{msg}"
    );
    assert_eq!(
        s.post(&cms, &labelled("lenient-1".into(), "lenient")).0,
        201
    );
}

/// Waits for the status controller to report the policy's type check for
/// its current generation, and answers its warnings.
fn type_checked(s: &Server, name: &str, generation: i64) -> Vec<Value> {
    eventually(10, "the policy's type check", || {
        let (code, p) = s.get(&format!("{POLICIES}/{name}"));
        assert_eq!(code, 200, "{p}");
        (p["status"]["observedGeneration"] == generation && p["status"]["typeChecking"].is_object())
            .then(|| {
                p["status"]["typeChecking"]["expressionWarnings"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
    })
}

fn policy(name: &str, group: &str, resource: &str, validations: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": [resource]}]},
        "validations": validations}})
}

#[test]
fn type_errors_are_reported_in_the_policys_status() {
    let s = Server::start(2);
    create(
        &s,
        POLICIES,
        policy(
            "typed",
            "apps",
            "deployments",
            json!([{"expression": "object.spec.replicas > 1",
                "messageExpression": "'got ' + string(object.spec.replicas)"}]),
        ),
    );
    assert!(type_checked(&s, "typed", 1).is_empty());

    create(
        &s,
        POLICIES,
        policy(
            "confused",
            "apps",
            "deployments",
            json!([{"expression": "object.spec.replicas > '1'",
                "messageExpression": "'wants replicas > 1, got ' + object.spec.replicas"}]),
        ),
    );
    let warnings = type_checked(&s, "confused", 1);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    assert_eq!(
        warnings[0]["warning"],
        "apps/v1, Kind=Deployment: compilation failed: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^\n"
    );
    assert_eq!(
        warnings[1]["fieldRef"],
        "spec.validations[0].messageExpression"
    );
    assert!(warnings[1]["warning"]
        .as_str()
        .unwrap()
        .contains("found no matching overload for '_+_' applied to '(string, int)'"));

    // A custom resource is checked against its CRD's schema, and a new
    // generation is checked again.
    let group = "stable.typecheck.example.com";
    let (code, crd) = s.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &json!({"metadata": {"name": format!("crontabs.{group}")}, "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"}, "replicas": {"type": "integer"}}}}}}}]}}),
    );
    assert_eq!(code, 201, "{crd}");
    eventually(10, "the CRD served", || {
        (s.get(&format!("/apis/{group}/v1")).0 == 200).then_some(())
    });
    let mut crontabs = policy(
        "crontabs",
        group,
        "crontabs",
        json!([{"expression": "object.spec.replicas > 1 && object.metadata.name != ''"}]),
    );
    create(&s, POLICIES, crontabs.clone());
    assert!(type_checked(&s, "crontabs", 1).is_empty());
    let (_, current) = s.get(&format!("{POLICIES}/crontabs"));
    crontabs["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    crontabs["spec"]["validations"] = json!([
        {"expression": "object.spec.replicas > '1'"},
        {"expression": "object.spec.maxRetries < 10"}]);
    let (code, body) = s.put(&format!("{POLICIES}/crontabs"), &crontabs);
    assert_eq!(code, 200, "{body}");
    let warnings = type_checked(&s, "crontabs", 2);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[1]["fieldRef"], "spec.validations[1].expression");
    let text = warnings[1]["warning"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("{group}/v1, Kind=CronTab: compilation failed: ")),
        "{text}"
    );
    assert!(text.contains("undefined field 'maxRetries'"), "{text}");
}

#[test]
fn the_authorizer_variable_asks_rbac() {
    let s = Server::start(2);
    let ns = namespace(&s, "authorized");
    create(
        &s,
        POLICIES,
        json!({"metadata": {"name": "reader-may-read"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "variables": [{"name": "decision", "expression":
                "authorizer.serviceAccount(object.metadata.namespace, 'reader').group('').resource('secrets').namespace(object.metadata.namespace).check('get')"}],
            "validations": [
                {"expression": "variables.decision.allowed()",
                    "messageExpression": "'reader may not get secrets: ' + variables.decision.reason()"},
                // The requester (system:masters here) may do what it does.
                {"expression": "authorizer.requestResource.check('create').allowed()"}]}}),
    );
    create(
        &s,
        BINDINGS,
        // Resources named by a namespace selector alone: every resource
        // the policy matches, in that namespace (as e2e's bindings).
        json!({"metadata": {"name": "reader-may-read-binding"},
            "spec": {"policyName": "reader-may-read", "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}}),
    );
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let (code, body) = eventually(10, "the policy in effect", || {
        let (code, body) = s.post(&cms, &configmap(&unique("cm"), json!({})));
        (code != 201).then_some((code, body))
    });
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: reader may not get secrets:"),
        "{body}"
    );
    // Granted by RBAC: the same check now passes.
    create(
        &s,
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"),
        json!({"metadata": {"name": "secret-reader"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
    );
    create(
        &s,
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
        json!({"metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "secret-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}]}),
    );
    eventually(10, "the grant seen by the policy", || {
        (s.post(&cms, &configmap(&unique("cm"), json!({}))).0 == 201).then_some(())
    });
}
