//! Create, get, update, status, delete over HTTP against the real binary.

mod common;
use common::*;
use serde_json::json;

each_shard_count!(create_get_update_delete, |shards| {
    let s = Server::start(shards);
    let ns = namespace(&s, "crud");
    let (code, created) = s.post(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &configmap("a", json!({"x": "1"})),
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["metadata"]["namespace"], "crud");
    assert!(created["metadata"]["uid"].as_str().unwrap().len() >= 32);
    assert!(created["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    assert!(
        created["metadata"].get("generation").is_none(),
        "configmaps do not track generation"
    );
    let rv1 = rv(&created);

    let (code, got) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps/a"));
    assert_eq!(code, 200);
    assert_eq!(got, created, "GET serves what create stored");

    let mut changed = got.clone();
    changed["data"]["k"] = json!("v2");
    let (code, updated) = s.put(&format!("/api/v1/namespaces/{ns}/configmaps/a"), &changed);
    assert_eq!(code, 200, "{updated}");
    assert!(rv(&updated) > rv1);
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        updated["metadata"]["creationTimestamp"],
        created["metadata"]["creationTimestamp"]
    );

    // The same body again (stale resourceVersion) conflicts.
    let (code, conflict) = s.put(&format!("/api/v1/namespaces/{ns}/configmaps/a"), &changed);
    assert_eq!(code, 409);
    assert_eq!(conflict["reason"], "Conflict");
    assert_eq!(
        conflict["message"],
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Unconditional update (no resourceVersion) is allowed for configmaps.
    let mut unconditional = changed.clone();
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    unconditional["data"]["k"] = json!("v3");
    let (code, u2) = s.put(
        &format!("/api/v1/namespaces/{ns}/configmaps/a"),
        &unconditional,
    );
    assert_eq!(code, 200, "{u2}");
    assert!(rv(&u2) > rv(&updated));

    // A no-op update keeps the resourceVersion (nothing is written).
    let (code, same) = s.put(&format!("/api/v1/namespaces/{ns}/configmaps/a"), &u2);
    assert_eq!(code, 200);
    assert_eq!(rv(&same), rv(&u2));

    let (code, status) = s.delete(&format!("/api/v1/namespaces/{ns}/configmaps/a"));
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "a");
    assert_eq!(status["details"]["kind"], "configmaps");

    let (code, nf) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps/a"));
    assert_eq!(code, 404);
    assert_eq!(nf["reason"], "NotFound");
    assert_eq!(nf["message"], "configmaps \"a\" not found");
    let (code, _) = s.delete(&format!("/api/v1/namespaces/{ns}/configmaps/a"));
    assert_eq!(code, 404);
});

each_shard_count!(create_conflicts_and_generate_name, |shards| {
    let s = Server::start(shards);
    let (code, _) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("dup", json!({})),
    );
    assert_eq!(code, 201);
    let (code, body) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("dup", json!({})),
    );
    assert_eq!(code, 409);
    assert_eq!(body["reason"], "AlreadyExists");
    assert_eq!(body["message"], "configmaps \"dup\" already exists");

    let mut names = std::collections::HashSet::new();
    for _ in 0..20 {
        let (code, body) = s.post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"generateName": "gen-"}, "data": {}}),
        );
        assert_eq!(code, 201, "{body}");
        let name = body["metadata"]["name"].as_str().unwrap().to_string();
        assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
        assert_eq!(body["metadata"]["generateName"], "gen-");
        assert!(names.insert(name));
    }
});

each_shard_count!(status_subresource_and_generation, |shards| {
    let s = Server::start(shards);
    let deploy = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {"replicas": 42}
    });
    let base = "/apis/apps/v1/namespaces/default/deployments";
    let (code, d) = s.post(base, &deploy);
    assert_eq!(code, 201, "{d}");
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(
        d["status"],
        json!({}),
        "status set on create is dropped (kube prints the empty struct): {d}"
    );

    let mut st = d.clone();
    st["status"] = json!({"replicas": 1, "readyReplicas": 1});
    st["spec"]["replicas"] = json!(5);
    let (code, after_status) = s.put(&format!("{base}/web/status"), &st);
    assert_eq!(code, 200, "{after_status}");
    assert_eq!(after_status["status"]["readyReplicas"], 1);
    assert_eq!(
        after_status["spec"]["replicas"], 1,
        "status update ignores spec"
    );
    assert_eq!(after_status["metadata"]["generation"], 1);

    let mut spec = after_status.clone();
    spec["spec"]["replicas"] = json!(3);
    spec["status"] = json!({"readyReplicas": 99});
    let (code, after_spec) = s.put(&format!("{base}/web"), &spec);
    assert_eq!(code, 200, "{after_spec}");
    assert_eq!(after_spec["spec"]["replicas"], 3);
    assert_eq!(
        after_spec["status"]["readyReplicas"], 1,
        "main update leaves status alone"
    );
    assert_eq!(after_spec["metadata"]["generation"], 2);

    let mut labels_only = after_spec.clone();
    labels_only["metadata"]["labels"] = json!({"team": "a"});
    let (code, after_labels) = s.put(&format!("{base}/web"), &labels_only);
    assert_eq!(code, 200);
    assert_eq!(
        after_labels["metadata"]["generation"], 2,
        "metadata changes keep generation"
    );

    let (code, got) = s.get(&format!("{base}/web/status"));
    assert_eq!(code, 200);
    assert_eq!(got["kind"], "Deployment");
});

each_shard_count!(cluster_scoped_and_delete_returns, |shards| {
    let s = Server::start(shards);
    let (code, node) = s.post(
        "/api/v1/nodes",
        &json!({"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4"}}}),
    );
    assert_eq!(code, 201, "{node}");
    assert_eq!(
        node["status"]["capacity"]["cpu"], "4",
        "nodes keep status on create"
    );
    assert!(node["metadata"].get("namespace").is_none());
    let (code, pod) = s.post(
        "/api/v1/namespaces/default/pods",
        &json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}),
    );
    assert_eq!(code, 201, "{pod}");
    assert_eq!(pod["status"]["phase"], "Pending");
    // Pods answer DELETE with the object, as kube does.
    let (code, deleted) = s.delete("/api/v1/namespaces/default/pods/p");
    assert_eq!(code, 200);
    assert_eq!(deleted["kind"], "Pod");
    assert!(
        rv(&deleted) > rv(&pod),
        "the deleted object carries the deletion's revision"
    );
    // Preconditions.
    let (code, body) = s.delete_with(
        "/api/v1/nodes/n1",
        &json!({"preconditions": {"uid": "nope"}}),
    );
    assert_eq!(code, 409, "{body}");
    let uid = node["metadata"]["uid"].as_str().unwrap();
    let (code, _) = s.delete_with("/api/v1/nodes/n1", &json!({"preconditions": {"uid": uid}}));
    assert_eq!(code, 200);
});

each_shard_count!(namespace_lifecycle, |shards| {
    let s = Server::start(shards);
    let (code, list) = s.get("/api/v1/namespaces");
    assert_eq!(code, 200);
    assert_eq!(
        names(&list),
        vec!["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    for protected in ["default", "kube-system", "kube-public"] {
        let (code, body) = s.delete(&format!("/api/v1/namespaces/{protected}"));
        assert_eq!(code, 403, "{body}");
        assert_eq!(body["reason"], "Forbidden");
    }
    let ns = namespace(&s, "doomed");
    for i in 0..10 {
        let (code, _) = s.post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap(&format!("c{i}"), json!({})),
        );
        assert_eq!(code, 201);
    }
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{ns}/secrets"),
        &json!({"metadata": {"name": "s"}}),
    );
    assert_eq!(code, 201);
    let (code, _) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("survivor", json!({})),
    );
    assert_eq!(code, 201);
    let (code, body) = s.delete(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "Namespace");
    assert_eq!(body["status"]["phase"], "Terminating");
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    // The namespace controller empties it, then it goes.
    s.wait_gone(&format!("/api/v1/namespaces/{ns}"));
    let (_, cms) = s.get("/api/v1/configmaps?fieldSelector=metadata.namespace%21%3Dkube-system");
    assert_eq!(names(&cms), vec!["survivor"]);
    let (_, secrets) = s.get("/api/v1/secrets");
    assert!(names(&secrets).is_empty());
    // Creating in a namespace that is gone is 404.
    let (code, body) = s.post(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &configmap("late", json!({})),
    );
    assert_eq!(code, 404);
    assert_eq!(body["message"], "namespaces \"doomed\" not found");
});

each_shard_count!(patch_merge_and_json, |shards| {
    let s = Server::start(shards);
    let (_, c) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("p", json!({"a": "1"})),
    );
    let (code, merged) = s.patch(
        "/api/v1/namespaces/default/configmaps/p",
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"b": "2", "a": null}}}),
    );
    assert_eq!(code, 200, "{merged}");
    assert_eq!(merged["metadata"]["labels"], json!({"b": "2"}));
    assert!(rv(&merged) > rv(&c));
    let (code, jp) = s.patch(
        "/api/v1/namespaces/default/configmaps/p",
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/data/k", "value": "v"}, {"op": "replace", "path": "/data/k", "value": "w"}]),
    );
    assert_eq!(code, 200, "{jp}");
    assert_eq!(jp["data"]["k"], "w");
    let (code, failed) = s.patch(
        "/api/v1/namespaces/default/configmaps/p",
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/data/k", "value": "nope"}]),
    );
    assert_eq!(code, 422, "{failed}");
    let (code, _) = s.patch(
        "/api/v1/namespaces/default/configmaps/missing",
        "application/merge-patch+json",
        &json!({}),
    );
    assert_eq!(code, 404);
    // A stale resourceVersion in a patch is a precondition.
    let (code, _) = s.patch(
        "/api/v1/namespaces/default/configmaps/p",
        "application/merge-patch+json",
        &json!({"metadata": {"resourceVersion": c["metadata"]["resourceVersion"]}}),
    );
    assert_eq!(code, 409);
});

#[test]
fn dry_run_stores_nothing() {
    let s = Server::start(2);
    let (code, body) = s.post(
        "/api/v1/namespaces/default/configmaps?dryRun=All",
        &configmap("dry", json!({})),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["metadata"]["name"], "dry");
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps/dry");
    assert_eq!(code, 404);
    let (code, _) = s.post(
        "/api/v1/namespaces/default/configmaps?dryRun=Bogus",
        &configmap("dry", json!({})),
    );
    assert_eq!(code, 422);
}
