//! The admission chain runs on every write path: POST, PUT (update and
//! create-on-update), each patch type, server-side apply, the status,
//! scale and finalize subresources, DELETE and deletecollection, dry run
//! or not. Pinned through kube's own plugins: NamespaceLifecycle (on by
//! default) and AlwaysDeny (turned on by flag).

mod common;

use common::{configmap, namespace, Server};
use serde_json::{json, Value};

const DENIED: &str = "admission control is denying all modifications";

fn assert_not_found_namespace(code: u16, body: &Value, ns: &str) {
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["reason"], "NotFound", "{body}");
    assert_eq!(body["details"]["kind"], "namespaces", "{body}");
    assert_eq!(body["details"]["name"], ns, "{body}");
}

#[test]
fn namespace_lifecycle_guards_every_create_path() {
    let s = Server::start(2);
    let cm = |name: &str| configmap(name, json!({}));
    // A namespace that does not exist: 404 for the namespace, whichever
    // way the object would be created.
    let (code, body) = s.post("/api/v1/namespaces/nowhere/configmaps", &cm("a"));
    assert_not_found_namespace(code, &body, "nowhere");
    let (code, body) = s.post("/api/v1/namespaces/nowhere/configmaps?dryRun=All", &cm("a"));
    assert_not_found_namespace(code, &body, "nowhere");
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": "nowhere"},
        "spec": {"ports": [{"port": 80}]}});
    let (code, body) = s.put("/api/v1/namespaces/nowhere/services/svc", &service);
    assert_not_found_namespace(code, &body, "nowhere");
    let (code, body) = s.apply_yaml(
        "/api/v1/namespaces/nowhere/configmaps/applied?fieldManager=t",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n",
    );
    assert_not_found_namespace(code, &body, "nowhere");

    // A terminating namespace (held open by a finalizer): 403 with kube's
    // NamespaceTerminating cause, on every create path.
    let ns = namespace(&s, "closing");
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{ns}/secrets"),
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(code, 201);
    let (code, body) = s.delete(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(code, 200, "{body}");
    let terminating = |code: u16, body: &Value| {
        assert_eq!(code, 403, "{body}");
        let causes = body["details"]["causes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            causes.iter().any(|c| c["reason"] == "NamespaceTerminating"),
            "{body}"
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .ends_with("because it is being terminated"),
            "{body}"
        );
    };
    let (code, body) = s.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &cm("late"));
    terminating(code, &body);
    let mut late_service = service.clone();
    late_service["metadata"]["namespace"] = json!(ns);
    let (code, body) = s.put(
        &format!("/api/v1/namespaces/{ns}/services/svc"),
        &late_service,
    );
    terminating(code, &body);
    let (code, body) = s.apply_yaml(
        &format!("/api/v1/namespaces/{ns}/configmaps/applied?fieldManager=t"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n",
    );
    terminating(code, &body);
    // Updates of what is already there still go through (the finalizer
    // holder must be able to let go).
    let (code, body) = s.patch(
        &format!("/api/v1/namespaces/{ns}/secrets/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(code, 200, "{body}");
    s.wait_gone(&format!("/api/v1/namespaces/{ns}"));

    // The system namespaces cannot be deleted; others can.
    for protected in ["default", "kube-system", "kube-public"] {
        let (code, body) = s.delete(&format!("/api/v1/namespaces/{protected}"));
        assert_eq!(code, 403, "{body}");
        assert_eq!(
            body["message"],
            format!("namespaces \"{protected}\" is forbidden: this namespace may not be deleted")
        );
    }
    // A review asks about a namespace; it need not exist.
    let (code, body) = s.post(
        "/apis/authorization.k8s.io/v1/namespaces/nowhere/localsubjectaccessreviews",
        &json!({"spec": {"user": "u", "resourceAttributes": {"namespace": "nowhere", "verb": "get", "resource": "pods"}}}),
    );
    assert_eq!(code, 201, "{body}");
}

/// Every write path meets the chain: with AlwaysDeny on, each answers
/// kube's 403 and nothing stored changes.
#[test]
fn always_deny_refuses_every_write_path() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut s = Server::launch(1, &data, &[]).unwrap();
    let ns = namespace(&s, "frozen");
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let (code, before) = s.post(&base, &configmap("cm", json!({"a": "1"})));
    assert_eq!(code, 201, "{before}");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let (code, body) = s.post(&deployments, &deployment);
    assert_eq!(code, 201, "{body}");
    s.stop();

    let s = Server::launch(1, &data, &["--enable-admission-plugins=AlwaysDeny"]).unwrap();
    let (_, stored) = s.get(&format!("{base}/cm"));
    let (_, deployment_before) = s.get(&format!("{deployments}/web"));
    let mut replaced = stored.clone();
    replaced["data"] = json!({"a": "2"});
    let mut status = deployment_before.clone();
    status["status"] = json!({"observedGeneration": 1});
    let attempts: Vec<(&str, String, &str, Vec<u8>)> = vec![
        (
            "POST",
            base.clone(),
            "application/json",
            configmap("new", json!({})).to_string().into(),
        ),
        (
            "POST",
            format!("{base}?dryRun=All"),
            "application/json",
            configmap("new", json!({})).to_string().into(),
        ),
        (
            "PUT",
            format!("{base}/cm"),
            "application/json",
            replaced.to_string().into(),
        ),
        (
            "PUT",
            format!("{base}/cm?dryRun=All"),
            "application/json",
            replaced.to_string().into(),
        ),
        (
            "PATCH",
            format!("{base}/cm"),
            "application/merge-patch+json",
            br#"{"data":{"a":"3"}}"#.to_vec(),
        ),
        (
            "PATCH",
            format!("{base}/cm"),
            "application/strategic-merge-patch+json",
            br#"{"data":{"a":"3"}}"#.to_vec(),
        ),
        (
            "PATCH",
            format!("{base}/cm"),
            "application/json-patch+json",
            br#"[{"op":"add","path":"/data","value":{"a":"3"}}]"#.to_vec(),
        ),
        (
            "PATCH",
            format!("{base}/cm?fieldManager=t"),
            "application/apply-patch+yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: \"4\"\n".to_vec(),
        ),
        (
            "PATCH",
            format!("{base}/fresh?fieldManager=t"),
            "application/apply-patch+yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n".to_vec(),
        ),
        (
            "PUT",
            format!("{deployments}/web/status"),
            "application/json",
            status.to_string().into(),
        ),
        (
            "PATCH",
            format!("{deployments}/web/scale"),
            "application/merge-patch+json",
            br#"{"spec":{"replicas":3}}"#.to_vec(),
        ),
        (
            "PUT",
            format!("/api/v1/namespaces/{ns}/finalize"),
            "application/json",
            json!({"metadata": {"name": ns}, "spec": {"finalizers": []}})
                .to_string()
                .into(),
        ),
        (
            "DELETE",
            format!("{base}/cm"),
            "application/json",
            Vec::new(),
        ),
        ("DELETE", base.clone(), "application/json", Vec::new()),
        (
            "DELETE",
            format!("/api/v1/namespaces/{ns}"),
            "application/json",
            Vec::new(),
        ),
    ];
    for (method, path, content_type, body) in attempts {
        let (code, answer) = s.send(method, &path, content_type, &body);
        assert_eq!(code, 403, "{method} {path}: {answer}");
        assert_eq!(answer["reason"], "Forbidden", "{method} {path}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().ends_with(DENIED),
            "{method} {path}: {answer}"
        );
    }
    // Reads still work, and nothing changed.
    let (code, after) = s.get(&format!("{base}/cm"));
    assert_eq!(code, 200);
    assert_eq!(after, stored);
    let (_, deployment_after) = s.get(&format!("{deployments}/web"));
    assert_eq!(deployment_after, deployment_before);
    let (code, _) = s.get(&format!("{base}/fresh"));
    assert_eq!(code, 404);
}

#[test]
fn admission_flags_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, says) in [
        (
            &["--enable-admission-plugins=Bogus"][..],
            "not a known plugin",
        ),
        (
            &["--disable-admission-plugins=Nope"][..],
            "not a known plugin",
        ),
        (
            &[
                "--enable-admission-plugins=AlwaysDeny",
                "--disable-admission-plugins=AlwaysDeny",
            ][..],
            "both enabled and disabled",
        ),
    ] {
        let log = Server::launch(1, &dir.path().join("data"), flags)
            .err()
            .unwrap_or_else(|| panic!("{flags:?} started"));
        assert!(log.contains(says), "{flags:?}: {log}");
    }
    // Disabling the default plugin turns its checks off.
    let s = Server::start_with(1, &["--disable-admission-plugins=NamespaceLifecycle"]);
    let (code, body) = s.delete("/api/v1/namespaces/kube-public");
    assert_eq!(code, 200, "{body}");
}

/// kube's guaranteed update: with a plugin that sees every update
/// (AlwaysAdmit), an update is read, admitted, and written only if the
/// object is still the one read, and tried again when it is not — so
/// concurrent writers of one object all succeed and lose nothing.
#[test]
fn concurrent_updates_through_admission_lose_nothing() {
    let s = Server::start_with(2, &["--enable-admission-plugins=AlwaysAdmit"]);
    let path = "/api/v1/namespaces/default/configmaps/shared";
    let (code, body) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "shared"}, "data": {}}),
    );
    assert_eq!(code, 201, "{body}");
    let (writers, each) = (8, 12);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let s = &s;
            scope.spawn(move || {
                for i in 0..each {
                    let (code, body) = s.patch(
                        path,
                        "application/merge-patch+json",
                        &json!({"data": {format!("w{w}-{i}"): "x"}}),
                    );
                    assert_eq!(code, 200, "{body}");
                }
            });
        }
    });
    let (_, stored) = s.get(path);
    let keys = stored["data"].as_object().unwrap().len();
    assert_eq!(keys, writers * each, "{stored}");
}

/// An update that removes the last finalizer of an object being deleted
/// deletes it (kube's delete-during-update), on the read-admit-write path
/// too: the registry decides it, storage carries it out.
#[test]
fn removing_the_last_finalizer_through_admission_deletes_the_object() {
    let s = Server::start_with(1, &["--enable-admission-plugins=AlwaysAdmit"]);
    let path = "/api/v1/namespaces/default/configmaps/held";
    let (code, body) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = s.delete(path);
    assert_eq!(code, 200, "{body}");
    let (code, marked) = s.get(path);
    assert_eq!(code, 200, "{marked}");
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    let (code, body) = s.patch(
        path,
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = s.get(path);
    assert_eq!(code, 404, "{body}");
}
