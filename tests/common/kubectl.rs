//! Driving kubectl 1.32 against a test server: a kubeconfig pointing at
//! it, and helpers that assert on what kubectl prints.

use super::Server;
use std::process::{Command, Stdio};

pub struct Kubectl<'a> {
    pub server: &'a Server,
    kubeconfig: std::path::PathBuf,
}

impl<'a> Kubectl<'a> {
    pub fn new(server: &'a Server) -> Self {
        let kubeconfig = server.dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: ks\n  cluster:\n    server: {}\ncontexts:\n- name: ks\n  context:\n    cluster: ks\n    user: u\ncurrent-context: ks\nusers:\n- name: u\n  user: {{}}\n",
                server.base
            ),
        )
        .unwrap();
        Kubectl { server, kubeconfig }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(kubectl_path());
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.server.dir.path())
            .stdin(Stdio::null());
        c
    }

    /// Runs kubectl, asserting success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("run kubectl");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}\n{stderr}\nserver log:\n{}",
            self.server.log()
        );
        stdout
    }

    /// Runs kubectl expecting failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("run kubectl");
        assert!(!out.status.success(), "kubectl {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).to_string()
    }

    pub fn apply_file(&self, verb: &str, yaml: &str) -> String {
        let path = self.server.dir.path().join(format!("{verb}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        self.ok(&[verb, "-f", path.to_str().unwrap()])
    }
}

fn kubectl_path() -> &'static str {
    if std::path::Path::new("/usr/bin/kubectl").exists() {
        "/usr/bin/kubectl"
    } else {
        "kubectl"
    }
}

/// Output lines split into words, blank lines dropped.
pub fn words(s: &str) -> Vec<Vec<String>> {
    s.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .filter(|l: &Vec<String>| !l.is_empty())
        .collect()
}
