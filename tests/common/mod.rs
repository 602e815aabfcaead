//! Test harness: starts the real kubeshard binary on a free loopback port,
//! waits for /readyz, and talks to it over HTTP.

#![allow(dead_code)]

pub mod etcd;
pub mod extension;
pub mod kubectl;
pub mod kubelet;
pub mod protobuf;
pub mod protobuf_kinds;
pub mod python;
pub mod resources;
pub mod tls;
pub mod verbs;
pub mod webhook;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub port: u16,
    /// The HTTPS port (every server also listens with TLS; see `tls.rs`).
    pub secure_port: u16,
    pub dir: tempfile::TempDir,
    /// Where the server keeps its state (and its generated certificates).
    pub data_dir: PathBuf,
    agent: ureq::Agent,
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kubeshard"))
}

impl Server {
    pub fn start(shards: usize) -> Server {
        Self::start_with(shards, &[])
    }

    pub fn start_with(shards: usize, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        Self::launch_in(dir, shards, &data, extra, None)
            .unwrap_or_else(|log| panic!("kubeshard exited early: {log}"))
    }

    /// A server whose process may open at most `fds` file descriptors.
    pub fn start_with_fd_limit(shards: usize, extra: &[&str], fds: u64) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        Self::launch_in(dir, shards, &data, extra, Some(fds))
            .unwrap_or_else(|log| panic!("kubeshard exited early: {log}"))
    }

    /// Starts a server on the given data directory (which outlives it, for
    /// restarts); Err carries the server's log when it exits before ready.
    pub fn launch(
        shards: usize,
        data_dir: &std::path::Path,
        extra: &[&str],
    ) -> Result<Server, String> {
        Self::launch_in(
            tempfile::tempdir().expect("tempdir"),
            shards,
            data_dir,
            extra,
            None,
        )
    }

    fn launch_in(
        dir: tempfile::TempDir,
        shards: usize,
        data_dir: &std::path::Path,
        extra: &[&str],
        fd_limit: Option<u64>,
    ) -> Result<Server, String> {
        let port_file = dir.path().join("port");
        let secure_port_file = dir.path().join("secure-port");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("log file");
        // A test may name its own plain port (restarts on the same port).
        let insecure_port = if extra.contains(&"--insecure-port") {
            &[][..]
        } else {
            &["--insecure-port", "0"][..]
        };
        // Unless a test chooses its controllers, the root CA publisher
        // stays off: its kube-root-ca.crt in every namespace would be in
        // every ConfigMap count (tests/system_objects.rs turns it on).
        let controllers = if extra.iter().any(|a| a.starts_with("--controllers")) {
            &[][..]
        } else {
            &["--controllers=*,-root-ca-cert-publisher"][..]
        };
        // Or its own secure address (replicas on one port, each on its
        // own loopback address).
        let secure = if extra.contains(&"--secure-port") {
            &[][..]
        } else {
            &["--secure-port", "0", "--bind-address", "127.0.0.1"][..]
        };
        let mut command = Command::new(binary());
        if let Some(n) = fd_limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe and touches only the
            // child's own limits between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let lim = RLimit { cur: n, max: n };
                    if setrlimit(RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = command
            .args(insecure_port)
            .args(controllers)
            .args(["--shards", &shards.to_string()])
            .arg("--port-file")
            .arg(&port_file)
            .args(secure)
            .arg("--secure-port-file")
            .arg(&secure_port_file)
            .arg("--data-dir")
            .arg(data_dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kubeshard");
        let mut server = Server {
            child: Some(child),
            base: String::new(),
            port: 0,
            secure_port: 0,
            dir,
            data_dir: data_dir.to_path_buf(),
            agent: agent(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = server.child.as_mut().unwrap().try_wait().unwrap() {
                server.child = None;
                return Err(format!("({status}) {}", server.log()));
            }
            if let Ok(p) = std::fs::read_to_string(&port_file) {
                if let Ok(port) = p.trim().parse::<u16>() {
                    server.port = port;
                    server.base = format!("http://127.0.0.1:{port}");
                    let secure = std::fs::read_to_string(&secure_port_file)
                        .ok()
                        .and_then(|p| p.trim().parse::<u16>().ok());
                    if let (Some(sp), 200) = (secure, server.get("/readyz").0) {
                        server.secure_port = sp;
                        return Ok(server);
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "server not ready: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: the server gets no chance to flush or clean up.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        respond(self.agent.get(&self.url(path)).call())
    }

    pub fn get_with(&self, path: &str, accept: &str) -> (u16, String, String) {
        let r = self
            .agent
            .get(&self.url(path))
            .header("Accept", accept)
            .call();
        raw(r)
    }

    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(
            "POST",
            path,
            "application/json",
            body.to_string().as_bytes(),
        )
    }

    pub fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send("PUT", path, "application/json", body.to_string().as_bytes())
    }

    pub fn patch(&self, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
        self.send("PATCH", path, content_type, body.to_string().as_bytes())
    }

    pub fn delete(&self, path: &str) -> (u16, Value) {
        respond(self.agent.delete(&self.url(path)).call())
    }

    pub fn delete_with(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(
            "DELETE",
            path,
            "application/json",
            body.to_string().as_bytes(),
        )
    }

    /// Server-side apply of a YAML configuration (`path` carries
    /// `fieldManager` and any other options).
    pub fn apply_yaml(&self, path: &str, yaml: &str) -> (u16, Value) {
        self.send(
            "PATCH",
            path,
            "application/apply-patch+yaml",
            yaml.as_bytes(),
        )
    }

    pub fn send(&self, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
        let (code, _, text) = self.send_raw(method, path, content_type, body);
        (
            code,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub fn send_raw(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, String, String) {
        raw(self
            .agent
            .run(self.request(method, path, content_type, body)))
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> http::Request<Vec<u8>> {
        http::Request::builder()
            .method(method)
            .uri(self.url(path))
            .header("Content-Type", content_type)
            .body(body.to_vec())
            .unwrap()
    }

    /// A request whose `Warning` response headers matter: (code, the
    /// warning texts unquoted, body).
    pub fn send_warned(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, Vec<String>, Value) {
        let mut resp = self
            .agent
            .run(self.request(method, path, content_type, body))
            .expect("request failed");
        let warnings = resp
            .headers()
            .get_all("warning")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| {
                let quoted = v.splitn(3, ' ').nth(2).unwrap_or("");
                serde_json::from_str::<String>(quoted).unwrap_or_else(|_| quoted.to_string())
            })
            .collect();
        let code = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (
            code,
            warnings,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Opens a watch and returns a reader of its events.
    pub fn watch(&self, path: &str) -> WatchStream {
        let resp = self
            .agent
            .get(&self.url(path))
            .call()
            .expect("watch request");
        assert_eq!(resp.status().as_u16(), 200, "watch status");
        WatchStream {
            lines: Box::new(BufReader::new(resp.into_body().into_reader())),
        }
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        unsafe {
            libc_kill(child.id() as i32, 15);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("server did not stop on SIGTERM: {}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
    fn setrlimit(resource: i32, rlim: *const RLimit) -> i32;
}

#[repr(C)]
struct RLimit {
    cur: u64,
    max: u64,
}

const RLIMIT_NOFILE: i32 = 7;

/// What /proc says about the server process.
impl Server {
    /// Resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// Open file descriptors.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// CPU time used so far (user + system), in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        // Fields after the command name (which may hold spaces).
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub struct WatchStream {
    lines: Box<dyn BufRead + Send>,
}

impl WatchStream {
    /// The next event, or None at the end of the stream.
    pub fn next_event(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.lines.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad event {line:?}: {e}")),
            ),
        }
    }

    /// Reads events until `pred` matches one, returning all read so far.
    pub fn until(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(e) = self.next_event() {
            let done = pred(&e);
            seen.push(e);
            if done {
                return seen;
            }
        }
        panic!("watch ended before the expected event; saw {seen:?}");
    }

    pub fn rest(mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(e) = self.next_event() {
            out.push(e);
        }
        out
    }

    pub fn read_all_raw(mut self) -> String {
        let mut s = String::new();
        let _ = self.lines.read_to_string(&mut s);
        s
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn raw(r: Result<http::Response<ureq::Body>, ureq::Error>) -> (u16, String, String) {
    let mut resp = r.expect("request failed");
    let code = resp.status().as_u16();
    let ct = content_type(&resp);
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (code, ct, text)
}

/// A response's Content-Type ("" when absent).
pub fn content_type<B>(resp: &http::Response<B>) -> String {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn respond(r: Result<http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
    let (code, _, text) = raw(r);
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A ConfigMap body.
pub fn configmap(name: &str, labels: Value) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": "v"}
    })
}

pub fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// "namespace/name" of every item of a list, in order.
pub fn keys(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap(),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
        .parse()
        .unwrap()
}

/// The fields of a Status's causes, in order.
pub fn cause_fields(status: &Value) -> Vec<&str> {
    status["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes in {status}"))
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect()
}

/// Sends an upgrade `request` (whole, with its blank line) to the plain
/// port, expects a 101 to the `echo` protocol and sees bytes sent over
/// the tunnel come back; answers the response head (lowercased) for
/// further checks.
pub fn upgrade_to_echo(s: &Server, request: &str) -> String {
    use std::io::Write;
    let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        c.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: echo"), "{head}");
    for msg in ["ping", "and again"] {
        c.write_all(msg.as_bytes()).unwrap();
        let mut back = vec![0u8; msg.len()];
        c.read_exact(&mut back).unwrap();
        assert_eq!(back, msg.as_bytes());
    }
    head
}

/// Polls `check` until it returns Some (or panics after `secs` seconds with
/// `what`): for state that controllers reach asynchronously.
pub fn eventually<T>(secs: u64, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Server {
    /// Waits until GET of `path` answers 404.
    pub fn wait_gone(&self, path: &str) {
        eventually(30, &format!("{path} to be gone"), || {
            (self.get(path).0 == 404).then_some(())
        });
    }
}

/// A server that writes an audit log with `policy` (YAML): the server and
/// the log's path (the directory lives as long as the test process).
pub fn start_audited(shards: usize, policy: &str) -> (Server, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let policy_file = dir.path().join("policy.yaml");
    std::fs::write(&policy_file, policy).unwrap();
    let log = dir.path().join("audit.log");
    let s = Server::start_with(
        shards,
        &[
            "--audit-policy-file",
            policy_file.to_str().unwrap(),
            "--audit-log-path",
            log.to_str().unwrap(),
        ],
    );
    std::mem::forget(dir);
    (s, log)
}

/// A name not used before in this test process (`<prefix>-<n>`), for
/// probes that repeat until the server has caught up.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Creates a namespace and returns its name.
pub fn namespace(s: &Server, name: &str) -> String {
    let (code, body) = s.post(
        "/api/v1/namespaces",
        &serde_json::json!({"metadata": {"name": name}}),
    );
    assert_eq!(code, 201, "{body}");
    name.to_string()
}

/// Runs a scenario against `--shards 1` and `--shards 4`.
#[macro_export]
macro_rules! each_shard_count {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn one_shard() {
                ($body)(1)
            }
            #[test]
            fn four_shards() {
                ($body)(4)
            }
        }
    };
}

pub mod wal;

/// `path` as a meta.k8s.io/v1 Table: the table, and its column names.
pub fn table(s: &Server, path: &str) -> (Value, Vec<String>) {
    let (code, _, text) = s.get_with(path, "application/json;as=Table;v=v1;g=meta.k8s.io");
    assert_eq!(code, 200, "{path}: {text}");
    let table: Value = serde_json::from_str(&text).unwrap();
    let columns = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    (table, columns)
}
