//! WATCH over HTTP: start points, ordering across shards, selectors with
//! transitions, bookmarks, timeouts, 410, slow watchers and shutdown.

mod common;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn typ(e: &Value) -> &str {
    e["type"].as_str().unwrap()
}

fn name(e: &Value) -> &str {
    e["object"]["metadata"]["name"].as_str().unwrap()
}

each_shard_count!(from_a_resource_version, |shards| {
    let s = Server::start(shards);
    let (_, a) = s.post(CMS, &configmap("a", json!({})));
    let mut w = s.watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&a)));
    s.post(CMS, &configmap("b", json!({})));
    let mut a2 = a.clone();
    a2["data"]["k"] = json!("new");
    s.put(&format!("{CMS}/a"), &a2);
    let (_, deleted) = s.delete(&format!("{CMS}/b"));
    assert_eq!(deleted["kind"], "Status");
    let events = w.until(|e| typ(e) == "DELETED");
    let summary: Vec<(String, String)> = events
        .iter()
        .map(|e| (typ(e).to_string(), name(e).to_string()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("ADDED".into(), "b".into()),
            ("MODIFIED".into(), "a".into()),
            ("DELETED".into(), "b".into())
        ]
    );
    let revs: Vec<u64> = events.iter().map(|e| rv(&e["object"])).collect();
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
    assert_eq!(events[1]["object"]["data"]["k"], "new");
    assert_eq!(events[0]["object"]["kind"], "ConfigMap");
});

each_shard_count!(from_zero_and_unset_send_current_state_first, |shards| {
    let s = Server::start(shards);
    for n in ["x", "y", "z"] {
        s.post(CMS, &configmap(n, json!({})));
    }
    let mut expected = vec!["x".to_string(), "y".to_string(), "z".to_string()];
    for q in ["?watch=1&resourceVersion=0", "?watch=true"] {
        let mut w = s.watch(&format!("{CMS}{q}"));
        let initial: Vec<Value> = (0..expected.len())
            .map(|_| w.next_event().unwrap())
            .collect();
        assert!(initial.iter().all(|e| typ(e) == "ADDED"));
        let seen: Vec<String> = initial.iter().map(|e| name(e).to_string()).collect();
        assert_eq!(seen, expected, "current state, in key order");
        let fresh = format!("new-{}", q.len());
        s.post(CMS, &configmap(&fresh, json!({})));
        let next = w.next_event().unwrap();
        assert_eq!((typ(&next), name(&next)), ("ADDED", fresh.as_str()));
        expected.insert(0, fresh);
    }
});

each_shard_count!(too_old_resource_version_is_410, |shards| {
    let s = Server::start_with(shards, &["--watch-history-max-events", "5"]);
    let (_, first) = s.post(CMS, &configmap("c0", json!({})));
    for i in 1..20 {
        s.post(CMS, &configmap(&format!("c{i}"), json!({})));
    }
    let events = s
        .watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&first)))
        .rest();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(typ(&events[0]), "ERROR");
    let status = &events[0]["object"];
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 410);
    assert_eq!(status["reason"], "Expired");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version:"),
        "{status}"
    );
});

each_shard_count!(selector_transitions, |shards| {
    let s = Server::start(shards);
    let (_, obj) = s.post(CMS, &configmap("t", json!({"tier": "web"})));
    s.post(CMS, &configmap("other", json!({"tier": "db"})));
    let mut w = s.watch(&format!(
        "{CMS}?watch=1&labelSelector=tier%3Dweb&resourceVersion={}",
        rv(&obj)
    ));
    let relabel = |tier: &str| {
        let (_, cur) = s.get(&format!("{CMS}/t"));
        let mut next = cur.clone();
        next["metadata"]["labels"]["tier"] = json!(tier);
        let (code, body) = s.put(&format!("{CMS}/t"), &next);
        assert_eq!(code, 200);
        body
    };
    let to_db = relabel("db");
    let e = w.next_event().unwrap();
    assert_eq!(
        (typ(&e), name(&e)),
        ("DELETED", "t"),
        "stops matching → DELETED"
    );
    assert_eq!(
        rv(&e["object"]),
        rv(&to_db),
        "carries the transition's revision"
    );
    assert_eq!(
        e["object"]["metadata"]["labels"]["tier"], "web",
        "with the last matching state"
    );
    relabel("db2");
    s.post(CMS, &configmap("noise", json!({"tier": "db"})));
    relabel("web");
    let e = w.next_event().unwrap();
    assert_eq!(
        (typ(&e), name(&e)),
        ("ADDED", "t"),
        "starts matching → ADDED"
    );
    s.delete(&format!("{CMS}/t"));
    let e = w.next_event().unwrap();
    assert_eq!((typ(&e), name(&e)), ("DELETED", "t"));
});

each_shard_count!(field_selector_and_namespace_scope, |shards| {
    let s = Server::start(shards);
    namespace(&s, "other");
    let mut w = s.watch("/api/v1/namespaces/default/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&resourceVersion=0");
    let pod = |ns: &str, name: &str, node: &str| {
        let (code, body) = s.post(
            &format!("/api/v1/namespaces/{ns}/pods"),
            &json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}),
        );
        assert_eq!(code, 201, "{body}");
    };
    pod("default", "on-n2", "n2");
    pod("other", "elsewhere", "n1");
    pod("default", "mine", "n1");
    let e = w.next_event().unwrap();
    assert_eq!((typ(&e), name(&e)), ("ADDED", "mine"));
});

each_shard_count!(bookmarks_and_timeout, |shards| {
    let s = Server::start_with(shards, &["--watch-bookmark-interval", "200ms"]);
    let (_, a) = s.post(CMS, &configmap("a", json!({})));
    let started = Instant::now();
    let w = s.watch(&format!(
        "{CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion={}",
        rv(&a)
    ));
    let writer = {
        let base = s.url(CMS);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let agent = ureq::Agent::new_with_defaults();
            agent
                .post(&base)
                .send_json(configmap("b", json!({})))
                .unwrap();
        })
    };
    let events = w.rest();
    writer.join().unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(10),
        "{elapsed:?}"
    );
    let bookmarks: Vec<&Value> = events.iter().filter(|e| typ(e) == "BOOKMARK").collect();
    assert!(
        bookmarks.len() >= 3,
        "periodic bookmarks and one before the deadline: {events:?}"
    );
    for b in &bookmarks {
        assert_eq!(b["object"]["kind"], "ConfigMap");
        assert_eq!(b["object"]["apiVersion"], "v1");
    }
    assert_eq!(
        typ(events.last().unwrap()),
        "BOOKMARK",
        "a bookmark right before the deadline"
    );
    let added = events
        .iter()
        .position(|e| typ(e) == "ADDED")
        .expect("the write arrives");
    let revs: Vec<u64> = events.iter().map(|e| rv(&e["object"])).collect();
    assert!(
        revs.windows(2).all(|w| w[0] <= w[1]),
        "bookmark revisions never go backwards: {revs:?}"
    );
    assert!(revs[added + 1..].iter().all(|r| *r >= revs[added]));
    // Without allowWatchBookmarks there are none.
    let quiet = s
        .watch(&format!(
            "{CMS}?watch=1&timeoutSeconds=1&resourceVersion={}",
            rv(&a)
        ))
        .rest();
    assert!(quiet.iter().all(|e| typ(e) != "BOOKMARK"), "{quiet:?}");
});

each_shard_count!(send_initial_events, |shards| {
    let s = Server::start(shards);
    for n in ["a", "b"] {
        s.post(CMS, &configmap(n, json!({})));
    }
    let mut w = s.watch(&format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"));
    let events = w.until(|e| typ(e) == "BOOKMARK");
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events[..2].iter().all(|e| typ(e) == "ADDED"));
    let end = &events[2]["object"];
    assert_eq!(
        end["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(rv(end) >= rv(&events[1]["object"]));
    s.post(CMS, &configmap("c", json!({})));
    let next = w.next_event().unwrap();
    assert_eq!((typ(&next), name(&next)), ("ADDED", "c"));
    let (code, _, _) = s.get_with(
        &format!("{CMS}?watch=1&sendInitialEvents=true"),
        "application/json",
    );
    assert_eq!(
        code, 422,
        "sendInitialEvents needs resourceVersionMatch=NotOlderThan"
    );
});

// Many writers on all shards; every watcher sees every change exactly once,
// in strictly increasing revision order.
each_shard_count!(merged_order_under_concurrency, |shards| {
    let s = Server::start(shards);
    let watchers: Vec<WatchStream> = (0..4)
        .map(|_| s.watch(&format!("{CMS}?watch=1&resourceVersion=1")))
        .collect();
    let base = s.url(CMS);
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let base = base.clone();
            std::thread::spawn(move || {
                let agent = ureq::Agent::new_with_defaults();
                let mut revs = Vec::new();
                for i in 0..50 {
                    let mut r = agent
                        .post(&base)
                        .send_json(configmap(&format!("w{t}-{i}"), json!({})))
                        .unwrap();
                    let v: Value = r.body_mut().read_json().unwrap();
                    revs.push(rv(&v));
                }
                revs
            })
        })
        .collect();
    let mut written: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    written.sort();
    for mut w in watchers {
        let mut seen = Vec::new();
        while seen.len() < written.len() {
            let e = w.next_event().expect("stream open");
            assert_eq!(typ(&e), "ADDED");
            seen.push(rv(&e["object"]));
        }
        assert!(seen.windows(2).all(|p| p[0] < p[1]), "strictly increasing");
        assert_eq!(seen, written, "complete, no duplicates");
    }
});

/// A watcher that stops reading never stalls writers; once it falls out of
/// the history window its stream is cut and its client must re-watch.
#[test]
fn slow_watcher_does_not_stall_writes() {
    use std::io::Write;
    let s = Server::start_with(2, &["--watch-history-max-events", "50"]);
    let mut stalled = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    write!(
        stalled,
        "GET {CMS}?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let big = "x".repeat(8 * 1024);
    let started = Instant::now();
    for i in 0..600 {
        let (code, _) = s.post(
            CMS,
            &json!({"metadata": {"name": format!("c{i}")}, "data": {"k": big}}),
        );
        assert_eq!(code, 201);
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "writes stalled"
    );
    // A live watcher still gets new events.
    let mut live = s.watch(&format!(
        "{CMS}?watch=1&resourceVersion=0&labelSelector=live"
    ));
    s.post(CMS, &configmap("fresh", json!({"live": "yes"})));
    let e = live.next_event().unwrap();
    assert_eq!(name(&e), "fresh");
    drop(stalled);
}

#[test]
fn graceful_shutdown_ends_watches_and_exits_cleanly() {
    let mut s = Server::start(2);
    let w = s.watch(&format!("{CMS}?watch=1"));
    let reader = std::thread::spawn(move || w.rest());
    std::thread::sleep(Duration::from_millis(100));
    let status = s.stop();
    assert!(status.success(), "{status:?}");
    let _ = reader.join().unwrap();
}

/// A watcher whose client stops reading while it has events to send is cut
/// off after --watch-stall-timeout: its connection is closed and the
/// server forgets it, while writers carry on.
#[test]
fn stalled_watcher_connection_is_closed() {
    use std::io::{Read, Write};
    let s = Server::start_with(2, &["--watch-stall-timeout", "500ms"]);
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", s.port).parse().unwrap();
    sock.connect(&addr.into()).unwrap();
    let mut stalled: std::net::TcpStream = sock.into();
    write!(
        stalled,
        "GET {CMS}?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let watchers = || -> i64 {
        let (_, _, text) = s.get_with("/metrics", "*/*");
        text.lines()
            .filter(|l| l.starts_with("kubeshard_watchers{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
            .sum()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while watchers() != 1 {
        assert!(Instant::now() < deadline, "watch never registered");
        std::thread::sleep(Duration::from_millis(20));
    }
    let big = "x".repeat(16 * 1024);
    for i in 0..400 {
        let (code, _) = s.post(
            CMS,
            &json!({"metadata": {"name": format!("big-{i}")}, "data": {"k": big}}),
        );
        assert_eq!(code, 201);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while watchers() != 0 {
        assert!(
            Instant::now() < deadline,
            "the stalled watcher was never cut off"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its connection is closed: reading drains what was buffered, then EOF.
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match stalled.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("expected the server to close the connection: {e}"),
        }
    }
    assert!(s.log().contains("stopped reading"), "{}", s.log());
}
