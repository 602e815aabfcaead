//! kube-apiserver and kubeshard on one etcd read, write and watch each
//! other's objects: built-in kinds (kube's protobuf in etcd) and a custom
//! resource (JSON), in kube's key layout. Needs the real kube-apiserver
//! (`../shared/tools/build-kube.sh` puts it in ~/.cache/kubeshard-kube/bin,
//! or set KUBE_BIN_DIR); skipped, with a message, without it or etcd.

#![cfg(feature = "etcd")]

mod common;

use common::etcd::EtcdCluster;
use common::{eventually, names, rv};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn kube_bin_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("KUBE_BIN_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/kubeshard-kube/bin"))
        })?;
    dir.join("kube-apiserver").is_file().then_some(dir)
}

/// The kube binaries' directory and a fresh etcd, or None (with a message
/// on why the test is skipped).
fn kube_and_etcd() -> Option<(PathBuf, EtcdCluster)> {
    let Some(bin) = kube_bin_dir() else {
        eprintln!(
            "skipping: no kube-apiserver (run ../shared/tools/build-kube.sh, or set KUBE_BIN_DIR)"
        );
        return None;
    };
    Some((bin, EtcdCluster::start(1)?))
}

/// kube-apiserver on `etcd`, with certificates from the harness's shared
/// shell library; stopped on drop.
struct KubeApiserver {
    child: Child,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for KubeApiserver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl KubeApiserver {
    fn start(bin: &Path, etcd: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Self::start_on(bin, etcd, port, "127.0.0.1")
    }

    /// On 127.0.0.1:`port`, advertising `advertise` (the address its
    /// endpoint reconciler writes).
    fn start_on(bin: &Path, etcd: &str, port: u16, advertise: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pki = dir.path().join("pki");
        let root = env!("CARGO_MANIFEST_DIR");
        let ok = Command::new("bash")
            .args([
                "-c",
                "log() { :; }; source \"$1/scripts/lib/clusters.sh\"; gen_certs \"$2\"",
                "_",
                root,
                pki.to_str().unwrap(),
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "certificate generation failed");
        let p = |f: &str| pki.join(f).to_str().unwrap().to_string();
        let log = std::fs::File::create(dir.path().join("kube-apiserver.log")).unwrap();
        let child = Command::new(bin)
            .args(["--etcd-servers", etcd, "--secure-port", &port.to_string()])
            .args([
                "--bind-address",
                "127.0.0.1",
                "--advertise-address",
                advertise,
            ])
            .args(["--service-cluster-ip-range", "10.0.0.0/24"])
            .args(["--authorization-mode", "Node,RBAC"])
            .args([
                "--service-account-issuer",
                "https://kubernetes.default.svc.cluster.local",
            ])
            .args(["--service-account-key-file", &p("sa.pub")])
            .args(["--service-account-signing-key-file", &p("sa.key")])
            .args(["--client-ca-file", &p("ca.crt")])
            .args(["--tls-cert-file", &p("apiserver.crt")])
            .args(["--tls-private-key-file", &p("apiserver.key")])
            .arg("--cert-dir")
            .arg(dir.path().join("kas-certs"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start kube-apiserver");
        let kubeconfig = dir.path().join("admin.kubeconfig");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: k\n  context: {{cluster: k, user: admin}}\ncurrent-context: k\n",
            p("ca.crt"),
            p("admin.crt"),
            p("admin.key")
        );
        std::fs::write(&kubeconfig, config).unwrap();
        let kas = Self {
            child,
            kubeconfig,
            _dir: dir,
        };
        eventually(120, "kube-apiserver ready", || {
            kas.kubectl(&["get", "--raw", "/readyz"]).ok()
        });
        kas
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--request-timeout", "10s"])
            .args(args)
            .output()
            .unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn get(&self, path: &str) -> Value {
        let raw = self
            .kubectl(&["get", "--raw", path])
            .unwrap_or_else(|e| panic!("kube-apiserver GET {path}: {e}"));
        serde_json::from_str(&raw).unwrap()
    }

    fn apply(&self, obj: &Value) {
        self.create(obj)
            .unwrap_or_else(|e| panic!("kube-apiserver create: {e}"));
    }

    fn create(&self, obj: &Value) -> Result<String, String> {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), obj.to_string()).unwrap();
        self.kubectl(&["create", "-f", file.path().to_str().unwrap()])
    }
}

const NS: &str = "/api/v1/namespaces/default";

#[test]
fn kube_apiserver_and_kubeshard_share_their_objects() {
    let Some((bin, etcd)) = kube_and_etcd() else {
        return;
    };
    let kas = KubeApiserver::start(&bin.join("kube-apiserver"), &etcd.servers());
    let ks = etcd.replica(2, &[]);

    // Written by kube-apiserver (protobuf in etcd), read by kubeshard.
    kas.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "from-kube", "namespace": "default", "labels": {"a": "b"}},
        "data": {"k": "v"}}));
    kas.apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx",
                                       "ports": [{"containerPort": 80}]}]}}}}));
    for path in [
        format!("{NS}/configmaps/from-kube"),
        "/apis/apps/v1/namespaces/default/deployments/web".to_string(),
    ] {
        let theirs = kas.get(&path);
        let (code, ours) = ks.get(&path);
        assert_eq!(code, 200, "{path}: {ours}");
        assert_eq!(rv(&ours), rv(&theirs), "{path}");
        assert_eq!(ours["spec"], theirs["spec"], "{path}");
        assert_eq!(ours["data"], theirs["data"], "{path}");
        assert_eq!(ours["metadata"]["uid"], theirs["metadata"]["uid"], "{path}");
        assert_eq!(
            ours["metadata"]["labels"], theirs["metadata"]["labels"],
            "{path}"
        );
    }

    // Written by kubeshard, read by kube-apiserver.
    let (code, ours) = ks.post(
        &format!("{NS}/secrets"),
        &json!({"metadata": {"name": "from-kubeshard"}, "stringData": {"p": "w"}}),
    );
    assert_eq!(code, 201, "{ours}");
    let theirs = kas.get(&format!("{NS}/secrets/from-kubeshard"));
    assert_eq!(theirs["data"], json!({"p": "dw=="}));
    assert_eq!(rv(&theirs), rv(&ours));

    // An update through kube-apiserver of kubeshard's object, and the
    // other way round, each with the version the other answered.
    let mut s = theirs.clone();
    s["data"]["q"] = json!("eA==");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), s.to_string()).unwrap();
    kas.kubectl(&["replace", "-f", file.path().to_str().unwrap()])
        .expect("kube-apiserver replaces kubeshard's secret");
    let (_, ours) = ks.get(&format!("{NS}/secrets/from-kubeshard"));
    assert_eq!(ours["data"]["q"], "eA==");
    let mut cm = ks.get(&format!("{NS}/configmaps/from-kube")).1;
    cm["data"]["k"] = json!("changed by kubeshard");
    let (code, _) = ks.put(&format!("{NS}/configmaps/from-kube"), &cm);
    assert_eq!(code, 200);
    assert_eq!(
        kas.get(&format!("{NS}/configmaps/from-kube"))["data"]["k"],
        "changed by kubeshard"
    );

    // A custom resource: the definition and an object through kube.
    kas.apply(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}));
    eventually(30, "kube to serve widgets", || {
        kas.kubectl(&[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
        ])
        .ok()
    });
    kas.apply(&json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}}));
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let list = eventually(30, "kubeshard to serve kube's widget", || {
        let (code, list) = ks.get(widgets);
        (code == 200 && names(&list) == ["w1"]).then_some(list)
    });
    assert_eq!(list["items"][0]["spec"]["size"], 3);
    let (code, w2) = ks.post(
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w2"}, "spec": {"size": 5}}),
    );
    assert_eq!(code, 201, "{w2}");
    let theirs = kas.get(&format!("{widgets}/w2"));
    assert_eq!(theirs["spec"]["size"], 5, "{theirs}\n{w2}");

    // Watches: kubeshard sees kube's writes in order, and the reverse.
    let mut watch = ks.watch(&format!(
        "{NS}/configmaps?watch=1&resourceVersion={}",
        rv(&cm)
    ));
    kas.kubectl(&["create", "configmap", "watched", "--from-literal=x=y"])
        .unwrap();
    kas.kubectl(&["delete", "configmap", "watched"]).unwrap();
    let events = watch.until(|e| e["type"] == "DELETED");
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == "watched")
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ADDED", "DELETED"]);
    // kube-apiserver's watch from before kubeshard's write sees it.
    let (code, created) = ks.post(
        &format!("{NS}/configmaps"),
        &json!({"metadata": {"name": "seen-by-kube"}}),
    );
    assert_eq!(code, 201);
    let stream = kas
        .kubectl(&[
            "get",
            "--raw",
            &format!(
                "{NS}/configmaps?watch=1&resourceVersion={}&timeoutSeconds=3",
                rv(&created) - 1
            ),
        ])
        .unwrap();
    let first: Value = serde_json::from_str(stream.lines().next().unwrap_or("{}")).unwrap();
    assert_eq!(first["type"], "ADDED", "{stream}");
    assert_eq!(first["object"]["metadata"]["name"], "seen-by-kube");
    assert_eq!(rv(&first["object"]), rv(&created));
}

fn node_port_service(name: &str, node_port: u16) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"type": "NodePort", "selector": {"app": name},
                 "ports": [{"port": 80, "protocol": "TCP", "nodePort": node_port}]}})
}

/// What kube-apiserver keeps beside the objects, shared: the node-port
/// bitmap (neither server hands out a port the other holds) and the
/// `kubernetes` Service's endpoints (each server's lease, both listed).
#[test]
fn kube_apiserver_and_kubeshard_share_node_ports_and_endpoints() {
    let Some((bin, etcd)) = kube_and_etcd() else {
        return;
    };
    // One secure port (the endpoints hold one), on two loopback addresses.
    let port = std::net::TcpListener::bind("127.0.0.2:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let kas = KubeApiserver::start_on(
        &bin.join("kube-apiserver"),
        &etcd.servers(),
        port,
        "192.0.2.21",
    );
    let port = port.to_string();
    let ks = etcd.replica(
        1,
        &[
            "--secure-port",
            &port,
            "--bind-address",
            "127.0.0.2",
            "--advertise-address",
            "192.0.2.22",
        ],
    );

    kas.apply(&node_port_service("kube-holds", 30100));
    let (code, status) = ks.post(
        &format!("{NS}/services"),
        &node_port_service("asks-kubes", 30100),
    );
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("already allocated"),
        "{status}"
    );
    let (code, svc) = ks.post(&format!("{NS}/services"), &node_port_service("ours", 30101));
    assert_eq!(code, 201, "{svc}");
    let refused = kas
        .create(&node_port_service("asks-ours", 30101))
        .unwrap_err();
    assert!(
        refused.contains("provided port is already allocated"),
        "{refused}"
    );

    let both = json!([{"ip": "192.0.2.21"}, {"ip": "192.0.2.22"}]);
    eventually(60, "both servers in the kubernetes endpoints", || {
        let theirs = kas.get(&format!("{NS}/endpoints/kubernetes"));
        let (_, ours) = ks.get(&format!("{NS}/endpoints/kubernetes"));
        (theirs["subsets"][0]["addresses"] == both && ours["subsets"][0]["addresses"] == both)
            .then_some(())
    });
}
