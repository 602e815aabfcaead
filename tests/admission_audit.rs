//! Admission in the audit log: a ValidatingAdmissionPolicy's Audit action
//! and audit annotations, and PodSecurity's enforce policy, appear as
//! annotations of the request's audit event.

mod common;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

fn audited(log: &std::path::Path, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["stage"] == "ResponseComplete"
                    && e["verb"] == "create"
                    && e["objectRef"]["name"].is_null()
                    && e["requestURI"]
                        .as_str()
                        .is_some_and(|u| u.contains("/configmaps"))
                    && e["annotations"]["labels/owner"] == name
            });
        if let Some(e) = found {
            return e;
        }
        assert!(Instant::now() < deadline, "no audit event for {name}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn policy_annotations_reach_the_audit_event() {
    let (s, log) = start_audited(1, POLICY);
    let ns = namespace(&s, "audited");
    let (code, p) = s.post(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        &json!({"metadata": {"name": "labels"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "'team' in object.metadata.labels", "message": "no team"}],
            "auditAnnotations": [{"key": "owner", "valueExpression": "object.metadata.labels.owner"}]}}),
    );
    assert_eq!(code, 201, "{p}");
    let (code, b) = s.post(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        &json!({"metadata": {"name": "labels-audit"}, "spec": {"policyName": "labels",
            "validationActions": ["Audit"]}}),
    );
    assert_eq!(code, 201, "{b}");
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    // Created (Audit never refuses) until the policy is in effect.
    let event = eventually(10, "an audited create", || {
        let owner = unique("owner");
        let (code, _) = s.post(
            &cms,
            &json!({"metadata": {"name": unique("cm"), "labels": {"owner": owner}}}),
        );
        assert_eq!(code, 201);
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains(&format!("\"labels/owner\":\"{owner}\"")) {
                return Some(audited(&log, &owner));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    });
    let failure: Value = serde_json::from_str(
        event["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .expect("the Audit action's annotation"),
    )
    .unwrap();
    assert_eq!(
        failure,
        json!([{"message": "no team", "policy": "labels", "binding": "labels-audit",
            "expressionIndex": 0, "validationActions": ["Audit"]}])
    );
}
