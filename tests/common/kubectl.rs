//! Running kubectl 1.32 against a test server.

use super::Server;
use std::process::{Command, Output, Stdio};

pub struct Kubectl<'a> {
    pub server: &'a Server,
    kubeconfig: std::path::PathBuf,
}

pub fn kubectl_path() -> &'static str {
    if std::path::Path::new("/usr/bin/kubectl").exists() {
        "/usr/bin/kubectl"
    } else {
        "kubectl"
    }
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

    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.command(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("run kubectl")
    }

    /// Runs kubectl (with extra environment), asserting success; returns stdout.
    pub fn ok_with(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run(args, env);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}\n{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.server.log()
        );
        stdout
    }

    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[])
    }

    /// Runs kubectl expecting failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args, &[]);
        assert!(!out.status.success(), "kubectl {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).to_string()
    }

    /// Writes `yaml` to a file named `name` and returns its path.
    pub fn file(&self, name: &str, yaml: &str) -> String {
        let path = self.server.dir.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        path.to_str().unwrap().to_string()
    }

    /// `kubectl <verb> -f` of `yaml` written to a file; returns stdout.
    pub fn apply_file(&self, verb: &str, yaml: &str) -> String {
        let path = self.file(&format!("{verb}.yaml"), yaml);
        self.ok(&[verb, "-f", &path])
    }

    /// `kubectl get … -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl printed JSON")
    }
}

/// Output lines split into words, blank lines dropped.
pub fn words(s: &str) -> Vec<Vec<String>> {
    s.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .filter(|l: &Vec<String>| !l.is_empty())
        .collect()
}
