//! What the server puts in place at start for the rest of the control
//! plane: kube's bootstrap RBAC policy (so a real scheduler, controller
//! manager and their per-controller service accounts are authorized as
//! in kube), the system PriorityClasses and the kube-system ConfigMaps
//! components read.

mod common;
use common::*;
use serde_json::{json, Value};

fn allowed(s: &Server, user: &str, groups: &[&str], attrs: Value) -> bool {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups, "resourceAttributes": attrs}});
    let (code, out) = s.post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &review,
    );
    assert_eq!(code, 201, "{out}");
    out["status"]["allowed"] == true
}

#[test]
fn components_are_authorized_by_the_bootstrap_policy() {
    let s = Server::start(1);
    let auth = ["system:authenticated"];
    let sched = |attrs| allowed(&s, "system:kube-scheduler", &auth, attrs);
    assert!(sched(
        json!({"verb": "create", "resource": "pods", "subresource": "binding", "namespace": "default"})
    ));
    assert!(sched(json!({"verb": "watch", "resource": "nodes"})));
    assert!(sched(
        json!({"verb": "list", "group": "storage.k8s.io", "resource": "csinodes"})
    ));
    assert!(sched(
        json!({"verb": "update", "group": "coordination.k8s.io", "resource": "leases", "namespace": "kube-system", "name": "kube-scheduler"})
    ));
    assert!(!sched(
        json!({"verb": "create", "resource": "secrets", "namespace": "default"})
    ));
    let kcm = |attrs| allowed(&s, "system:kube-controller-manager", &auth, attrs);
    assert!(kcm(
        json!({"verb": "create", "resource": "serviceaccounts", "subresource": "token", "namespace": "kube-system"})
    ));
    assert!(!kcm(
        json!({"verb": "create", "resource": "pods", "namespace": "default"})
    ));
    // Each controller runs as its own service account, with its own role.
    let sa_groups = [
        "system:serviceaccounts",
        "system:serviceaccounts:kube-system",
        "system:authenticated",
    ];
    let rs = |attrs| {
        allowed(
            &s,
            "system:serviceaccount:kube-system:replicaset-controller",
            &sa_groups,
            attrs,
        )
    };
    assert!(rs(
        json!({"verb": "create", "resource": "pods", "namespace": "default"})
    ));
    assert!(rs(
        json!({"verb": "update", "group": "apps", "resource": "replicasets", "subresource": "status", "namespace": "default"})
    ));
    assert!(!rs(
        json!({"verb": "delete", "group": "apps", "resource": "deployments", "namespace": "default"})
    ));
    let (_, roles) = s.get("/apis/rbac.authorization.k8s.io/v1/clusterroles");
    let count = names(&roles)
        .iter()
        .filter(|n| n.starts_with("system:controller:"))
        .count();
    assert!(count >= 30, "{count} controller roles");
    let (code, lock) = s.get("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/system::leader-locking-kube-scheduler");
    assert_eq!(code, 200, "{lock}");
}

#[test]
fn system_priority_classes_and_kube_system_config_maps_exist() {
    let s = Server::start(1);
    for (name, value) in [
        ("system-node-critical", 2_000_001_000),
        ("system-cluster-critical", 2_000_000_000),
    ] {
        let (code, pc) = s.get(&format!(
            "/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
        ));
        assert_eq!((code, &pc["value"]), (200, &json!(value)), "{pc}");
    }
    let (code, cm) =
        s.get("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication");
    assert_eq!(code, 200, "{cm}");
    let ca = cm["data"]["client-ca-file"].as_str().unwrap();
    assert!(ca.contains("BEGIN CERTIFICATE"), "{cm}");
    let (code, cm) = s.get("/api/v1/namespaces/kube-system/configmaps/kube-apiserver-legacy-service-account-token-tracking");
    assert_eq!(code, 200, "{cm}");
    assert!(cm["data"]["since"].is_string());
}

/// Every namespace gets `kube-root-ca.crt` with the CA that signed the
/// server's certificate; the controller puts it back when it is changed
/// or deleted.
#[test]
fn every_namespace_gets_the_root_ca_config_map() {
    let s = Server::start_with(1, &["--controllers=*"]);
    let ca = std::fs::read_to_string(s.data_dir.join("pki").join("ca.crt")).unwrap();
    namespace(&s, "team-a");
    let path = "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt";
    let cm = eventually(10, "kube-root-ca.crt", || {
        let (code, cm) = s.get(path);
        (code == 200).then_some(cm)
    });
    assert_eq!(cm["data"]["ca.crt"], ca.as_str());
    let (code, _) = s.patch(
        path,
        "application/merge-patch+json",
        &json!({"data": {"ca.crt": "tampered"}}),
    );
    assert_eq!(code, 200);
    eventually(10, "the CA written back", || {
        let (_, cm) = s.get(path);
        (cm["data"]["ca.crt"] == ca.as_str()).then_some(())
    });
    assert_eq!(s.delete(path).0, 200);
    eventually(10, "kube-root-ca.crt again", || {
        (s.get(path).0 == 200).then_some(())
    });
}

/// Events expire `--event-ttl` after their last write, as kube's leased
/// events do; other objects stay.
#[test]
fn events_expire_after_the_event_ttl() {
    let s = Server::start_with(1, &["--event-ttl", "2s"]);
    let event = json!({"metadata": {"name": "short-lived"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Test", "message": "expires", "type": "Normal"});
    let path = "/api/v1/namespaces/default/events";
    assert_eq!(s.post(path, &event).0, 201);
    assert_eq!(
        s.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap("stays", json!({}))
        )
        .0,
        201
    );
    assert_eq!(s.get(&format!("{path}/short-lived")).0, 200);
    eventually(20, "the event expired", || {
        (s.get(&format!("{path}/short-lived")).0 == 404).then_some(())
    });
    assert_eq!(s.get("/api/v1/namespaces/default/configmaps/stays").0, 200);
}
