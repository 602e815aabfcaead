//! The parts of a kubeconfig a load generator needs: the server URL, how to
//! trust it, and how to authenticate (bearer token, basic auth or client
//! certificate). Exec plugins and auth providers are not supported: a
//! benchmark should not depend on a helper binary's latency.

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// What a kubeconfig context says about its cluster and user.
#[derive(Debug, Default, Clone)]
pub struct KubeContext {
    pub server: Option<String>,
    pub insecure_skip_tls_verify: bool,
    /// PEM of the cluster's CA.
    pub ca_pem: Option<Vec<u8>>,
    pub token: Option<String>,
    pub basic: Option<(String, String)>,
    /// PEM of the client certificate chain and key.
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
}

/// Loads `context` (or the current context) from the kubeconfig at `path`.
pub fn load(path: &Path, context: Option<&str>) -> Result<KubeContext> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&text, &dir, context)
}

/// Parses kubeconfig text; relative file paths are taken from `dir`.
pub fn parse(text: &str, dir: &Path, context: Option<&str>) -> Result<KubeContext> {
    let doc: Value = serde_yaml::from_str(text).context("kubeconfig is not YAML")?;
    let ctx_name = match context {
        Some(c) => c.to_string(),
        None => doc["current-context"]
            .as_str()
            .ok_or_else(|| anyhow!("kubeconfig has no current-context; pass --context"))?
            .to_string(),
    };
    let ctx = named(&doc, "contexts", &ctx_name, "context")?;
    let mut out = KubeContext::default();
    if let Some(cluster_name) = ctx["cluster"].as_str() {
        let cluster = named(&doc, "clusters", cluster_name, "cluster")?;
        out.server = cluster["server"].as_str().map(str::to_string);
        out.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"]
            .as_bool()
            .unwrap_or(false);
        out.ca_pem = data_or_file(cluster, "certificate-authority", dir)?;
    }
    if let Some(user_name) = ctx["user"].as_str() {
        let user = named(&doc, "users", user_name, "user")?;
        if user.get("exec").is_some() || user.get("auth-provider").is_some() {
            bail!("kubeconfig user {user_name}: exec and auth-provider credentials are not supported; pass --token");
        }
        out.token = match user["token"].as_str() {
            Some(t) => Some(t.to_string()),
            None => match user["tokenFile"].as_str() {
                Some(f) => Some(
                    std::fs::read_to_string(resolve(dir, f))
                        .with_context(|| format!("reading tokenFile {f}"))?
                        .trim()
                        .to_string(),
                ),
                None => None,
            },
        };
        if let (Some(u), Some(p)) = (user["username"].as_str(), user["password"].as_str()) {
            out.basic = Some((u.to_string(), p.to_string()));
        }
        out.client_cert_pem = data_or_file(user, "client-certificate", dir)?;
        out.client_key_pem = data_or_file(user, "client-key", dir)?;
    }
    Ok(out)
}

/// `list[name == wanted][field]`, kubeconfig's named-list shape.
fn named<'a>(doc: &'a Value, list: &str, wanted: &str, field: &str) -> Result<&'a Value> {
    doc[list]
        .as_sequence()
        .into_iter()
        .flatten()
        .find(|e| e["name"].as_str() == Some(wanted))
        .map(|e| &e[field])
        .ok_or_else(|| anyhow!("kubeconfig has no {list} entry named {wanted:?}"))
}

/// `<key>-data` (base64) or `<key>` (a file path).
fn data_or_file(v: &Value, key: &str, dir: &Path) -> Result<Option<Vec<u8>>> {
    if let Some(d) = v[format!("{key}-data").as_str()].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .with_context(|| format!("{key}-data is not base64"))?;
        return Ok(Some(bytes));
    }
    if let Some(f) = v[key].as_str() {
        let p = resolve(dir, f);
        let bytes = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
        return Ok(Some(bytes));
    }
    Ok(None)
}

fn resolve(dir: &Path, f: &str) -> PathBuf {
    let p = PathBuf::from(f);
    if p.is_absolute() {
        p
    } else {
        dir.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: &str = r#"
apiVersion: v1
kind: Config
current-context: a
contexts:
- name: a
  context: {cluster: c1, user: u1}
- name: b
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EK
- name: c2
  cluster: {server: "http://localhost:8080", insecure-skip-tls-verify: true}
users:
- name: u1
  user: {token: abc}
- name: u2
  user: {username: admin, password: secret}
"#;

    #[test]
    fn current_context() {
        let c = parse(CFG, Path::new("/"), None).unwrap();
        assert_eq!(c.server.as_deref(), Some("https://127.0.0.1:6443"));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"CA\n"[..]));
        assert_eq!(c.token.as_deref(), Some("abc"));
        assert!(!c.insecure_skip_tls_verify);
    }

    #[test]
    fn named_context() {
        let c = parse(CFG, Path::new("/"), Some("b")).unwrap();
        assert_eq!(c.server.as_deref(), Some("http://localhost:8080"));
        assert!(c.insecure_skip_tls_verify);
        assert_eq!(c.basic, Some(("admin".into(), "secret".into())));
        assert!(parse(CFG, Path::new("/"), Some("zz")).is_err());
    }
}
