//! LIST: ordering across shards, selectors, pagination and snapshots.

mod common;
use common::*;
use serde_json::{json, Value};

fn seed(s: &Server) {
    for ns in ["b-ns", "a-ns"] {
        namespace(s, ns);
        for i in (0..12).rev() {
            let labels = json!({"tier": if i % 3 == 0 { "web" } else if i % 3 == 1 { "db" } else { "cache" }, "idx": i.to_string()});
            let (code, body) = s.post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &configmap(&format!("cm-{i:02}"), labels),
            );
            assert_eq!(code, 201, "{body}");
        }
    }
}

each_shard_count!(sorted_by_namespace_then_name, |shards| {
    let s = Server::start(shards);
    seed(&s);
    let (code, all) = s.get("/api/v1/configmaps");
    assert_eq!(code, 200);
    assert_eq!(all["kind"], "ConfigMapList");
    assert_eq!(all["apiVersion"], "v1");
    let k = keys(&all);
    let mut sorted = k.clone();
    sorted.sort();
    assert_eq!(k, sorted);
    // The seeded 24 and kube-system's two (authentication, token tracking).
    assert_eq!(k.len(), 26);
    assert!(all["metadata"].get("continue").is_none());
    assert!(all["metadata"].get("remainingItemCount").is_none());
    let (_, one) = s.get("/api/v1/namespaces/a-ns/configmaps");
    assert_eq!(keys(&one).len(), 12);
    assert!(keys(&one).iter().all(|k| k.starts_with("a-ns/")));
    // The list's resourceVersion is at least every item's.
    let list_rv = rv(&all);
    assert!(all["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| rv(i) <= list_rv));
});

each_shard_count!(label_selectors, |shards| {
    let s = Server::start(shards);
    seed(&s);
    let count = |sel: &str| {
        let (code, body) = s.get(&format!(
            "/api/v1/namespaces/a-ns/configmaps?labelSelector={}",
            urlencode(sel)
        ));
        assert_eq!(code, 200, "{sel}: {body}");
        keys(&body).len()
    };
    assert_eq!(count("tier=web"), 4);
    assert_eq!(count("tier==web"), 4);
    assert_eq!(count("tier!=web"), 8);
    assert_eq!(count("tier in (web,db)"), 8);
    assert_eq!(count("tier notin (web,db)"), 4);
    assert_eq!(count("tier"), 12);
    assert_eq!(count("!tier"), 0);
    assert_eq!(count("missing"), 0);
    assert_eq!(count("!missing"), 12);
    assert_eq!(count("tier=web,idx=3"), 1);
    assert_eq!(count("idx>9"), 2);
});

each_shard_count!(field_selectors, |shards| {
    let s = Server::start(shards);
    seed(&s);
    let (_, body) = s.get("/api/v1/configmaps?fieldSelector=metadata.name%3Dcm-03");
    assert_eq!(keys(&body), vec!["a-ns/cm-03", "b-ns/cm-03"]);
    let (_, body) = s
        .get("/api/v1/configmaps?fieldSelector=metadata.namespace%21%3Da-ns,metadata.name%3Dcm-05");
    assert_eq!(keys(&body), vec!["b-ns/cm-05"]);
    for (i, node) in ["n1", "n2", "n1"].iter().enumerate() {
        let (code, _) = s.post(
            "/api/v1/namespaces/a-ns/pods",
            &json!({"metadata": {"name": format!("p{i}")}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}),
        );
        assert_eq!(code, 201);
    }
    let (_, body) = s.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1");
    assert_eq!(keys(&body), vec!["a-ns/p0", "a-ns/p2"]);
    let (_, body) =
        s.get("/api/v1/pods?fieldSelector=status.phase%3DPending,spec.nodeName%21%3Dn1");
    assert_eq!(keys(&body), vec!["a-ns/p1"]);
    let (code, _) = s.get("/api/v1/pods?fieldSelector=spec.bogus%3Dx");
    assert_eq!(code, 400);
});

each_shard_count!(pagination_is_a_consistent_snapshot, |shards| {
    let s = Server::start(shards);
    seed(&s);
    let (_, full) = s.get("/api/v1/configmaps");
    let expected = keys(&full);
    let mut got = Vec::new();
    let (code, first) = s.get("/api/v1/configmaps?limit=5");
    assert_eq!(code, 200);
    assert_eq!(keys(&first).len(), 5);
    assert_eq!(first["metadata"]["remainingItemCount"], 21);
    let snapshot_rv = rv(&first);
    got.extend(keys(&first));
    // Change the world between pages: pages keep showing the first page's snapshot.
    let (code, _) = s.delete("/api/v1/namespaces/b-ns/configmaps/cm-11");
    assert_eq!(code, 200);
    let (code, _) = s.post(
        "/api/v1/namespaces/b-ns/configmaps",
        &configmap("zz-new", json!({})),
    );
    assert_eq!(code, 201);
    let (_, changed) = s.get("/api/v1/namespaces/a-ns/configmaps/cm-07");
    let mut c = changed.clone();
    c["data"]["k"] = json!("changed");
    assert_eq!(s.put("/api/v1/namespaces/a-ns/configmaps/cm-07", &c).0, 200);
    let mut token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let mut pages = 1;
    loop {
        let (code, page) = s.get(&format!(
            "/api/v1/configmaps?limit=5&continue={}",
            urlencode(&token)
        ));
        assert_eq!(code, 200, "{page}");
        assert_eq!(
            rv(&page),
            snapshot_rv,
            "every page is at the first page's revision"
        );
        for item in page["items"].as_array().unwrap() {
            if item["metadata"]["name"] == "cm-07" && item["metadata"]["namespace"] == "a-ns" {
                assert_eq!(item["data"]["k"], "v", "the snapshot shows the old object");
            }
        }
        got.extend(keys(&page));
        pages += 1;
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => {
                token = t.to_string();
                assert!(page["metadata"]["remainingItemCount"].as_u64().unwrap() > 0);
            }
            _ => break,
        }
    }
    assert_eq!(pages, 6, "26 items (kube-system's two included), 5 a page");
    assert_eq!(got, expected);
    // A fresh list sees the changes.
    let (_, after) = s.get("/api/v1/configmaps");
    assert!(keys(&after).contains(&"b-ns/zz-new".to_string()));
    assert!(!keys(&after).contains(&"b-ns/cm-11".to_string()));
    // Paging with a selector.
    let (_, sel) = s.get("/api/v1/configmaps?labelSelector=tier%3Dweb&limit=3");
    assert_eq!(keys(&sel).len(), 3);
    assert!(
        sel["metadata"].get("remainingItemCount").is_none(),
        "no count with selectors"
    );
    assert!(sel["metadata"]["continue"].is_string());
});

each_shard_count!(resource_version_semantics, |shards| {
    let s = Server::start(shards);
    let (_, a) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("a", json!({})),
    );
    let first = rv(&a);
    let (_, b) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("b", json!({})),
    );
    let second = rv(&b);
    // Exact: the state at that revision.
    let (code, exact) = s.get(&format!(
        "/api/v1/namespaces/default/configmaps?resourceVersion={first}&resourceVersionMatch=Exact"
    ));
    assert_eq!(code, 200, "{exact}");
    assert_eq!(names(&exact), vec!["a"]);
    assert_eq!(rv(&exact), first);
    // NotOlderThan: at least that revision.
    let (code, not_older) = s.get(&format!("/api/v1/namespaces/default/configmaps?resourceVersion={first}&resourceVersionMatch=NotOlderThan"));
    assert_eq!(code, 200);
    assert!(rv(&not_older) >= second);
    let (code, any) = s.get("/api/v1/namespaces/default/configmaps?resourceVersion=0");
    assert_eq!(code, 200);
    assert_eq!(names(&any), vec!["a", "b"]);
    // A future revision waits 3 s, then 504 with Retry-After.
    let started = std::time::Instant::now();
    let (code, _, text) = s.get_with(
        &format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={}",
            second + 1000
        ),
        "application/json",
    );
    assert_eq!(code, 504, "{text}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(2900));
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["reason"], "Timeout");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Timeout: Too large resource version"),
        "{body}"
    );
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    // Invalid combinations.
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact");
    assert_eq!(code, 422);
    let (code, _) =
        s.get("/api/v1/namespaces/default/configmaps?resourceVersion=0&resourceVersionMatch=Exact");
    assert_eq!(code, 422);
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps?resourceVersion=abc");
    assert_eq!(code, 400);
});

#[test]
fn exact_list_outside_history_is_410() {
    let s = Server::start_with(2, &["--watch-history-max-events", "3"]);
    let (_, first) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("c0", json!({})),
    );
    for i in 1..12 {
        s.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap(&format!("c{i}"), json!({})),
        );
    }
    let (code, body) = s.get(&format!(
        "/api/v1/namespaces/default/configmaps?resourceVersion={}&resourceVersionMatch=Exact",
        rv(&first)
    ));
    assert_eq!(code, 410, "{body}");
    assert_eq!(body["reason"], "Expired");
    let (code, page) = s.get("/api/v1/namespaces/default/configmaps?limit=2");
    assert_eq!(code, 200);
    for i in 12..30 {
        s.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap(&format!("c{i}"), json!({})),
        );
    }
    let token = page["metadata"]["continue"].as_str().unwrap();
    let (code, body) = s.get(&format!(
        "/api/v1/namespaces/default/configmaps?limit=2&continue={}",
        urlencode(token)
    ));
    assert_eq!(code, 410, "{body}");
    assert_eq!(body["reason"], "Expired");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("continue parameter is too old"));
    // The Status carries a token that goes on from the same key at the
    // latest revision (kube's inconsistent continue).
    let again = body["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let (code, next) = s.get(&format!(
        "/api/v1/namespaces/default/configmaps?limit=2&continue={}",
        urlencode(again)
    ));
    assert_eq!(code, 200, "{next}");
    assert_eq!(names(&page), ["c0", "c1"]);
    assert_eq!(names(&next), ["c10", "c11"]);
    assert_ne!(
        next["metadata"]["resourceVersion"],
        page["metadata"]["resourceVersion"]
    );
    assert!(next["metadata"]["continue"].is_string());
}

each_shard_count!(delete_collection_honours_selectors, |shards| {
    let s = Server::start(shards);
    seed(&s);
    let (code, deleted) = s.delete("/api/v1/namespaces/a-ns/configmaps?labelSelector=tier%3Dweb");
    assert_eq!(code, 200, "{deleted}");
    assert_eq!(deleted["kind"], "ConfigMapList");
    assert_eq!(keys(&deleted).len(), 4);
    let (_, left) = s.get("/api/v1/namespaces/a-ns/configmaps");
    assert_eq!(keys(&left).len(), 8);
    let (_, other) = s.get("/api/v1/namespaces/b-ns/configmaps");
    assert_eq!(keys(&other).len(), 12, "other namespaces untouched");
    let (code, _) =
        s.delete("/api/v1/namespaces/b-ns/configmaps?fieldSelector=metadata.name%3Dcm-01");
    assert_eq!(code, 200);
    let (_, other) = s.get("/api/v1/namespaces/b-ns/configmaps");
    assert_eq!(keys(&other).len(), 11);
});

/// The same sequence of requests gives the same answers on 1 and 4 shards
/// (modulo uids and timestamps). Without the service-account controller,
/// whose `default` accounts would draw revisions at times of their own.
#[test]
fn one_and_four_shards_agree() {
    let run = |shards| {
        let s = Server::start_with(shards, &["--controllers=-serviceaccount"]);
        seed(&s);
        s.delete("/api/v1/namespaces/a-ns/configmaps/cm-04");
        let (_, c) = s.get("/api/v1/namespaces/b-ns/configmaps/cm-02");
        let mut c2 = c.clone();
        c2["data"]["extra"] = json!("x");
        s.put("/api/v1/namespaces/b-ns/configmaps/cm-02", &c2);
        let mut out = Vec::new();
        // kube-system's ConfigMaps hold each server's own CA: not compared.
        for q in [
            "?fieldSelector=metadata.namespace%21%3Dkube-system",
            "?fieldSelector=metadata.namespace%21%3Dkube-system&labelSelector=tier%3Ddb",
            "?fieldSelector=metadata.namespace%21%3Dkube-system&limit=7",
            "?fieldSelector=metadata.name%3Dcm-02",
        ] {
            let (_, list) = s.get(&format!("/api/v1/configmaps{q}"));
            let items: Vec<Value> = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    json!([
                        i["metadata"]["namespace"],
                        i["metadata"]["name"],
                        i["metadata"]["resourceVersion"],
                        i["data"],
                        i["metadata"]["labels"]
                    ])
                })
                .collect();
            out.push(json!({"rv": list["metadata"]["resourceVersion"], "items": items, "remaining": list["metadata"]["remainingItemCount"]}));
        }
        out
    };
    assert_eq!(run(1), run(4));
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A snapshot expires with time, as a compacted revision does in kube,
/// even when nothing it lists has changed: a continue token older than the
/// history window is 410, and its Status's token goes on at the latest
/// revision.
#[test]
fn continue_tokens_expire_with_time() {
    let s = Server::start_with(2, &["--watch-history-window", "2s"]);
    for i in 0..5 {
        let (code, _) = s.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap(&format!("t{i}"), json!({})),
        );
        assert_eq!(code, 201);
    }
    let (_, page) = s.get("/api/v1/namespaces/default/configmaps?limit=2");
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let url = format!(
        "/api/v1/namespaces/default/configmaps?limit=2&continue={}",
        urlencode(&token)
    );
    assert_eq!(s.get(&url).0, 200, "fresh tokens work");
    // Writes elsewhere move the revision on (a cluster always has some:
    // leases, events), so the listed revision falls behind the window.
    let mut i = 0;
    let expired = eventually(10, "the snapshot to expire", || {
        i += 1;
        s.post(
            "/api/v1/namespaces/kube-system/configmaps",
            &configmap(&format!("tick{i}"), json!({})),
        );
        let (code, body) = s.get(&url);
        (code == 410).then_some(body)
    });
    let again = expired["metadata"]["continue"].as_str().unwrap();
    let (code, next) = s.get(&format!(
        "/api/v1/namespaces/default/configmaps?limit=5&continue={}",
        urlencode(again)
    ));
    assert_eq!(code, 200, "{next}");
    assert_eq!(names(&next), ["t2", "t3", "t4"]);
}
