//! Throwaway etcd clusters on loopback for the `--storage etcd` tests
//! (Debian's `etcd-server`, which the test command installs).

use super::Server;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Member {
    child: Option<Child>,
    pub client_url: String,
    client_port: u16,
    /// How it was started (a restart runs the same on the same data).
    command: Vec<String>,
    log: std::path::PathBuf,
}

impl Member {
    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new("etcd")
            .args(&self.command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.client_port)).is_err() {
            assert!(Instant::now() < deadline, "etcd did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub struct EtcdCluster {
    pub members: Vec<Member>,
    /// With TLS: the CA, and the client certificate and key replicas use.
    tls: Option<[std::path::PathBuf; 3]>,
    _dir: tempfile::TempDir,
}

/// Writes a CA, and a certificate for 127.0.0.1 signed by it that serves
/// and authenticates as a client (etcd's and the replicas'), into `dir`:
/// [ca, cert, key].
fn certificates(dir: &std::path::Path) -> [std::path::PathBuf; 3] {
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let files = ["ca.pem", "cert.pem", "key.pem"].map(|f| dir.join(f));
    std::fs::write(&files[0], ca_cert.pem()).unwrap();
    std::fs::write(&files[1], cert.pem()).unwrap();
    std::fs::write(&files[2], key.serialize_pem()).unwrap();
    files
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl EtcdCluster {
    /// A cluster of `n` members, or None (with a message) when no etcd
    /// binary is installed.
    pub fn start(n: usize) -> Option<Self> {
        Self::start_with(n, false)
    }

    /// A cluster whose clients must speak TLS with a certificate from
    /// its CA (etcd's `--client-cert-auth`).
    pub fn start_tls(n: usize) -> Option<Self> {
        Self::start_with(n, true)
    }

    fn start_with(n: usize, tls: bool) -> Option<Self> {
        if Command::new("etcd").arg("--version").output().is_err() {
            eprintln!("skipping: no etcd binary (apt-get install etcd-server)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let tls = tls.then(|| certificates(dir.path()));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let initial: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect();
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, (client, peer))| {
                let c = format!("{scheme}://127.0.0.1:{client}");
                let p = format!("http://127.0.0.1:{peer}");
                let data = dir.path().join(format!("m{i}"));
                let command = [
                    "--data-dir",
                    data.to_str().unwrap(),
                    "--name",
                    &format!("m{i}"),
                    "--listen-client-urls",
                    &c,
                    "--advertise-client-urls",
                    &c,
                    "--listen-peer-urls",
                    &p,
                    "--initial-advertise-peer-urls",
                    &p,
                    "--initial-cluster",
                    &initial.join(","),
                    "--initial-cluster-state",
                    "new",
                ]
                .map(str::to_string)
                .to_vec();
                let mut command = command;
                if let Some([ca, cert, key]) = &tls {
                    for (flag, f) in [
                        ("--trusted-ca-file", ca),
                        ("--cert-file", cert),
                        ("--key-file", key),
                    ] {
                        command.extend([flag.to_string(), f.display().to_string()]);
                    }
                    command.push("--client-cert-auth".into());
                }
                let mut m = Member {
                    child: None,
                    client_url: c,
                    client_port: *client,
                    command,
                    log: dir.path().join(format!("m{i}.log")),
                };
                m.launch();
                m
            })
            .collect();
        let cluster = Self {
            members,
            tls,
            _dir: dir,
        };
        for m in &cluster.members {
            m.wait_listening();
        }
        Some(cluster)
    }

    /// `--etcd-servers` for every member.
    pub fn servers(&self) -> String {
        self.members
            .iter()
            .map(|m| m.client_url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// SIGKILL of one member.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts a killed member again, on its data.
    pub fn restart(&mut self, i: usize) {
        self.members[i].launch();
        self.members[i].wait_listening();
    }

    /// Deletes `key` behind the servers' backs, through etcd's JSON
    /// gateway: what a server killed half way through a write leaves.
    pub fn delete_key(&self, key: &str) {
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD.encode(key);
        let url = format!("{}/v3/kv/deleterange", self.members[0].client_url);
        let answer: serde_json::Value = ureq::post(&url)
            .send_json(serde_json::json!({ "key": key }))
            .expect("etcd deleterange")
            .body_mut()
            .read_json()
            .unwrap();
        assert_eq!(answer["deleted"], "1", "{answer}");
    }

    /// Whether `key` is in etcd, read through etcd's JSON gateway.
    pub fn has_key(&self, key: &str) -> bool {
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD.encode(key);
        let url = format!("{}/v3/kv/range", self.members[0].client_url);
        let answer: serde_json::Value = ureq::post(&url)
            .send_json(serde_json::json!({ "key": key, "count_only": true }))
            .expect("etcd range")
            .body_mut()
            .read_json()
            .unwrap();
        answer["count"] == "1"
    }

    /// A kubeshard replica over this cluster.
    pub fn replica(&self, shards: usize, extra: &[&str]) -> Server {
        let servers = self.servers();
        let mut args = vec!["--storage", "etcd", "--etcd-servers", &servers];
        let files = self
            .tls
            .as_ref()
            .map(|f| f.clone().map(|p| p.display().to_string()));
        if let Some([ca, cert, key]) = &files {
            args.extend([
                "--etcd-cafile",
                ca,
                "--etcd-certfile",
                cert,
                "--etcd-keyfile",
                key,
            ]);
        }
        args.extend(extra);
        Server::start_with(shards, &args)
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
