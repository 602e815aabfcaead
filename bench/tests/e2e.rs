//! The bench end to end: a real kubeshard on a free loopback port, the
//! real `kubeshard-bench` binary against it with short, small runs, and
//! sanity checks on the JSON it writes.
//!
//! This lives in the bench package because only a package's own tests see
//! its binaries (`CARGO_BIN_EXE_*`); the server binary is found next to
//! this test's own build output (and built if it is not there).

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BENCH: &str = env!("CARGO_BIN_EXE_kubeshard-bench");

/// target/<profile>/kubeshard, built on first use if missing.
fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/e2e-<hash> → target/<profile>
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("kubeshard");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let status = Command::new(cargo)
            .args(["build", "-p", "kubeshard", "--bin", "kubeshard"])
            .current_dir(root)
            .status()
            .expect("run cargo build -p kubeshard");
        assert!(status.success(), "cargo build -p kubeshard failed");
    }
    assert!(bin.exists(), "no server binary at {}", bin.display());
    bin
}

struct Server {
    child: Child,
    base: String,
    /// The admin kubeconfig the server wrote (TLS, client certificate).
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let port_file = dir.path().join("port");
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(server_binary())
            .args([
                "--insecure-port",
                "0",
                "--secure-port",
                "0",
                "--shards",
                "2",
                "--port-file",
            ])
            .arg(&port_file)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--bind-address", "127.0.0.1"])
            // The list workloads count a namespace's objects exactly;
            // kube-root-ca.crt would be one more.
            .arg("--controllers=*,-root-ca-cert-publisher")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kubeshard");
        let mut s = Server {
            child,
            base: String::new(),
            kubeconfig: dir.path().join("data/admin.kubeconfig"),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(s.child.try_wait().unwrap().is_none(), "kubeshard exited");
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse::<u16>().ok())
            {
                if ready(port) {
                    s.base = format!("http://127.0.0.1:{port}");
                    return s;
                }
            }
            assert!(Instant::now() < deadline, "kubeshard not ready");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET /readyz answers 200.
fn ready(port: u16) -> bool {
    let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let req = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if c.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut resp = String::new();
    let _ = c.read_to_string(&mut resp);
    resp.starts_with("HTTP/1.1 200")
}

fn bench(args: &[&str]) -> Output {
    Command::new(BENCH)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run kubeshard-bench")
}

/// Runs the bench with `args` plus --output and --server-pid, checks it
/// succeeded, and returns the parsed JSON.
fn run_json(s: &Server, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let pid = s.pid().to_string();
    let mut all = args.to_vec();
    all.extend([
        "--url",
        &s.base,
        "--quiet",
        "--server-pid",
        &pid,
        "--output",
        out.to_str().unwrap(),
    ]);
    let o = bench(&all);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "bench {args:?} failed:\n{stdout}\n{stderr}"
    );
    let text = std::fs::read_to_string(&out).expect("JSON output written");
    let v: Value = serde_json::from_str(&text).expect("JSON output parses");
    // The summary table printed the primary operation.
    let primary = v["primary"].as_str().unwrap();
    assert!(stdout.contains(&format!("*{primary}")), "{stdout}");
    v
}

fn op<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no operation {name} in {r}"))
}

/// Non-zero throughput, no errors, percentiles in order, server figures.
fn sane(r: &Value, name: &str) -> u64 {
    let o = op(r, name);
    let ok = o["ok"].as_u64().unwrap();
    assert!(ok > 0, "{name}: nothing succeeded: {o}");
    assert!(o["throughput_per_s"].as_f64().unwrap() > 0.0, "{o}");
    assert_eq!(o["errors"], serde_json::json!({}), "{name} had errors");
    let l = &o["latency_ms"];
    let p: Vec<f64> = ["min", "p50", "p90", "p99", "p999", "max"]
        .iter()
        .map(|k| l[*k].as_f64().unwrap())
        .collect();
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{name}: unordered {l}");
    assert!(p[5] > 0.0 && p[5] < 10_000.0, "{name}: {l}");
    assert!(!o["timeline"].as_array().unwrap().is_empty());
    let sv = &r["server"];
    assert!(sv["cpu_seconds"].as_f64().unwrap() >= 0.0, "{r}");
    assert!(sv["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{sv}");
    ok
}

#[test]
fn create_get_update_delete() {
    let s = Server::start();
    let r = run_json(&s, &["create", "--count", "300", "--concurrency", "8"]);
    assert_eq!(sane(&r, "create"), 300);
    assert_eq!(r["workload"], "create");

    let r = run_json(&s, &["get", "--duration", "1s", "--objects", "20"]);
    sane(&r, "get");
    let r = run_json(
        &s,
        &["get", "--duration", "1s", "--http2", "--concurrency", "8"],
    );
    sane(&r, "get");
    assert_eq!(r["protocol"], "h2");

    let r = run_json(&s, &["update", "--count", "200", "--objects", "20"]);
    assert_eq!(sane(&r, "update"), 200);
    sane(&r, "update-get");
    sane(&r, "update-put");
    let r = run_json(&s, &["update", "--count", "200", "--mode", "put"]);
    assert_eq!(sane(&r, "update"), 200);

    let r = run_json(&s, &["delete", "--objects", "100", "--rate", "500"]);
    assert_eq!(sane(&r, "delete"), 100);
    assert_eq!(r["config"]["rate"], 500.0);
}

/// The bench reaches the secure port with the admin kubeconfig the server
/// writes: TLS trusting the generated CA, a client certificate.
#[test]
fn crud_over_tls_with_the_admin_kubeconfig() {
    let s = Server::start();
    let kubeconfig = s.kubeconfig.to_str().unwrap().to_string();
    let o = bench(&[
        "create",
        "--count",
        "50",
        "--kubeconfig",
        &kubeconfig,
        "--quiet",
    ]);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let o = bench(&[
        "get",
        "--duration",
        "1s",
        "--kubeconfig",
        &kubeconfig,
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn list_unpaged_and_paged() {
    let s = Server::start();
    let r = run_json(
        &s,
        &[
            "list",
            "--objects",
            "120",
            "--page-size",
            "50",
            "--duration",
            "700ms",
            "--concurrency",
            "2",
            "--namespace",
            "listing",
        ],
    );
    sane(&r, "list");
    sane(&r, "list-paged");
    sane(&r, "list-page");
    assert_eq!(r["extra"]["items_per_list"], 120);
    assert_eq!(r["extra"]["items_per_paged_list"], 120);
    assert_eq!(r["extra"]["pages_per_list"], 3);

    let r = run_json(
        &s,
        &[
            "list",
            "--objects",
            "0",
            "--paged-only",
            "--label-selector",
            "group=g1",
            "--count",
            "5",
            "--namespace",
            "listing",
        ],
    );
    assert_eq!(sane(&r, "list-paged"), 5);
    assert_eq!(r["extra"]["items_per_paged_list"], 12);
}

#[test]
fn watch_fan_out() {
    let s = Server::start();
    for extra in [&[][..], &["--http2", "--connections", "2"][..]] {
        let mut args = vec![
            "watch",
            "--watchers",
            "6",
            "--objects",
            "5",
            "--rate",
            "100",
            "--duration",
            "1500ms",
        ];
        args.extend(extra);
        let r = run_json(&s, &args);
        sane(&r, "watch-delivery");
        let writes = sane(&r, "write");
        let x = &r["extra"];
        assert_eq!(x["watchers_established"], 6);
        assert_eq!(x["events_delivered"].as_u64().unwrap(), writes * 6, "{x}");
        assert_eq!(x["events_missing"], 0);
        assert!(x["events_per_s"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn cluster_simulation() {
    let s = Server::start();
    let charts = tempfile::tempdir().unwrap();
    let r = run_json(
        &s,
        &[
            "cluster",
            "--duration",
            "2s",
            "--nodes",
            "30",
            "--churn",
            "20",
            "--pods",
            "15",
            "--informers",
            "2",
            "--namespace",
            "sim",
            "--object-size",
            "200",
            "--charts",
            charts.path().to_str().unwrap(),
        ],
    );
    let pods = sane(&r, "pod-lifecycle");
    assert!(pods >= 30, "{pods} pods in 2 s at 20/s");
    for step in [
        "pod-create",
        "pod-schedule",
        "pod-status",
        "pod-delete",
        "lease-renew",
    ] {
        sane(&r, step);
    }
    sane(&r, "informer-delivery");
    sane(&r, "informer-list");
    // Each pod: create, schedule, status; deletions beyond 15 alive. A
    // bound pod deleted with gracePeriodSeconds=0 is marked, then deleted
    // (MODIFIED, DELETED), as kube-apiserver does.
    let events = r["extra"]["events_delivered"].as_u64().unwrap();
    let deletes = op(&r, "pod-delete")["ok"].as_u64().unwrap();
    assert_eq!(events, 2 * (3 * pods + 2 * deletes), "{}", r["extra"]);
    let svg = std::fs::read_to_string(charts.path().join("cluster-pod-lifecycle-latency.svg"))
        .expect("latency chart");
    assert!(svg.contains("<svg"));
    assert!(charts.path().join("cluster-throughput.svg").exists());
}

/// `compare` of two fresh servers over `rounds` rounds of `workload`
/// (after the load flags in `load`): its printout and its JSON report.
fn compare(
    a: &Server,
    b: &Server,
    load: &[&str],
    rounds: &str,
    workload: &[&str],
) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    let mut args = vec!["--quiet", "--output", out.to_str().unwrap()];
    args.extend_from_slice(load);
    args.extend_from_slice(&[
        "compare", "--a", &a.base, "--b", &b.base, "--rounds", rounds,
    ]);
    args.extend_from_slice(workload);
    let o = bench(&args);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let c = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (stdout, c)
}

#[test]
fn compare_alternates_targets() {
    let a = Server::start();
    let b = Server::start();
    let (stdout, c) = compare(
        &a,
        &b,
        &["--duration", "400ms"],
        "2",
        &["get", "--objects", "5"],
    );
    assert_eq!(stdout.matches("round 2 B/A").count(), 1, "{stdout}");
    assert!(stdout.contains("median B/A over 2 rounds"), "{stdout}");
    let rounds = c["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    for r in rounds {
        assert_eq!(r["a"]["target"], a.base.as_str());
        assert_eq!(r["b"]["target"], b.base.as_str());
        assert!(r["throughput_ratio"].as_f64().unwrap() > 0.0);
    }
    assert!(c["median_throughput_ratio"].as_f64().unwrap() > 0.0);
}

/// A read-only workload reads the same objects in every round: a LIST of
/// N used to list N more objects each round (each round made its own).
#[test]
fn compare_lists_the_same_objects_every_round() {
    let a = Server::start();
    let b = Server::start();
    let load = ["--duration", "300ms", "--namespace", "rounds"];
    let (_, c) = compare(&a, &b, &load, "3", &["list", "--objects", "30"]);
    let rounds = c["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 3);
    for (i, r) in rounds.iter().enumerate() {
        for side in ["a", "b"] {
            let extra = &r[side]["extra"];
            assert_eq!(
                extra["items_per_list"],
                30,
                "round {} {side}: {extra}",
                i + 1
            );
            // Only the first round creates them.
            assert_eq!(extra.get("setup_objects").is_some(), i == 0, "{extra}");
        }
    }
}

#[test]
fn refuses_non_loopback_targets() {
    for url in ["http://10.1.2.3:8080", "https://example.com"] {
        let o = bench(&["get", "--url", url, "--count", "1", "--quiet"]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("not a loopback address"), "{err}");
    }
}
