//! Impersonation: `Impersonate-*` headers and `kubectl --as/--as-group`,
//! each impersonated user, group, service account, uid and extra
//! authorized with the `impersonate` verb.

mod common;
use common::tls::rbac::{bind, cluster_role, role, rule, subject};
use common::tls::{kubectl, Who};
use common::*;
use serde_json::json;

#[test]
fn impersonation_allowed_and_refused() {
    let s = Server::start(2);
    namespace(&s, "ns-a");
    role(
        &s,
        "ns-a",
        "pod-reader",
        vec![rule(&["list"], &[""], &["pods"])],
    );
    bind(
        &s,
        "ns-a",
        "alice-reads",
        "Role",
        "pod-reader",
        vec![subject("User", "alice")],
    );
    let ivan = s.client(&Who::cert("ivan", &[]));
    let pods = "/api/v1/namespaces/ns-a/pods";

    // Without the impersonate verb: 403 naming what was asked for.
    let (code, body) = ivan.clone_with("Impersonate-User", "alice").get(pods);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"users "alice" is forbidden: User "ivan" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );

    // Allowed to impersonate alice (by name) and the dev group.
    cluster_role(
        &s,
        "impersonator",
        json!({}),
        vec![
            json!({"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["alice"]}),
            json!({"verbs": ["impersonate"], "apiGroups": [""], "resources": ["groups"], "resourceNames": ["dev"]}),
            json!({"verbs": ["impersonate"], "apiGroups": ["authentication.k8s.io"], "resources": ["uids"]}),
            json!({"verbs": ["impersonate"], "apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"], "resourceNames": ["read"]}),
        ],
    );
    bind(
        &s,
        "",
        "ivan-impersonates",
        "ClusterRole",
        "impersonator",
        vec![subject("User", "ivan")],
    );
    let (code, body) = ivan.clone_with("Impersonate-User", "alice").get(pods);
    assert_eq!(code, 200, "{body}");
    // Acting as alice means alice's permissions, not ivan's.
    let (code, body) = ivan
        .clone_with("Impersonate-User", "alice")
        .get("/api/v1/namespaces/ns-a/configmaps");
    assert_eq!(code, 403);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(r#"User "alice" cannot list"#),
        "{body}"
    );
    assert_eq!(ivan.clone_with("Impersonate-User", "bob").get(pods).0, 403);
    // Groups, uid and extras are checked one by one.
    let c = ivan
        .clone_with("Impersonate-User", "alice")
        .with_header("Impersonate-Group", "dev")
        .with_header("Impersonate-Uid", "u-123")
        .with_header("Impersonate-Extra-Scopes", "read");
    let (code, review) = c.post(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    );
    assert_eq!(code, 201, "{review}");
    let u = &review["status"]["userInfo"];
    assert_eq!(u["username"], "alice");
    assert_eq!(u["uid"], "u-123");
    assert_eq!(u["groups"], json!(["dev", "system:authenticated"]));
    assert_eq!(u["extra"]["scopes"], json!(["read"]));
    let bad_group = ivan
        .clone_with("Impersonate-User", "alice")
        .with_header("Impersonate-Group", "ops");
    assert_eq!(bad_group.get(pods).0, 403);
    let bad_extra = ivan
        .clone_with("Impersonate-User", "alice")
        .with_header("Impersonate-Extra-Scopes", "write");
    assert_eq!(bad_extra.get(pods).0, 403);
    // Groups without a user is not a request kube accepts.
    assert_eq!(ivan.clone_with("Impersonate-Group", "dev").get(pods).0, 500);

    // Service accounts are impersonated per namespace.
    let (code, body) = ivan
        .clone_with("Impersonate-User", "system:serviceaccount:ns-a:robot")
        .get(pods);
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains(r#"cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns-a""#), "{body}");

    // kubectl --as / --as-group.
    let kc = s.kubeconfig(&Who::cert("ivan", &[]));
    let (code, out, err) = kubectl(&kc, &["--as", "alice", "auth", "whoami"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("alice"), "{out}");
    let (code, _, err) = kubectl(&kc, &["--as", "alice", "get", "pods", "-n", "ns-a"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = kubectl(&kc, &["--as", "bob", "get", "pods", "-n", "ns-a"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot impersonate"), "{err}");
    let (code, _, _) = kubectl(
        &kc,
        &[
            "--as",
            "alice",
            "--as-group",
            "dev",
            "get",
            "pods",
            "-n",
            "ns-a",
        ],
    );
    assert_eq!(code, 0);
    let (code, _, err) = kubectl(
        &kc,
        &[
            "--as",
            "alice",
            "--as-group",
            "ops",
            "get",
            "pods",
            "-n",
            "ns-a",
        ],
    );
    assert_ne!(code, 0, "{err}");
    // An administrator may be anyone.
    let admin = s.kubeconfig(&Who::cert("root", &["system:masters"]));
    let (code, _, err) = kubectl(&admin, &["--as", "nobody", "get", "pods", "-n", "ns-a"]);
    assert_ne!(code, 0);
    assert!(err.contains(r#"User "nobody" cannot list"#), "{err}");
}
