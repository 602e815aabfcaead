//! Crash durability with the default storage (write-ahead log,
//! `--fsync=always`): clients create, update and delete concurrently while
//! the server is killed with SIGKILL at random moments, over several rounds.
//! After each restart every acknowledged write is there with its
//! resourceVersion, a write that was in flight is there whole or not at
//! all, revisions keep increasing, and what a watcher saw is not lost.

mod common;
use common::*;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NS: &str = "crash";
const WRITERS: usize = 4;
const KEYS_PER_WRITER: usize = 12;
const ROUNDS: usize = 5;

/// What the server last acknowledged for a key: (resourceVersion, value),
/// or None for absent.
type Acked = Option<(u64, String)>;

/// A write sent but never answered (the server died first).
#[derive(Debug, Clone)]
enum Intent {
    Put(String),
    Delete,
}

#[derive(Debug, Default, Clone)]
struct KeyState {
    acked: Acked,
    in_flight: Option<Intent>,
}

type Model = BTreeMap<String, KeyState>;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn body(name: &str, value: &str, rv: Option<u64>) -> Value {
    let mut md = json!({"name": name, "namespace": NS});
    if let Some(rv) = rv {
        md["resourceVersion"] = json!(rv.to_string());
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": md,
           "data": {"v": value, "pad": "x".repeat(200)}})
}

/// One writer: random creates, updates and deletes on its own keys, one at
/// a time, until the server dies or `stop` is set.
fn writer(
    base: String,
    keys: Vec<String>,
    model: Arc<Mutex<Model>>,
    stop: Arc<AtomicBool>,
    round: usize,
) {
    let agent = agent();
    let mut rng = rand::thread_rng();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let key = &keys[rng.gen_range(0..keys.len())];
        let acked = model.lock().unwrap()[key].acked.clone();
        n += 1;
        let value = format!("r{round}-{n}");
        let coll = format!("{base}/api/v1/namespaces/{NS}/configmaps");
        let (intent, result) = match &acked {
            None => {
                let intent = Intent::Put(value.clone());
                model.lock().unwrap().get_mut(key).unwrap().in_flight = Some(intent.clone());
                (intent, agent.post(&coll).send_json(body(key, &value, None)))
            }
            Some((rv, _)) if rng.gen_bool(0.7) => {
                let intent = Intent::Put(value.clone());
                model.lock().unwrap().get_mut(key).unwrap().in_flight = Some(intent.clone());
                (
                    intent,
                    agent
                        .put(&format!("{coll}/{key}"))
                        .send_json(body(key, &value, Some(*rv))),
                )
            }
            Some((rv, _)) => {
                model.lock().unwrap().get_mut(key).unwrap().in_flight = Some(Intent::Delete);
                let opts = json!({"preconditions": {"resourceVersion": rv.to_string()}});
                (
                    Intent::Delete,
                    agent
                        .delete(&format!("{coll}/{key}"))
                        .force_send_body()
                        .send_json(opts),
                )
            }
        };
        let Ok(mut resp) = result else {
            return; // the server is gone: the intent stays in flight
        };
        let code = resp.status().as_u16();
        let Ok(v) = resp.body_mut().read_json::<Value>() else {
            return;
        };
        let mut m = model.lock().unwrap();
        let st = m.get_mut(key).unwrap();
        assert!(code < 300, "{key}: {intent:?} answered {code}: {v}");
        st.in_flight = None;
        st.acked = match intent {
            Intent::Put(value) => Some((rv(&v), value)),
            Intent::Delete => None,
        };
    }
}

/// Follows the namespace's watch and records the newest revision seen.
fn watcher(base: String, from: u64, seen: Arc<AtomicU64>) {
    let url = format!("{base}/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={from}&allowWatchBookmarks=true");
    let Ok(resp) = agent().get(&url).call() else {
        return;
    };
    use std::io::BufRead;
    let reader = std::io::BufReader::new(resp.into_body().into_reader());
    for line in reader.lines() {
        let Ok(line) = line else { return };
        let Ok(ev) = serde_json::from_str::<Value>(&line) else {
            return;
        };
        if let Some(r) = ev["object"]["metadata"]["resourceVersion"].as_str() {
            seen.fetch_max(r.parse().unwrap_or(0), Ordering::SeqCst);
        }
    }
}

/// The namespace's ConfigMaps as the restarted server has them, and the
/// list's resourceVersion.
fn stored(s: &Server) -> (BTreeMap<String, (u64, String)>, u64) {
    let (code, list) = s.get(&format!("/api/v1/namespaces/{NS}/configmaps"));
    assert_eq!(code, 200, "{list}");
    let items = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let name = i["metadata"]["name"].as_str().unwrap().to_string();
            assert_eq!(
                i["data"]["pad"].as_str().map(str::len),
                Some(200),
                "half an object: {i}"
            );
            (name, (rv(i), i["data"]["v"].as_str().unwrap().to_string()))
        })
        .collect();
    let list_rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    (items, list_rv)
}

/// Checks the restarted server against the model and settles every write
/// that was in flight to whichever outcome the server kept.
fn verify(s: &Server, model: &mut Model, watched: u64, highest_acked: u64) {
    let (items, list_rv) = stored(s);
    for name in items.keys() {
        assert!(model.contains_key(name), "{name} was never written");
    }
    for (name, st) in model.iter_mut() {
        let found = items.get(name).cloned();
        let acked_rv = st.acked.as_ref().map(|a| a.0);
        let matches_intent = match (&st.in_flight, &found) {
            (Some(Intent::Put(v)), Some((r, got))) => got == v && Some(*r) != acked_rv,
            (Some(Intent::Delete), None) => true,
            _ => false,
        };
        if matches_intent {
            st.acked = found;
        } else {
            assert_eq!(
                found, st.acked,
                "{name}: acknowledged state lost (in flight: {:?})",
                st.in_flight
            );
        }
        st.in_flight = None;
    }
    assert!(
        list_rv >= watched,
        "the server is at {list_rv}, but a watcher saw {watched}"
    );
    assert!(
        list_rv >= highest_acked,
        "the server is at {list_rv}, but {highest_acked} was acknowledged"
    );
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let data = tempfile::tempdir().unwrap();
    let mut model: Model = (0..WRITERS * KEYS_PER_WRITER)
        .map(|i| (format!("k{i}"), KeyState::default()))
        .collect();
    let mut watched = 0;
    let mut highest_acked = 0;
    let mut rng = rand::thread_rng();
    for round in 0..ROUNDS {
        let shards = if round % 2 == 0 { 2 } else { 1 };
        let mut server = Server::launch(shards, data.path(), &["--fsync", "always"])
            .unwrap_or_else(|log| panic!("restart {round} failed: {log}"));
        if round == 0 {
            namespace(&server, NS);
        } else {
            verify(&server, &mut model, watched, highest_acked);
        }
        // Revisions keep increasing across the restart.
        let (code, probe) = server.post(
            &format!("/api/v1/namespaces/{NS}/configmaps"),
            &json!({"metadata": {"generateName": "probe-"}}),
        );
        assert_eq!(code, 201, "{probe}");
        assert!(
            rv(&probe) > watched.max(highest_acked),
            "revision went back: {probe}"
        );
        let (code, _) = server.delete(&format!(
            "/api/v1/namespaces/{NS}/configmaps/{}",
            probe["metadata"]["name"].as_str().unwrap()
        ));
        assert_eq!(code, 200);

        let shared = Arc::new(Mutex::new(model.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let (_, list_rv) = stored(&server);
        let watch = {
            let (base, seen) = (server.base.clone(), seen.clone());
            std::thread::spawn(move || watcher(base, list_rv, seen))
        };
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let keys = (0..KEYS_PER_WRITER)
                    .map(|i| format!("k{}", w * KEYS_PER_WRITER + i))
                    .collect();
                let (base, m, stop) = (server.base.clone(), shared.clone(), stop.clone());
                std::thread::spawn(move || writer(base, keys, m, stop, round))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.gen_range(150..700)));
        server.kill();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().expect("writer panicked");
        }
        let _ = watch.join();
        model = Arc::try_unwrap(shared).unwrap().into_inner().unwrap();
        eprintln!(
            "round {round}: present {} in flight {} seen {}",
            model.values().filter(|s| s.acked.is_some()).count(),
            model.values().filter(|s| s.in_flight.is_some()).count(),
            seen.load(Ordering::SeqCst)
        );
        watched = watched.max(seen.load(Ordering::SeqCst));
        highest_acked = model
            .values()
            .filter_map(|s| s.acked.as_ref().map(|a| a.0))
            .max()
            .unwrap_or(0)
            .max(highest_acked);
    }
    let server =
        Server::launch(2, data.path(), &[]).unwrap_or_else(|log| panic!("final restart: {log}"));
    verify(&server, &mut model, watched, highest_acked);
    assert!(
        model.values().any(|s| s.acked.is_some()),
        "the rounds wrote nothing"
    );
}
