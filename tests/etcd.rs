//! `--storage etcd`: several replicas over one etcd cluster serve one
//! API — a write through any replica is read and watched at every other
//! one, in revision order; the built-in controllers run on one replica
//! at a time; a lost etcd member or a killed replica loses no
//! acknowledged write. Skipped, with a message, without an etcd binary.

#![cfg(feature = "etcd")]

mod common;

use common::etcd::EtcdCluster;
use common::{configmap, eventually, names, rv, Server};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn replicas_read_and_watch_each_others_writes() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let a = etcd.replica(2, &[]);
    let b = etcd.replica(2, &[]);
    let mut watch = b.watch(&format!("{CMS}?watch=1&resourceVersion=0"));

    // Read-your-writes across replicas: the GET right after the create's
    // answer, on the other replica, finds it (a consistent read).
    let mut written = Vec::new();
    for i in 0..20 {
        let (w, r) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let name = format!("cm-{i}");
        let (code, created) = w.post(CMS, &configmap(&name, json!({"i": i.to_string()})));
        assert_eq!(code, 201, "{created}");
        let (code, got) = r.get(&format!("{CMS}/{name}"));
        assert_eq!(code, 200, "{got}");
        assert_eq!(rv(&got), rv(&created));
        written.push((name, rv(&created)));
    }
    let (_, list_a) = a.get(CMS);
    let (_, list_b) = b.get(CMS);
    assert_eq!(names(&list_a), names(&list_b));
    assert_eq!(names(&list_a).len(), 20);

    // An update through one replica with the version read from the other;
    // the stale version then conflicts on either.
    let (_, cm) = b.get(&format!("{CMS}/cm-0"));
    let mut changed = cm.clone();
    changed["data"] = json!({"changed": "yes"});
    let (code, updated) = a.put(&format!("{CMS}/cm-0"), &changed);
    assert_eq!(code, 200, "{updated}");
    assert!(rv(&updated) > rv(&cm));
    for s in [&a, &b] {
        let (code, status) = s.put(&format!("{CMS}/cm-0"), &changed);
        assert_eq!((code, status["reason"].as_str()), (409, Some("Conflict")));
    }
    let (code, _) = b.delete(&format!("{CMS}/cm-1"));
    assert_eq!(code, 200);
    assert_eq!(a.get(&format!("{CMS}/cm-1")).0, 404);

    // B's watcher saw every write, whichever replica made it, in order.
    let events =
        watch.until(|e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == "cm-1");
    let ours: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("cm-"))
        })
        .collect();
    let revisions: Vec<u64> = ours.iter().map(|e| rv(&e["object"])).collect();
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
    let added: Vec<(String, u64)> = ours
        .iter()
        .filter(|e| e["type"] == "ADDED")
        .map(|e| {
            (
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                rv(&e["object"]),
            )
        })
        .collect();
    assert_eq!(added, written);
    let kinds: Vec<&str> = ours[20..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["MODIFIED", "DELETED"]);

    // A replica started later loads the same state from etcd.
    let c = etcd.replica(1, &[]);
    let (_, list_c) = c.get(CMS);
    assert_eq!(names(&list_c), names(&b.get(CMS).1));
    assert_eq!(
        rv(&c.get(&format!("{CMS}/cm-0")).1),
        rv(&updated),
        "versions are etcd's revisions on every replica"
    );
}

/// The log line a replica writes when it takes the controllers' lease.
fn leads(s: &Server) -> bool {
    s.log().contains("leading the controllers")
}

#[test]
fn controllers_run_on_one_replica_and_move_when_it_dies() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let a = etcd.replica(1, &[]);
    let b = etcd.replica(1, &[]);
    let lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubeshard-controllers";
    let first = eventually(30, "a leader", || {
        let (code, l) = a.get(lease);
        (code == 200).then_some(l)
    });
    let holder = first["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(first["spec"]["leaseDurationSeconds"], 15);
    // Exactly one replica says it leads.
    let a_leads = eventually(10, "the leader's log line", || {
        (leads(&a) != leads(&b)).then_some(leads(&a))
    });
    let (mut leader, follower) = if a_leads { (a, b) } else { (b, a) };

    // The namespace controller finishes a deletion: only the leader runs it.
    let (code, _) = follower.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "doomed"}}),
    );
    assert_eq!(code, 201);
    follower.delete("/api/v1/namespaces/doomed");
    follower.wait_gone("/api/v1/namespaces/doomed");

    // The leader dies: the follower takes over once the lease expires.
    leader.kill();
    let taken = eventually(40, "a new leader", || {
        let (_, l) = follower.get(lease);
        (l["spec"]["holderIdentity"].as_str() != Some(&holder)).then_some(l)
    });
    assert_eq!(taken["spec"]["leaseTransitions"], 1, "{taken}");
    // Its log line may follow the Lease write the GET above saw.
    eventually(10, "the new leader's log line", || {
        leads(&follower).then_some(())
    });
    let (code, _) = follower.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "doomed-2"}}),
    );
    assert_eq!(code, 201);
    follower.delete("/api/v1/namespaces/doomed-2");
    follower.wait_gone("/api/v1/namespaces/doomed-2");
}

#[test]
fn no_acknowledged_write_is_lost_to_a_dead_member_or_replica() {
    let Some(mut etcd) = EtcdCluster::start(3) else {
        return;
    };
    let a = etcd.replica(1, &[]);
    let b = etcd.replica(1, &[]);
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    // One writer per replica, creating as fast as it is answered.
    let writers: Vec<_> = [a.base.clone(), b.base.clone()]
        .into_iter()
        .enumerate()
        .map(|(w, base)| {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(15)))
                    .build()
                    .into();
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let name = format!("w{w}-{i}");
                    i += 1;
                    let body = configmap(&name, json!({}));
                    let r = agent
                        .post(&format!("{base}{CMS}"))
                        .header("content-type", "application/json")
                        .send(body.to_string());
                    if matches!(r, Ok(ref resp) if resp.status() == 201) {
                        acked.lock().unwrap().push(name);
                    }
                }
            })
        })
        .collect();
    let count = || acked.lock().unwrap().len();
    eventually(20, "writes before the member dies", || {
        (count() > 50).then_some(())
    });
    etcd.kill(0);
    let before = count();
    eventually(30, "writes after the member died", || {
        (count() > before + 50).then_some(())
    });
    let mut a = a;
    a.kill();
    let before = count();
    eventually(30, "writes after the replica died", || {
        (count() > before + 50).then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let (code, list) = b.get(CMS);
    assert_eq!(code, 200, "{list}");
    let stored: std::collections::HashSet<String> = names(&list).into_iter().collect();
    let acked = acked.lock().unwrap();
    let lost: Vec<&String> = acked.iter().filter(|n| !stored.contains(*n)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged creates lost: {lost:?}",
        lost.len()
    );
    // A replica started now, on the surviving members, agrees.
    let c = etcd.replica(1, &[]);
    assert_eq!(names(&c.get(CMS).1).len(), stored.len());
}

#[test]
fn without_etcd_cached_reads_go_on_and_writes_fail_fast() {
    let Some(mut etcd) = EtcdCluster::start(1) else {
        return;
    };
    let s = etcd.replica(1, &[]);
    let (code, _) = s.post(CMS, &configmap("kept", json!({})));
    assert_eq!(code, 201);
    assert!(etcd_requests(&s, "create", "configmaps", "requests") >= 1);
    assert_eq!(
        etcd_requests(&s, "create", "configmaps", "request_errors"),
        0
    );
    let (_, _, body) = s.get_with("/readyz?verbose", "text/plain");
    assert!(
        body.contains("[+]etcd ok") && body.contains("[+]etcd-readiness ok"),
        "{body}"
    );
    etcd.kill(0);
    eventually(10, "readyz to report etcd", || {
        let (code, _, body) = s.get_with("/readyz?verbose", "text/plain");
        (code == 500 && body.contains("[-]etcd failed")).then_some(())
    });
    // Reads that accept any state are served from the cache.
    let (code, list) = s.get(&format!("{CMS}?resourceVersion=0"));
    assert_eq!((code, names(&list)), (200, vec!["kept".to_string()]));
    let (code, _) = s.get(&format!("{CMS}/kept?resourceVersion=0"));
    assert_eq!(code, 200);
    // Writes, and reads that must see the latest state, fail with a
    // Status, in seconds rather than at the request's timeout.
    let started = std::time::Instant::now();
    let (code, status) = s.post(CMS, &configmap("lost", json!({})));
    assert!(code == 503 || code == 504, "{code} {status}");
    assert_eq!(status["kind"], "Status");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let (code, _) = s.get(CMS);
    assert!(code >= 500, "{code}");
    // kube's etcd metrics count the failed create as an error.
    assert!(etcd_requests(&s, "create", "configmaps", "request_errors") >= 1);
}

/// kube's `etcd_<family>_total` for core `resource` and `operation`, and
/// that `etcd_request_duration_seconds` observed as many.
fn etcd_requests(s: &Server, operation: &str, resource: &str, family: &str) -> u64 {
    let (_, _, text) = s.get_with("/metrics", "text/plain");
    let labels = format!("{{group=\"\",operation=\"{operation}\",resource=\"{resource}\"}}");
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}{labels} ")))
            .map(|v| v.parse::<f64>().unwrap() as u64)
            .unwrap_or(0)
    };
    assert!(
        text.contains("# TYPE etcd_request_duration_seconds histogram"),
        "{text}"
    );
    assert_eq!(
        value("etcd_request_duration_seconds_count"),
        value("etcd_requests_total"),
        "every request is timed"
    );
    value(&format!("etcd_{family}_total"))
}

#[test]
fn etcd_is_reached_over_tls_with_a_client_certificate() {
    let Some(etcd) = EtcdCluster::start_tls(1) else {
        return;
    };
    assert!(etcd.servers().starts_with("https://"));
    let a = etcd.replica(2, &[]);
    let b = etcd.replica(1, &[]);
    let mut watch = b.watch(&format!("{CMS}?watch=1&resourceVersion=0"));
    let (code, created) = a.post(CMS, &configmap("secure", json!({"k": "v"})));
    assert_eq!(code, 201, "{created}");
    let (code, got) = b.get(&format!("{CMS}/secure"));
    assert_eq!((code, rv(&got)), (200, rv(&created)));
    let mut changed = got.clone();
    changed["data"] = json!({"k": "w"});
    let (code, updated) = b.put(&format!("{CMS}/secure"), &changed);
    assert_eq!(code, 200, "{updated}");
    assert_eq!(a.delete(&format!("{CMS}/secure")).0, 200);
    let events =
        watch.until(|e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == "secure");
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == "secure")
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    assert!(etcd_requests(&a, "create", "configmaps", "requests") >= 1);
    assert!(etcd_requests(&b, "update", "configmaps", "requests") >= 1);
    assert!(etcd_requests(&a, "delete", "configmaps", "requests") >= 1);
    let (_, _, body) = a.get_with("/readyz?verbose", "text/plain");
    assert!(body.contains("[+]etcd ok"), "{body}");
}

#[test]
fn a_replica_behind_compacted_history_catches_up() {
    let Some(mut etcd) = EtcdCluster::start(1) else {
        return;
    };
    let fast = ["--etcd-compaction-interval", "1s"];
    let a = etcd.replica(1, &fast);
    let b = etcd.replica(1, &fast);
    for name in ["x1", "x2", "x3"] {
        assert_eq!(a.post(CMS, &configmap(name, json!({}))).0, 201);
    }
    eventually(10, "b to see the first writes", || {
        (names(&b.get(CMS).1).len() == 3).then_some(())
    });
    let mut watch = b.watch(&format!("{CMS}?watch=1&resourceVersion=0"));
    // B stops (as a partitioned replica would), its watch breaks with
    // etcd's restart, and A writes and etcd compacts past those writes
    // before B is back.
    signal(&b, "STOP");
    etcd.kill(0);
    etcd.restart(0);
    eventually(20, "a to write again", || {
        (a.post(CMS, &configmap("x0", json!({}))).0 == 201).then_some(())
    });
    assert_eq!(a.delete(&format!("{CMS}/x1")).0, 200);
    let mut x2 = a.get(&format!("{CMS}/x2")).1;
    x2["data"] = json!({"v": "2"});
    assert_eq!(a.put(&format!("{CMS}/x2"), &x2).0, 200);
    assert_eq!(a.post(CMS, &configmap("x4", json!({}))).0, 201);
    let compactions = || a.log().matches("compacted etcd").count();
    let seen = compactions();
    eventually(20, "two compactions past the writes", || {
        (compactions() >= seen + 2).then_some(())
    });
    signal(&b, "CONT");
    eventually(30, "b to re-read etcd", || {
        b.log().contains("re-read it").then_some(())
    });
    eventually(10, "b to agree with a", || {
        (names(&b.get(CMS).1) == names(&a.get(CMS).1)).then_some(())
    });
    assert_eq!(b.get(&format!("{CMS}/x2")).1["data"]["v"], "2");
    // B's watcher was brought to the same state.
    let events = watch.until(|e| e["type"] == "DELETED" && e["object"]["metadata"]["name"] == "x1");
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["object"]["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    for wanted in [("MODIFIED", "x2"), ("ADDED", "x4")] {
        assert!(seen.contains(&wanted), "{seen:?}");
    }
    let revisions: Vec<u64> = events.iter().map(|e| rv(&e["object"])).collect();
    assert!(revisions.windows(2).all(|w| w[0] <= w[1]), "{revisions:?}");
}

/// A client whose watch moves to a replica started after its resource
/// version (a load balancer's choice) is told 410 Expired, as by a
/// restarted kube-apiserver, relists there and watches on.
#[test]
fn a_watch_moving_to_a_newer_replica_gets_410_and_relists() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let a = etcd.replica(1, &[]);
    let (code, first) = a.post(CMS, &configmap("before", json!({})));
    assert_eq!(code, 201);
    assert_eq!(a.post(CMS, &configmap("after", json!({}))).0, 201);
    let c = etcd.replica(1, &[]);
    let mut watch = c.watch(&format!("{CMS}?watch=1&resourceVersion={}", rv(&first)));
    let expired = watch.next_event().expect("an event");
    assert_eq!(expired["type"], "ERROR", "{expired}");
    assert_eq!(expired["object"]["code"], 410, "{expired}");
    assert_eq!(expired["object"]["reason"], "Expired", "{expired}");
    let (_, list) = c.get(CMS);
    assert_eq!(names(&list), names(&a.get(CMS).1));
    let from = list["metadata"]["resourceVersion"].as_str().unwrap();
    let mut watch = c.watch(&format!("{CMS}?watch=1&resourceVersion={from}"));
    assert_eq!(a.post(CMS, &configmap("later", json!({}))).0, 201);
    let next = watch.next_event().expect("an event");
    assert_eq!(
        (
            next["type"].as_str(),
            next["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("later")),
        "{next}"
    );
}

/// kube's per-resource etcd clusters would split the one revision order
/// every watch and list follows: the flag is taken as kube writes it and
/// refused at start, saying why.
#[test]
fn per_resource_etcd_servers_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Server::launch(
        1,
        dir.path(),
        &[
            "--storage",
            "etcd",
            "--etcd-servers",
            "http://127.0.0.1:9",
            "--etcd-servers-overrides",
            "/events#http://127.0.0.1:10",
        ],
    )
    .err()
    .expect("the server refuses to start");
    assert!(
        refused.contains("--etcd-servers-overrides (/events#http://127.0.0.1:10)"),
        "{refused}"
    );
}

fn signal(s: &Server, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &s.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}
