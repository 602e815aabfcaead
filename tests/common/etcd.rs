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
}

pub struct EtcdCluster {
    pub members: Vec<Member>,
    _dir: tempfile::TempDir,
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
        if Command::new("etcd").arg("--version").output().is_err() {
            eprintln!("skipping: no etcd binary (apt-get install etcd-server)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
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
                let c = format!("http://127.0.0.1:{client}");
                let p = format!("http://127.0.0.1:{peer}");
                let log = std::fs::File::create(dir.path().join(format!("m{i}.log"))).unwrap();
                let child = Command::new("etcd")
                    .arg("--data-dir")
                    .arg(dir.path().join(format!("m{i}")))
                    .args(["--name", &format!("m{i}")])
                    .args(["--listen-client-urls", &c, "--advertise-client-urls", &c])
                    .args([
                        "--listen-peer-urls",
                        &p,
                        "--initial-advertise-peer-urls",
                        &p,
                    ])
                    .args(["--initial-cluster", &initial.join(",")])
                    .args(["--initial-cluster-state", "new"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .expect("start etcd");
                Member {
                    child: Some(child),
                    client_url: c,
                    client_port: *client,
                }
            })
            .collect();
        let cluster = Self { members, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        for m in &cluster.members {
            while TcpStream::connect(("127.0.0.1", m.client_port)).is_err() {
                assert!(Instant::now() < deadline, "etcd did not start");
                std::thread::sleep(Duration::from_millis(50));
            }
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

    /// A kubeshard replica over this cluster.
    pub fn replica(&self, shards: usize, extra: &[&str]) -> Server {
        let servers = self.servers();
        let mut args = vec!["--storage", "etcd", "--etcd-servers", &servers];
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
