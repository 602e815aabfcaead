//! The etcd target end to end (with `--features etcd`): a throwaway etcd
//! on loopback ports, the bench's create/get/list/watch against it.
//! Skipped, with a message, when no `etcd` binary is installed
//! (`apt-get install etcd-server`).

#![cfg(feature = "etcd")]

use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BENCH: &str = env!("CARGO_BIN_EXE_kubeshard-bench");

struct Etcd {
    child: Child,
    endpoint: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts etcd listening on 127.0.0.1 only, or None if not installed.
fn start_etcd() -> Option<Etcd> {
    if Command::new("etcd").arg("--version").output().is_err() {
        eprintln!("skipping: no etcd binary (apt-get install etcd-server)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let c = format!("http://127.0.0.1:{client}");
    let p = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--name", "bench", "--listen-client-urls", &c])
        .args(["--advertise-client-urls", &c, "--listen-peer-urls", &p])
        .args(["--initial-advertise-peer-urls", &p])
        .args(["--initial-cluster", &format!("bench={p}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start etcd");
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", client)).is_err() {
        assert!(Instant::now() < deadline, "etcd did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(Etcd {
        child,
        endpoint: c,
        _dir: dir,
    })
}

fn run(e: &Etcd, global: &[&str], op: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let pid = e.child.id().to_string();
    let mut args = vec![
        "--quiet",
        "--output",
        out.to_str().unwrap(),
        "--server-pid",
        &pid,
    ];
    args.extend(global);
    args.extend(["etcd", "--endpoint", &e.endpoint]);
    args.extend(op);
    let o = Command::new(BENCH).args(&args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn sane(r: &Value, name: &str) -> u64 {
    let o = r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {r}"));
    assert_eq!(o["errors"], serde_json::json!({}), "{o}");
    let l = &o["latency_ms"];
    let p: Vec<f64> = ["p50", "p90", "p99", "p999", "max"]
        .iter()
        .map(|k| l[*k].as_f64().unwrap())
        .collect();
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{l}");
    assert!(o["throughput_per_s"].as_f64().unwrap() > 0.0);
    assert!(r["server"]["peak_rss_bytes"].as_u64().unwrap() > 0);
    o["ok"].as_u64().unwrap()
}

#[test]
fn etcd_workloads() {
    let Some(e) = start_etcd() else { return };
    let r = run(&e, &["--count", "200"], &["create"]);
    assert_eq!(sane(&r, "create"), 200);
    assert_eq!(r["protocol"], "grpc");
    let r = run(&e, &["--duration", "700ms"], &["get", "--objects", "20"]);
    sane(&r, "get");
    let r = run(
        &e,
        &["--duration", "700ms", "--concurrency", "2"],
        &["list", "--objects", "120", "--page-size", "50"],
    );
    sane(&r, "list");
    sane(&r, "list-paged");
    assert_eq!(r["extra"]["items_per_list"], 120);
    assert_eq!(r["extra"]["items_per_paged_list"], 120);
    let r = run(
        &e,
        &["--duration", "1s", "--rate", "100"],
        &["watch", "--watchers", "4"],
    );
    sane(&r, "watch-delivery");
    let writes = sane(&r, "write");
    assert_eq!(r["extra"]["events_delivered"].as_u64().unwrap(), writes * 4);
}
