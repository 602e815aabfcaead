//! The built-in garbage collector over HTTP: each propagation policy,
//! dangling owner references, dependents spread over shards, and the
//! collector switched off.

mod common;
use common::*;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// A ConfigMap owned by `owners` (uid, blockOwnerDeletion); owners are
/// ConfigMaps named after their uid's object.
fn dependent(name: &str, owners: &[(&Value, bool)], finalizers: &[&str]) -> Value {
    let refs: Vec<Value> = owners
        .iter()
        .map(|(o, block)| {
            json!({"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"],
                   "uid": o["metadata"]["uid"], "blockOwnerDeletion": block})
        })
        .collect();
    json!({"metadata": {"name": name, "ownerReferences": refs, "finalizers": finalizers}, "data": {}})
}

/// `writers` threads at once, each creating `each` dependents of `owner`
/// named `{prefix}-{writer}-{i}`.
fn create_dependents_at_once(s: &Server, owner: &Value, prefix: &str, writers: usize, each: usize) {
    std::thread::scope(|scope| {
        for t in 0..writers {
            scope.spawn(move || {
                for i in 0..each {
                    let name = format!("{prefix}-{t}-{i}");
                    create(s, CMS, &dependent(&name, &[(owner, false)], &[]));
                }
            });
        }
    });
}

fn create(s: &Server, path: &str, body: &Value) -> Value {
    let (code, v) = s.post(path, body);
    assert_eq!(code, 201, "{v}");
    v
}

fn exists(s: &Server, path: &str) -> Option<Value> {
    let (code, v) = s.get(path);
    (code == 200).then_some(v)
}

each_shard_count!(background_deletes_dependents_after_the_owner, |shards| {
    let s = Server::start(shards);
    let owner = create(&s, CMS, &configmap("owner", json!({})));
    let other = create(&s, CMS, &configmap("other", json!({})));
    for i in 0..8 {
        create(
            &s,
            CMS,
            &dependent(&format!("dep-{i}"), &[(&owner, false)], &[]),
        );
    }
    let shared = create(
        &s,
        CMS,
        &dependent("shared", &[(&owner, false), (&other, false)], &[]),
    );
    let (code, body) = s.delete_with(
        &format!("{CMS}/owner"),
        &json!({"propagationPolicy": "Background"}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "Status", "the owner itself goes at once");
    for i in 0..8 {
        s.wait_gone(&format!("{CMS}/dep-{i}"));
    }
    // A dependent with another live owner stays, minus the dead reference.
    let kept = eventually(30, "the dead owner reference dropped", || {
        let v = exists(&s, &format!("{CMS}/shared"))?;
        (v["metadata"]["ownerReferences"].as_array()?.len() == 1).then_some(v)
    });
    assert_eq!(
        kept["metadata"]["ownerReferences"][0]["uid"],
        other["metadata"]["uid"]
    );
    assert_eq!(kept["metadata"]["uid"], shared["metadata"]["uid"]);
});

each_shard_count!(foreground_waits_for_blocking_dependents, |shards| {
    let s = Server::start(shards);
    let owner = create(
        &s,
        "/apis/apps/v1/namespaces/default/deployments",
        &json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
        }),
    );
    create(
        &s,
        CMS,
        &dependent("blocking", &[(&owner, true)], &["example.com/hold"]),
    );
    create(&s, CMS, &dependent("free", &[(&owner, false)], &[]));
    let deploy = "/apis/apps/v1/namespaces/default/deployments/web";
    let (code, body) = s.delete_with(deploy, &json!({"propagationPolicy": "Foreground"}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    // Both dependents are deleted; the blocking one is held by its own finalizer.
    s.wait_gone(&format!("{CMS}/free"));
    eventually(30, "the blocking dependent marked", || {
        exists(&s, &format!("{CMS}/blocking"))?["metadata"]["deletionTimestamp"]
            .as_str()
            .map(|_| ())
    });
    let (code, still) = s.get(deploy);
    assert_eq!(code, 200, "the owner waits for its blocking dependent");
    assert_eq!(
        still["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let (code, _) = s.patch(
        &format!("{CMS}/blocking"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(code, 200);
    s.wait_gone(deploy);
});

each_shard_count!(
    foreground_cascades_through_generations_and_cycles,
    |shards| {
        let s = Server::start(shards);
        let top = create(&s, CMS, &configmap("top", json!({})));
        let mid = create(&s, CMS, &dependent("mid", &[(&top, true)], &[]));
        create(&s, CMS, &dependent("leaf", &[(&mid, true)], &[]));
        let (code, _) = s.delete_with(
            &format!("{CMS}/top"),
            &json!({"propagationPolicy": "Foreground"}),
        );
        assert_eq!(code, 200);
        for name in ["leaf", "mid", "top"] {
            s.wait_gone(&format!("{CMS}/{name}"));
        }
        // a owns b and b owns a, both blocking: the collector breaks the cycle.
        let a = create(&s, CMS, &configmap("a", json!({})));
        let b = create(&s, CMS, &dependent("b", &[(&a, true)], &[]));
        let back = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": b["metadata"]["uid"], "blockOwnerDeletion": true}]);
        let (code, _) = s.patch(
            &format!("{CMS}/a"),
            "application/merge-patch+json",
            &json!({"metadata": {"ownerReferences": back}}),
        );
        assert_eq!(code, 200);
        let (code, _) = s.delete_with(
            &format!("{CMS}/a"),
            &json!({"propagationPolicy": "Foreground"}),
        );
        assert_eq!(code, 200);
        s.wait_gone(&format!("{CMS}/a"));
        s.wait_gone(&format!("{CMS}/b"));
    }
);

each_shard_count!(orphan_keeps_dependents_and_drops_references, |shards| {
    let s = Server::start(shards);
    let owner = create(&s, CMS, &configmap("owner", json!({})));
    for i in 0..5 {
        create(
            &s,
            CMS,
            &dependent(&format!("dep-{i}"), &[(&owner, true)], &[]),
        );
    }
    let (code, body) = s.delete(&format!("{CMS}/owner?propagationPolicy=Orphan"));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));
    s.wait_gone(&format!("{CMS}/owner"));
    for i in 0..5 {
        let (code, d) = s.get(&format!("{CMS}/dep-{i}"));
        assert_eq!(code, 200, "orphans live on");
        assert!(d["metadata"].get("ownerReferences").is_none(), "{d}");
    }
    // The deprecated flag means the same.
    let owner = create(&s, CMS, &configmap("owner2", json!({})));
    create(&s, CMS, &dependent("dep-x", &[(&owner, false)], &[]));
    let (code, _) = s.delete_with(&format!("{CMS}/owner2"), &json!({"orphanDependents": true}));
    assert_eq!(code, 200);
    s.wait_gone(&format!("{CMS}/owner2"));
    let d = exists(&s, &format!("{CMS}/dep-x")).unwrap();
    assert!(d["metadata"].get("ownerReferences").is_none());
});

each_shard_count!(dangling_references_are_collected, |shards| {
    let s = Server::start(shards);
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}});
    create(&s, CMS, &dependent("orphaned", &[(&ghost, false)], &[]));
    s.wait_gone(&format!("{CMS}/orphaned"));
    // An owner recreated under the same name is not the owner.
    let first = create(&s, CMS, &configmap("phoenix", json!({})));
    let (code, _) = s.delete(&format!("{CMS}/phoenix"));
    assert_eq!(code, 200);
    create(&s, CMS, &configmap("phoenix", json!({})));
    create(&s, CMS, &dependent("of-the-first", &[(&first, false)], &[]));
    s.wait_gone(&format!("{CMS}/of-the-first"));
    // A cluster-scoped owner (a node) of a namespaced dependent.
    let node = create(&s, "/api/v1/nodes", &json!({"metadata": {"name": "n1"}}));
    create(&s, CMS, &dependent("on-node", &[(&node, false)], &[]));
    let (code, _) = s.delete("/api/v1/nodes/n1");
    assert_eq!(code, 200);
    s.wait_gone(&format!("{CMS}/on-node"));
});

#[test]
fn collector_switched_off_leaves_dependents() {
    let s = Server::start_with(
        2,
        &["--controllers=*,-garbagecollector,-root-ca-cert-publisher"],
    );
    let owner = create(&s, CMS, &configmap("owner", json!({})));
    create(&s, CMS, &dependent("dep", &[(&owner, true)], &[]));
    let (code, _) = s.delete(&format!("{CMS}/owner"));
    assert_eq!(code, 200);
    create(&s, CMS, &configmap("held", json!({})));
    let (code, body) = s.delete_with(
        &format!("{CMS}/held"),
        &json!({"propagationPolicy": "Foreground"}),
    );
    assert_eq!(code, 200, "{body}");
    // The namespace controller still runs: a namespace empties. Once it is
    // gone the collector had as long to act as it would have needed.
    let ns = namespace(&s, "scratch");
    create(
        &s,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &configmap("c", json!({})),
    );
    let (code, _) = s.delete(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(code, 200);
    s.wait_gone(&format!("/api/v1/namespaces/{ns}"));
    assert!(
        exists(&s, &format!("{CMS}/dep")).is_some(),
        "nobody collects the dependent"
    );
    let h = exists(&s, &format!("{CMS}/held")).expect("foreground owner stays");
    assert_eq!(h["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    // Without --enable-garbage-collector the API sets no collector finalizers.
    let s = Server::start_with(
        1,
        &[
            "--controllers=-garbagecollector,-namespace",
            "--enable-garbage-collector=false",
        ],
    );
    create(&s, CMS, &configmap("fg", json!({})));
    let (code, body) = s.delete_with(
        &format!("{CMS}/fg"),
        &json!({"propagationPolicy": "Foreground"}),
    );
    assert_eq!(
        (code, body["kind"].as_str()),
        (200, Some("Status")),
        "{body}"
    );
}

#[test]
fn unknown_controllers_are_refused() {
    let out = std::process::Command::new(binary())
        .args(["--insecure-port", "0", "--controllers=*,-replicaset"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in the list of known controllers"));
}

/// A collector whose event history was overwritten before it read it
/// lists everything again and still does its work. One shard: its group
/// commits release every write of a group to the rings at once, which
/// overruns a one-event history whenever a group holds two writes. (With
/// the durable log, relisting against a one-event history once spun
/// without yielding, starving the writes it waited for and flooding the
/// other shard with list requests until the server ran out of memory.)
#[test]
fn collector_recovers_after_falling_behind_the_history() {
    let s = Server::start_with(1, &["--watch-history-max-events=1"]);
    let owner = create(&s, CMS, &configmap("owner", json!({})));
    let mut made = 0;
    // Overtaking needs two events released between two reads of the
    // collector: concurrent writers make that likely in every burst, and
    // the loop goes on until it has happened.
    for burst in 0..100 {
        create_dependents_at_once(&s, &owner, &format!("d-{burst}"), 16, 13);
        made += 16 * 13;
        if s.log()
            .contains("controllers fell behind the event history")
        {
            break;
        }
    }
    assert!(
        s.log()
            .contains("controllers fell behind the event history; listing again"),
        "never overtaken: {}",
        s.log()
    );
    let (code, _) = s.delete(&format!("{CMS}/owner"));
    assert_eq!(code, 200);
    eventually(60, "every dependent collected", || {
        let (_, list) = s.get(CMS);
        names(&list).is_empty().then_some(())
    });
    assert!(made >= 100);
}

/// With the durable log, two shards and a one-event history, the
/// controllers' relists keep failing while writes land; a relist that
/// retried at once never gave its executor back, so writes timed out and
/// list requests piled up in the other shard until memory ran out. Every
/// write must land, and the server must stay small.
#[test]
fn writes_land_while_controllers_relist_against_a_short_history() {
    let s = Server::start_with(2, &["--watch-history-max-events=1"]);
    let owner = create(&s, CMS, &configmap("owner", json!({})));
    create_dependents_at_once(&s, &owner, "w", 16, 40);
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap();
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(rss_kib < 512 * 1024, "server grew to {rss_kib} KiB");
    let (code, list) = s.get(CMS);
    assert_eq!(code, 200);
    assert_eq!(names(&list).len(), 16 * 40 + 1);
}
