//! PodSecurity: namespace labels choose the enforced, audited and warned
//! Pod Security Standards level; a privileged pod is refused in a
//! restricted namespace with kube's message, workloads only warn, bad
//! labels are refused, tightening a namespace warns about the pods
//! already in it, and the configuration file's exemptions hold.

mod common;
use common::*;
use serde_json::{json, Value};

fn labelled_namespace(s: &Server, name: &str, labels: Value) -> String {
    let (code, ns) = s.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": name, "labels": labels}}),
    );
    assert_eq!(code, 201, "{ns}");
    name.to_string()
}

fn bare(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"automountServiceAccountToken": false,
        "containers": [{"name": "c", "image": "nginx"}]}})
}

fn compliant(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"automountServiceAccountToken": false,
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "nginx", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

const RESTRICTED_BARE: &str = "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

#[test]
fn restricted_namespaces_refuse_what_breaks_the_standard() {
    let s = Server::start(2);
    let ns = labelled_namespace(
        &s,
        "locked",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    );
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let (code, body) = eventually(10, "the namespace's labels in effect", || {
        let (code, body) = s.post(&pods, &bare(&unique("bare")));
        (code != 201).then_some((code, body))
    });
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.ends_with(&format!(
            "is forbidden: violates PodSecurity \"restricted:latest\": {RESTRICTED_BARE}"
        )),
        "{msg}"
    );
    assert!(body["details"]["causes"].is_null(), "{body}");
    // A privileged pod, as the issue tried it.
    let mut privileged = compliant("root");
    privileged["spec"]["containers"][0]["securityContext"]["privileged"] = json!(true);
    let (code, body) = s.post(&pods, &privileged);
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("privileged (container \"c\" must not set securityContext.privileged=true)"),
        "{body}"
    );
    assert_eq!(s.post(&pods, &compliant("fine")).0, 201);
    // A Deployment is never refused: it warns.
    let (code, warnings, body) = s.send_warned(
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        "application/json",
        json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warnings,
        [format!(
            "would violate PodSecurity \"restricted:latest\": {RESTRICTED_BARE}"
        )]
    );
}

#[test]
fn labels_are_checked_and_tightening_warns_about_existing_pods() {
    let s = Server::start(1);
    let (code, body) = s.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "typo", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}}),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "Namespace \"typo\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
    let ns = labelled_namespace(&s, "open", json!({}));
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    for name in ["b-host", "a-host"] {
        let mut p = bare(name);
        p["spec"]["hostNetwork"] = json!(true);
        assert_eq!(s.post(&pods, &p).0, 201);
    }
    assert_eq!(s.post(&pods, &bare("plain")).0, 201);
    let (code, warnings, body) = s.send_warned(
        "PATCH",
        &format!("/api/v1/namespaces/{ns}"),
        "application/merge-patch+json",
        br#"{"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        warnings,
        [
            "existing pods in namespace \"open\" violate the new PodSecurity enforce level \"baseline:latest\"".to_string(),
            "a-host (and 1 other pod): host namespaces".to_string(),
        ]
    );
    // Warn mode: allowed, with a warning.
    let (code, _) = s.patch(
        &format!("/api/v1/namespaces/{ns}"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"pod-security.kubernetes.io/warn": "restricted"}}}),
    );
    assert_eq!(code, 200);
    let (code, warnings, _) = eventually(10, "the warn label in effect", || {
        let r = s.send_warned(
            "POST",
            &pods,
            "application/json",
            bare(&unique("w")).to_string().as_bytes(),
        );
        (!r.1.is_empty()).then_some(r)
    });
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        [format!(
            "would violate PodSecurity \"restricted:latest\": {RESTRICTED_BARE}"
        )]
    );
}

#[test]
fn exemptions_come_from_the_configuration_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults:\n      enforce: baseline\n    exemptions:\n      namespaces: [trusted]\n",
    )
    .unwrap();
    let flag = format!("--admission-control-config-file={}", file.display());
    let s = Server::start_with(1, &[&flag]);
    let mut host = bare("host");
    host["spec"]["hostPID"] = json!(true);
    // The default level applies to unlabelled namespaces…
    let plain = labelled_namespace(&s, "plain", json!({}));
    let (code, body) = eventually(10, "the namespace in the cache", || {
        let r = s.post(&format!("/api/v1/namespaces/{plain}/pods"), &host);
        (r.0 != 404).then_some(r)
    });
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("violates PodSecurity \"baseline:latest\": host namespaces (hostPID=true)"),
        "{body}"
    );
    // …but not to an exempt one.
    let trusted = labelled_namespace(&s, "trusted", json!({}));
    let (code, body) = s.post(&format!("/api/v1/namespaces/{trusted}/pods"), &host);
    assert_eq!(code, 201, "{body}");
}
