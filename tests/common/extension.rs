//! An extension API server for tests: `kubeshard-bench metrics-server`
//! (metrics.k8s.io/v1beta1) on a free loopback port, with a serving
//! certificate from its own CA (for the APIService's `caBundle`), trusting
//! the front proxy the server under test publishes in
//! `extension-apiserver-authentication`; registered behind a Service, an
//! EndpointSlice on loopback and an APIService.

use super::Server;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NAMESPACE: &str = "kube-system";
pub const SERVICE: &str = "metrics-server";
pub const APISERVICE: &str = "v1beta1.metrics.k8s.io";

/// target/<profile>/kubeshard-bench (built by `cargo nextest run
/// --workspace`; built here when a test runs on its own).
pub fn bench_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("kubeshard-bench");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "kubeshard-bench", "--bin", "kubeshard-bench"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build -p kubeshard-bench");
        assert!(status.success(), "cargo build -p kubeshard-bench failed");
    }
    bin
}

pub struct MetricsServer {
    child: Option<Child>,
    pub port: u16,
    /// PEM of the CA that signed its serving certificate.
    pub ca_pem: String,
    dir: PathBuf,
    args: Vec<String>,
}

impl MetricsServer {
    /// Starts one trusting `s`'s front proxy, reporting `nodes` and `pods`
    /// (`namespace/name`).
    pub fn start(s: &Server, nodes: &[&str], pods: &[&str]) -> MetricsServer {
        let dir = s.data_dir.join("metrics-server");
        std::fs::create_dir_all(&dir).unwrap();
        let (ca_pem, cert, key) = serving_cert(&format!("{SERVICE}.{NAMESPACE}.svc"));
        std::fs::write(dir.join("tls.crt"), cert).unwrap();
        std::fs::write(dir.join("tls.key"), key).unwrap();
        // The front proxy's CA, read as an extension server reads it.
        let (code, cm) = s.get(&format!(
            "/api/v1/namespaces/{NAMESPACE}/configmaps/extension-apiserver-authentication"
        ));
        assert_eq!(code, 200, "{cm}");
        let proxy_ca = cm["data"]["requestheader-client-ca-file"]
            .as_str()
            .expect("the request-header CA is published")
            .to_string();
        std::fs::write(dir.join("front-proxy-ca.crt"), proxy_ca).unwrap();
        let names: Vec<String> = serde_json::from_str(
            cm["data"]["requestheader-allowed-names"]
                .as_str()
                .expect("allowed names are published"),
        )
        .unwrap();
        let d = |f: &str| dir.join(f).to_string_lossy().into_owned();
        let args = vec![
            "metrics-server".to_string(),
            format!("--cert={}", d("tls.crt")),
            format!("--key={}", d("tls.key")),
            format!("--requestheader-client-ca={}", d("front-proxy-ca.crt")),
            format!("--requestheader-allowed-names={}", names.join(",")),
            format!("--nodes={}", nodes.join(",")),
            format!("--pods={}", pods.join(",")),
            "--watch-interval=300ms".to_string(),
        ];
        let mut m = MetricsServer {
            child: None,
            port: 0,
            ca_pem,
            dir,
            args,
        };
        m.launch();
        m
    }

    fn launch(&mut self) {
        let port_file = self.dir.join("port");
        let _ = std::fs::remove_file(&port_file);
        let mut args = self.args.clone();
        args.push(format!("--port={}", self.port));
        args.push(format!("--port-file={}", port_file.display()));
        let log = std::fs::File::create(self.dir.join("log")).unwrap();
        let child = Command::new(bench_binary())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kubeshard-bench metrics-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        self.port = loop {
            if let Some(p) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            assert!(Instant::now() < deadline, "metrics-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
    }

    /// Stops it (SIGKILL).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    /// The Service, the EndpointSlice leading to this server, and the
    /// APIService registering it.
    pub fn register(&self, s: &Server) {
        let (code, out) = s.post(
            &format!("/api/v1/namespaces/{NAMESPACE}/services"),
            &json!({"metadata": {"name": SERVICE}, "spec": {"ports": [
                {"name": "https", "port": 443, "targetPort": self.port}]}}),
        );
        assert_eq!(code, 201, "{out}");
        let (code, out) = s.post(
            &format!("/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices"),
            &json!({"metadata": {"name": format!("{SERVICE}-1"),
                        "labels": {"kubernetes.io/service-name": SERVICE}},
                    "addressType": "IPv4",
                    "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}],
                    "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]}),
        );
        assert_eq!(code, 201, "{out}");
        let (code, out) = s.post(
            "/apis/apiregistration.k8s.io/v1/apiservices",
            &self.apiservice(),
        );
        assert_eq!(code, 201, "{out}");
    }

    pub fn apiservice(&self) -> Value {
        use base64::Engine;
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": APISERVICE},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                "groupPriorityMinimum": 100, "versionPriority": 100,
                "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
                "service": {"namespace": NAMESPACE, "name": SERVICE, "port": 443}}})
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A CA and a serving certificate it signs for `dns` and 127.0.0.1: (CA
/// PEM, cert PEM, key PEM).
fn serving_cert(dns: &str) -> (String, String, String) {
    let sans = vec![dns.to_string(), "127.0.0.1".into()];
    let (ca, leaf, key) = super::tls::ca_and_serving_cert("metrics-server-test-ca", sans);
    (ca, leaf.pem(), key.serialize_pem())
}

/// The `Available` condition of the APIService named `name`.
pub fn available(s: &Server, name: &str) -> Option<Value> {
    let (_, a) = s.get(&format!(
        "/apis/apiregistration.k8s.io/v1/apiservices/{name}"
    ));
    a["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")
        .cloned()
}
