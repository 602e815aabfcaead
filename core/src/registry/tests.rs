use super::*;
use crate::catalog::Catalog;
use serde_json::json;

fn info(plural: &str, group: &str) -> ResourceInfo {
    let snap = Catalog::with_builtins().snapshot();
    let version = "v1";
    (**snap.lookup(group, version, plural).unwrap()).clone()
}

fn ctx() -> CreateContext<'static> {
    CreateContext {
        uid: "u-1",
        now: "2026-01-01T00:00:00Z",
    }
}

#[test]
fn create_sets_server_fields_and_resets_status() {
    let deploy = info("deployments", "apps");
    let mut o = json!({"metadata": {"name": "d", "namespace": "n", "resourceVersion": "9", "uid": "client"}, "spec": {"replicas": 1}, "status": {"replicas": 5}});
    prepare_for_create(&deploy, &mut o, &ctx());
    assert_eq!(o["metadata"]["uid"], "u-1");
    assert_eq!(o["metadata"]["generation"], 1);
    assert!(o["metadata"].get("resourceVersion").is_none());
    assert_eq!(
        o["status"],
        json!({}),
        "status is reset on create for kinds with a status subresource, to the empty struct kube prints"
    );
    let svc = info("services", "");
    let mut s = json!({"metadata": {"name": "s"}, "spec": {}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}});
    prepare_for_create(&svc, &mut s, &ctx());
    assert_eq!(s["status"], json!({"loadBalancer": {}}));
    let pod = info("pods", "");
    let mut p = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}, "status": {"phase": "Running"}});
    prepare_for_create(&pod, &mut p, &ctx());
    assert_eq!(
        p["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"}),
        "requests default to limits before the class is computed"
    );

    let node = info("nodes", "");
    let mut n =
        json!({"metadata": {"name": "n1", "namespace": "x"}, "status": {"capacity": {"cpu": "2"}}});
    prepare_for_create(&node, &mut n, &ctx());
    assert_eq!(
        n["status"]["capacity"]["cpu"], "2",
        "nodes keep status on create"
    );
    assert!(
        n["metadata"].get("namespace").is_none(),
        "cluster-scoped objects drop a namespace"
    );
}

#[test]
fn update_keeps_status_and_bumps_generation_on_spec_change() {
    let deploy = info("deployments", "apps");
    let mut old = json!({"metadata": {"name": "d", "uid": "u", "creationTimestamp": "t", "generation": 3}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
    // Stored objects are defaulted; an update is compared with that form.
    crate::defaults::apply("apps", "Deployment", &mut old);
    let mut same = json!({"metadata": {"name": "d", "labels": {"a": "b"}}, "spec": {"replicas": 1}, "status": {"replicas": 9}});
    prepare_for_update(&deploy, &mut same, &old);
    assert_eq!(
        same["metadata"]["generation"], 3,
        "metadata-only change keeps generation"
    );
    assert_eq!(
        same["status"]["replicas"], 1,
        "PUT on the main resource leaves status alone"
    );
    assert_eq!(same["metadata"]["uid"], "u");
    let mut changed = json!({"metadata": {"name": "d"}, "spec": {"replicas": 2}});
    prepare_for_update(&deploy, &mut changed, &old);
    assert_eq!(changed["metadata"]["generation"], 4);
    // A top-level field only one side has is a change too.
    let cm_old = json!({"metadata": {"name": "c", "generation": 1}, "data": {"a": "b"}});
    let mut tracked = deploy.clone();
    tracked.group = String::new();
    tracked.kind = "ConfigMap".into();
    for (new, gen) in [
        (json!({"metadata": {"name": "c"}, "data": {"a": "b"}}), 1),
        (json!({"metadata": {"name": "c"}}), 2),
        (
            json!({"metadata": {"name": "c"}, "data": {"a": "b"}, "binaryData": {}}),
            2,
        ),
    ] {
        let mut new = new;
        prepare_for_update(&tracked, &mut new, &cm_old);
        assert_eq!(new["metadata"]["generation"], gen, "{new}");
    }
}

#[test]
fn status_update_takes_only_status() {
    let deploy = info("deployments", "apps");
    let old = json!({"metadata": {"name": "d", "labels": {"a": "b"}}, "spec": {"replicas": 1}});
    let body = json!({"metadata": {"name": "d", "labels": {"x": "y"}}, "spec": {"replicas": 7}, "status": {"readyReplicas": 1}});
    let out = prepare_for_status_update(&deploy, &body, &old);
    assert_eq!(out["spec"]["replicas"], 1);
    assert_eq!(out["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(out["status"]["readyReplicas"], 1);
}

#[test]
fn secrets_fold_string_data() {
    let secret = info("secrets", "");
    let mut s = json!({"metadata": {"name": "s", "namespace": "n"}, "data": {"a": "eA=="}, "stringData": {"p": "hunter2", "a": "y"}});
    prepare_for_create(&secret, &mut s, &ctx());
    assert_eq!(s["type"], "Opaque");
    assert!(s.get("stringData").is_none());
    assert_eq!(s["data"]["p"], "aHVudGVyMg==");
    assert_eq!(s["data"]["a"], "eQ==", "stringData wins over data");
}

#[test]
fn validation_reports_every_cause() {
    let cm = info("configmaps", "");
    let o = json!({"metadata": {"name": "Bad_Name", "namespace": "n", "labels": {"ok": "v", "bad key!": "v"}}});
    let causes = validate_object(&cm, &o);
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert!(fields.contains(&"metadata.name"), "{causes:?}");
    assert!(
        fields.iter().any(|f| f.starts_with("metadata.labels")),
        "{causes:?}"
    );
    let good = json!({"metadata": {"name": "good", "namespace": "n", "labels": {"a": "b"}}});
    assert!(validate_object(&cm, &good).is_empty());
    let ns = info("namespaces", "");
    assert!(
        !validate_object(&ns, &json!({"metadata": {"name": "has.dot"}})).is_empty(),
        "namespaces are DNS labels"
    );
}

#[test]
fn namespaces_always_start_with_the_kubernetes_finalizer() {
    let ns = info("namespaces", "");
    for (given, want) in [
        (json!(null), json!(["kubernetes"])),
        (json!([]), json!(["kubernetes"])),
        (
            json!(["example.com/x"]),
            json!(["example.com/x", "kubernetes"]),
        ),
        (json!(["kubernetes"]), json!(["kubernetes"])),
    ] {
        let mut o = json!({"metadata": {"name": "n"}, "spec": {"finalizers": given}});
        if given.is_null() {
            o["spec"] = json!({});
        }
        prepare_for_create(&ns, &mut o, &ctx());
        assert_eq!(o["spec"]["finalizers"], want);
        assert_eq!(o["status"]["phase"], "Active");
    }
}
