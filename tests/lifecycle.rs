//! Deletion lifecycle over HTTP: finalizers, graceful deletion of pods,
//! preconditions, namespace termination and the finalize subresource, and
//! the watch events each step produces.

mod common;
use common::*;
use serde_json::{json, Value};

fn held_configmap(name: &str) -> Value {
    json!({"metadata": {"name": name, "finalizers": ["example.com/hold"]}, "data": {"k": "v"}})
}

fn event(e: &Value) -> (String, String) {
    (
        e["type"].as_str().unwrap().to_string(),
        e["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

each_shard_count!(finalizers_hold_an_object_until_removed, |shards| {
    let s = Server::start(shards);
    let base = "/api/v1/namespaces/default/configmaps";
    let (code, created) = s.post(base, &held_configmap("held"));
    assert_eq!(code, 201, "{created}");
    let mut w = s.watch(&format!("{base}?watch=1&resourceVersion={}", rv(&created)));

    let (code, marked) = s.delete(&format!("{base}/held"));
    assert_eq!(code, 200, "{marked}");
    assert_eq!(
        marked["kind"], "ConfigMap",
        "a kept object is returned, not a Status"
    );
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    let e = w.next_event().unwrap();
    assert_eq!(event(&e), ("MODIFIED".into(), "held".into()));
    assert_eq!(
        e["object"]["metadata"]["deletionTimestamp"],
        marked["metadata"]["deletionTimestamp"]
    );

    // Still there; a second DELETE answers the same object and writes nothing.
    let (code, got) = s.get(&format!("{base}/held"));
    assert_eq!(code, 200);
    assert_eq!(rv(&got), rv(&marked));
    let (code, again) = s.delete(&format!("{base}/held"));
    assert_eq!(code, 200);
    assert_eq!(rv(&again), rv(&marked));

    // No new finalizers while deleting; other changes are fine.
    let (code, body) = s.patch(
        &format!("{base}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}),
    );
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        r#"no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/more"}"#
    ), "{body}");
    let (code, labelled) = s.patch(
        &format!("{base}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"x": "y"}}}),
    );
    assert_eq!(code, 200, "{labelled}");
    assert_eq!(
        labelled["metadata"]["deletionTimestamp"],
        marked["metadata"]["deletionTimestamp"]
    );
    assert_eq!(
        event(&w.next_event().unwrap()),
        ("MODIFIED".into(), "held".into())
    );

    // A create under the same name is told why it clashes.
    let (code, body) = s.post(base, &held_configmap("held"));
    assert_eq!(code, 409);
    assert_eq!(
        body["message"],
        "object is being deleted: configmaps \"held\" already exists"
    );

    // Emptying the finalizers deletes it: one DELETED event, no MODIFIED.
    let (code, last) = s.patch(
        &format!("{base}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(code, 200, "{last}");
    assert!(last["metadata"].get("finalizers").is_none());
    let e = w.next_event().unwrap();
    assert_eq!(event(&e), ("DELETED".into(), "held".into()));
    assert!(rv(&e["object"]) > rv(&labelled));
    let (code, _) = s.get(&format!("{base}/held"));
    assert_eq!(code, 404);
});

each_shard_count!(pods_on_nodes_are_deleted_gracefully, |shards| {
    let s = Server::start(shards);
    let base = "/api/v1/namespaces/default/pods";
    let pod = |name: &str, node: Option<&str>| {
        let mut spec = json!({"terminationGracePeriodSeconds": 30, "containers": [{"name": "c", "image": "i"}]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        json!({"metadata": {"name": name}, "spec": spec})
    };
    let (_, bound) = s.post(base, &pod("bound", Some("n1")));
    let mut w = s.watch(&format!("{base}?watch=1&resourceVersion={}", rv(&bound)));
    let before = chrono::Utc::now();
    let (code, marked) = s.delete(&format!("{base}/bound"));
    assert_eq!(code, 200, "{marked}");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    let at = chrono::DateTime::parse_from_rfc3339(
        marked["metadata"]["deletionTimestamp"].as_str().unwrap(),
    )
    .unwrap();
    let ahead = (at.with_timezone(&chrono::Utc) - before).num_seconds();
    assert!((28..=31).contains(&ahead), "deadline {ahead}s ahead");
    assert_eq!(marked["metadata"]["generation"], 2);
    assert_eq!(
        event(&w.next_event().unwrap()),
        ("MODIFIED".into(), "bound".into())
    );
    // Pending: a repeat or a longer grace changes nothing.
    let (code, same) = s.delete_with(&format!("{base}/bound"), &json!({"gracePeriodSeconds": 60}));
    assert_eq!(code, 200);
    assert_eq!(rv(&same), rv(&marked));
    // A shorter one moves the deadline.
    let (code, shorter) = s.delete(&format!("{base}/bound?gracePeriodSeconds=10"));
    assert_eq!(code, 200, "{shorter}");
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
    assert_eq!(
        event(&w.next_event().unwrap()),
        ("MODIFIED".into(), "bound".into())
    );
    // Grace 0 ends it: marked, then deleted.
    let (code, gone) = s.delete_with(&format!("{base}/bound"), &json!({"gracePeriodSeconds": 0}));
    assert_eq!(code, 200, "{gone}");
    let e = w.next_event().unwrap();
    assert_eq!(event(&e), ("MODIFIED".into(), "bound".into()));
    assert_eq!(e["object"]["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(
        event(&w.next_event().unwrap()),
        ("DELETED".into(), "bound".into())
    );
    // A pod never scheduled goes at once.
    let (_, unbound) = s.post(base, &pod("unbound", None));
    let (code, _) = s.delete(&format!("{base}/unbound"));
    assert_eq!(code, 200);
    let seen: Vec<(String, String)> = w
        .until(|e| e["type"] == "DELETED")
        .iter()
        .map(event)
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED".into(), "unbound".into()),
            ("MODIFIED".into(), "unbound".into()),
            ("DELETED".into(), "unbound".into())
        ]
    );
    let (code, _) = s.get(&format!("{base}/unbound"));
    assert_eq!(code, 404, "{unbound}");
});

each_shard_count!(preconditions_and_delete_options, |shards| {
    let s = Server::start(shards);
    let base = "/api/v1/namespaces/default/configmaps";
    let (_, c) = s.post(base, &configmap("pre", json!({})));
    let uid = c["metadata"]["uid"].as_str().unwrap();
    let (code, body) = s.delete_with(
        &format!("{base}/pre"),
        &json!({"preconditions": {"uid": "nope"}}),
    );
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["reason"], "Conflict");
    assert_eq!(body["message"], format!("Operation cannot be fulfilled on ConfigMap \"pre\": the UID in the precondition (nope) does not match the UID in record ({uid}). The object might have been deleted and then recreated"));
    let (code, body) = s.delete_with(
        &format!("{base}/pre"),
        &json!({"preconditions": {"resourceVersion": "1"}}),
    );
    assert_eq!(code, 409, "{body}");
    let (code, body) = s.delete_with(
        &format!("{base}/pre"),
        &json!({"propagationPolicy": "Orphan", "orphanDependents": true}),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["kind"], "DeleteOptions");
    let (code, body) = s.delete(&format!("{base}/pre?propagationPolicy=Sideways"));
    assert_eq!(code, 422, "{body}");
    let (code, body) = s.delete_with(
        &format!("{base}/pre"),
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid, "resourceVersion": c["metadata"]["resourceVersion"]}}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["details"]["uid"], uid);
    // The deprecated orphanDependents=false answers 202 for a kept object.
    let (_, _) = s.post(base, &held_configmap("held"));
    let (code, body) = s.delete_with(&format!("{base}/held"), &json!({"orphanDependents": false}));
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["kind"], "ConfigMap");
});

each_shard_count!(namespace_termination_waits_for_contents, |shards| {
    let s = Server::start(shards);
    let ns = namespace(&s, "doomed");
    for i in 0..6 {
        let (code, _) = s.post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap(&format!("c{i}"), json!({})),
        );
        assert_eq!(code, 201);
    }
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{ns}/secrets"),
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(code, 201);
    let (code, body) = s.delete(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Terminating");
    assert_eq!(body["spec"]["finalizers"], json!(["kubernetes"]));
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    // Creates are refused while it terminates.
    let (code, refused) = s.post(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &configmap("late", json!({})),
    );
    assert_eq!(code, 403, "{refused}");
    assert_eq!(refused["message"], "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated");
    // The controller empties what it can and reports what holds it.
    let conditions = eventually(30, "conditions naming the held secret", || {
        let (_, n) = s.get(&format!("/api/v1/namespaces/{ns}"));
        let c = n["status"]["conditions"].as_array().cloned()?;
        c.iter()
            .any(|c| c["type"] == "NamespaceFinalizersRemaining" && c["status"] == "True")
            .then_some(c)
    });
    let by_type = |t: &str| conditions.iter().find(|c| c["type"] == t).unwrap().clone();
    assert_eq!(
        by_type("NamespaceContentRemaining")["message"],
        "Some resources are remaining: secrets. has 1 resource instances"
    );
    assert_eq!(by_type("NamespaceFinalizersRemaining")["message"], "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances");
    assert_eq!(
        by_type("NamespaceDeletionContentFailure")["status"],
        "False"
    );
    let (_, cms) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps"));
    assert!(names(&cms).is_empty());
    let (_, held) = s.get(&format!("/api/v1/namespaces/{ns}/secrets/held"));
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    // A second DELETE answers the terminating namespace.
    let (code, again) = s.delete(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(
        (code, again["status"]["phase"].as_str()),
        (200, Some("Terminating"))
    );
    // Releasing the finalizer lets the namespace go.
    let (code, _) = s.patch(
        &format!("/api/v1/namespaces/{ns}/secrets/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(code, 200);
    s.wait_gone(&format!("/api/v1/namespaces/{ns}"));
});

#[test]
fn finalize_subresource_without_the_namespace_controller() {
    let s = Server::start_with(2, &["--controllers=-garbagecollector,-namespace"]);
    let ns = namespace(&s, "manual");
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &configmap("c", json!({})),
    );
    assert_eq!(code, 201);
    let (code, t) = s.delete(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(code, 200);
    let mut w = s.watch(&format!(
        "/api/v1/namespaces?watch=1&fieldSelector=metadata.name%3D{ns}&resourceVersion={}",
        rv(&t)
    ));
    // Nobody empties it: still there, still Terminating.
    let (_, cm) = s.get(&format!("/api/v1/namespaces/{ns}/configmaps/c"));
    assert_eq!(cm["metadata"]["name"], "c");
    let (code, body) = s.send(
        "GET",
        &format!("/api/v1/namespaces/{ns}/finalize"),
        "application/json",
        b"",
    );
    assert_eq!(code, 405, "{body}");
    let (code, body) = s.put(
        &format!("/api/v1/namespaces/{ns}/finalize"),
        &json!({"metadata": {"name": ns}, "spec": {"finalizers": ["bogus"]}}),
    );
    assert_eq!(code, 422, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("name is neither a standard finalizer name nor is it fully qualified"));
    let (code, body) = s.put(
        &format!("/api/v1/namespaces/{ns}/finalize"),
        &json!({"metadata": {"name": ns}, "spec": {"finalizers": ["kubernetes", "example.com/x"]}}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["spec"]["finalizers"],
        json!(["kubernetes", "example.com/x"])
    );
    assert_eq!(
        event(&w.next_event().unwrap()),
        ("MODIFIED".into(), ns.clone())
    );
    // A regular update cannot change spec.finalizers.
    let (code, body) = s.patch(
        &format!("/api/v1/namespaces/{ns}"),
        "application/merge-patch+json",
        &json!({"spec": {"finalizers": []}}),
    );
    assert_eq!(code, 200);
    assert_eq!(
        body["spec"]["finalizers"],
        json!(["kubernetes", "example.com/x"])
    );
    let (code, body) = s.put(
        &format!("/api/v1/namespaces/{ns}/finalize"),
        &json!({"metadata": {"name": ns}, "spec": {}}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        event(&w.next_event().unwrap()),
        ("DELETED".into(), ns.clone())
    );
    let (code, _) = s.get(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(code, 404);
    // The discovery document lists finalize as update-only.
    let (_, core) = s.get("/api/v1");
    let fin = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces/finalize")
        .unwrap()
        .clone();
    assert_eq!(fin["verbs"], json!(["update"]));
}

/// Every namespace gets a `default` ServiceAccount (kube-controller-
/// manager's serviceaccount controller, built in), again when it is
/// deleted; not when the controller is switched off.
#[test]
fn every_namespace_has_a_default_service_account() {
    let s = Server::start(2);
    namespace(&s, "team");
    let path = "/api/v1/namespaces/team/serviceaccounts/default";
    let uid = eventually(10, "the default service account", || {
        let (code, sa) = s.get(path);
        (code == 200).then(|| sa["metadata"]["uid"].as_str().unwrap().to_string())
    });
    for ns in ["default", "kube-system"] {
        eventually(10, "system namespaces' accounts", || {
            (s.get(&format!("/api/v1/namespaces/{ns}/serviceaccounts/default"))
                .0
                == 200)
                .then_some(())
        });
    }
    assert_eq!(s.delete(path).0, 200);
    eventually(10, "the default service account to come back", || {
        let (code, sa) = s.get(path);
        (code == 200 && sa["metadata"]["uid"] != uid.as_str()).then_some(())
    });
    let off = Server::start_with(
        1,
        &["--controllers=*,-serviceaccount,-root-ca-cert-publisher"],
    );
    namespace(&off, "team");
    // The controller would have made it by the time the namespace's own
    // write was visible plus a round of the controller loop.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(off.get(path).0, 404);
}
