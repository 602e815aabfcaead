//! TLS helpers for tests: clients of the secure port that trust the
//! server's generated CA and authenticate as somebody — a client
//! certificate signed by that CA (or by a stranger), a bearer token, or
//! no credential at all — plus kubeconfigs for kubectl doing the same.

use super::Server;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};

/// Who a client authenticates as.
#[derive(Clone, Debug)]
pub enum Who {
    Anonymous,
    /// A client certificate from the server's CA: CN = user, O = groups.
    Cert(String, Vec<String>),
    /// A client certificate from a CA the server does not know.
    StrangerCert(String),
    Token(String),
    /// A certificate and key issued some other way (cert PEM, key PEM).
    Issued(String, String),
}

impl Who {
    pub fn cert(user: &str, groups: &[&str]) -> Who {
        Who::Cert(user.into(), groups.iter().map(|g| g.to_string()).collect())
    }

    pub fn token(t: &str) -> Who {
        Who::Token(t.into())
    }
}

/// A PEM certificate request for CN `user`, O `group`, and its key PEM.
pub fn certificate_request(user: &str, group: &str) -> (String, String) {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, user);
    params
        .distinguished_name
        .push(DnType::OrganizationName, group);
    let csr = params.serialize_request(&key).unwrap();
    (csr.pem().unwrap(), key.serialize_pem())
}

/// A certificate signed by `ca` (cert PEM, key PEM) for CN `user`, O `groups`.
pub fn sign_client_cert(
    ca_pem: &str,
    ca_key_pem: &str,
    user: &str,
    groups: &[String],
) -> (String, String) {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
    let ca_key = KeyPair::from_pem(ca_key_pem).unwrap();
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, user);
    // rcgen keeps one value per attribute type; a second Organization goes
    // in under the same OID as a "custom" type.
    assert!(groups.len() <= 2, "at most two groups per test certificate");
    let org_types = [
        DnType::OrganizationName,
        DnType::CustomDnType(vec![2, 5, 4, 10]),
    ];
    for (g, t) in groups.iter().zip(org_types) {
        params.distinguished_name.push(t, g.as_str());
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// Like `sign_client_cert`, valid only until `not_after`.
pub fn sign_client_cert_until(
    ca_pem: &str,
    ca_key_pem: &str,
    user: &str,
    not_after: std::time::SystemTime,
) -> (String, String) {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
    let ca_key = KeyPair::from_pem(ca_key_pem).unwrap();
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, user);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.not_before = (std::time::SystemTime::now() - Duration::from_secs(60)).into();
    params.not_after = not_after.into();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// One HTTP/1.1 request on a raw connection, answered with a
/// Content-Length body: (status, body).
pub fn http1(c: &mut RawTls, method: &str, path: &str) -> (u16, String) {
    use std::io::{BufRead, Read, Write};
    write!(c, "{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    c.flush().unwrap();
    let mut r = std::io::BufReader::new(c);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let code = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut len = 0;
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (code, String::from_utf8_lossy(&body).into_owned())
}

/// A self-signed CA nobody trusts, and a client certificate from it.
pub fn stranger_cert(user: &str) -> (String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "stranger-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = params.self_signed(&key).unwrap();
    sign_client_cert(&ca.pem(), &key.serialize_pem(), user, &[])
}

/// A client of the secure port.
pub struct Client {
    agent: ureq::Agent,
    base: String,
    token: Option<String>,
    headers: Vec<(String, String)>,
}

impl Server {
    pub fn secure_base(&self) -> String {
        format!("https://127.0.0.1:{}", self.secure_port)
    }

    pub fn pki(&self, file: &str) -> String {
        std::fs::read_to_string(self.data_dir.join("pki").join(file)).unwrap()
    }

    pub fn ca_pem(&self) -> String {
        self.pki("ca.crt")
    }

    /// (cert PEM, key PEM) for `who`, if it uses a certificate.
    pub fn credentials(&self, who: &Who) -> Option<(String, String)> {
        match who {
            Who::Cert(user, groups) => Some(sign_client_cert(
                &self.ca_pem(),
                &self.pki("ca.key"),
                user,
                groups,
            )),
            Who::StrangerCert(user) => Some(stranger_cert(user)),
            Who::Issued(cert, key) => Some((cert.clone(), key.clone())),
            _ => None,
        }
    }

    pub fn client(&self, who: &Who) -> Client {
        let ca = Certificate::from_pem(self.ca_pem().as_bytes()).unwrap();
        let mut tls = TlsConfig::builder().root_certs(RootCerts::Specific(Arc::new(vec![ca])));
        if let Some((cert, key)) = self.credentials(who) {
            let cert = Certificate::from_pem(cert.as_bytes()).unwrap();
            let key = PrivateKey::from_pem(key.as_bytes()).unwrap();
            tls = tls.client_cert(Some(ClientCert::new_with_certs(&[cert], key)));
        }
        let agent = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Client {
            agent,
            base: self.secure_base(),
            token: match who {
                Who::Token(t) => Some(t.clone()),
                _ => None,
            },
            headers: Vec::new(),
        }
    }

    /// A kubeconfig for kubectl acting as `who`; returns its path.
    pub fn kubeconfig(&self, who: &Who) -> PathBuf {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let user = match (who, self.credentials(who)) {
            (_, Some((cert, key))) => format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&cert),
                b64(&key)
            ),
            (Who::Token(t), None) => format!("    token: {t}\n"),
            _ => "    {}\n".to_string(),
        };
        let user = if user.trim() == "{}" {
            "  user: {}\n".to_string()
        } else {
            format!("  user:\n{user}")
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ks\n  cluster:\n    server: {}\n    certificate-authority-data: {}\ncontexts:\n- name: ks\n  context:\n    cluster: ks\n    user: u\ncurrent-context: ks\nusers:\n- name: u\n{user}",
            self.secure_base(),
            b64(&self.ca_pem())
        );
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let path = self.dir.path().join(format!(
            "kubeconfig-{}",
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Client {
    /// A copy of this client that also sends `name: value`.
    pub fn clone_with(&self, name: &str, value: &str) -> Client {
        Client {
            agent: self.agent.clone(),
            base: self.base.clone(),
            token: self.token.clone(),
            headers: self.headers.clone(),
        }
        .with_header(name, value)
    }

    /// Adds a header to every request (impersonation, audit ids).
    pub fn with_header(mut self, name: &str, value: &str) -> Client {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        self.send("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send("POST", path, Some(body))
    }

    pub fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send("PUT", path, Some(body))
    }

    pub fn delete(&self, path: &str) -> (u16, Value) {
        self.send("DELETE", path, None)
    }

    pub fn send(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let (code, _, text) = self.raw(method, path, body);
        (
            code,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Status, response headers, body text. Panics if the connection fails.
    pub fn raw(&self, method: &str, path: &str, body: Vec<u8>) -> (u16, http::HeaderMap, String) {
        self.try_raw(method, path, body).expect("request failed")
    }

    /// Like `raw`, but a failed connection (a TLS handshake error) is an Err.
    pub fn try_raw(
        &self,
        method: &str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, http::HeaderMap, String), String> {
        self.typed(method, path, "application/json", body)
    }

    /// A request with the given Content-Type.
    pub fn typed(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<(u16, http::HeaderMap, String), String> {
        let mut req = http::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header("Content-Type", content_type);
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut resp = self
            .agent
            .run(req.body(body).unwrap())
            .map_err(|e| e.to_string())?;
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        Ok((code, headers, text))
    }
}

/// RBAC objects for tests, posted through the (privileged) plain port.
pub mod rbac {
    use super::super::Server;
    use serde_json::{json, Value};

    const G: &str = "rbac.authorization.k8s.io";

    pub fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
        json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
    }

    pub fn subject(kind: &str, name: &str) -> Value {
        match kind {
            "ServiceAccount" => {
                let (ns, n) = name.split_once('/').expect("namespace/name");
                json!({"kind": kind, "namespace": ns, "name": n})
            }
            _ => json!({"kind": kind, "apiGroup": G, "name": name}),
        }
    }

    fn create(s: &Server, path: &str, body: Value) -> Value {
        let (code, out) = s.post(path, &body);
        assert_eq!(code, 201, "creating {path}: {out}");
        out
    }

    pub fn role(s: &Server, ns: &str, name: &str, rules: Vec<Value>) -> Value {
        create(
            s,
            &format!("/apis/{G}/v1/namespaces/{ns}/roles"),
            json!({"metadata": {"name": name}, "rules": rules}),
        )
    }

    pub fn cluster_role(s: &Server, name: &str, labels: Value, rules: Vec<Value>) -> Value {
        create(
            s,
            &format!("/apis/{G}/v1/clusterroles"),
            json!({"metadata": {"name": name, "labels": labels}, "rules": rules}),
        )
    }

    /// A RoleBinding (ns given) or ClusterRoleBinding (ns empty).
    pub fn bind(
        s: &Server,
        ns: &str,
        name: &str,
        role_kind: &str,
        role: &str,
        subjects: Vec<Value>,
    ) -> Value {
        let body = json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": G, "kind": role_kind, "name": role},
            "subjects": subjects,
        });
        if ns.is_empty() {
            create(s, &format!("/apis/{G}/v1/clusterrolebindings"), body)
        } else {
            create(
                s,
                &format!("/apis/{G}/v1/namespaces/{ns}/rolebindings"),
                body,
            )
        }
    }
}

/// A bound service-account token from the TokenRequest subresource
/// (creating the account first).
pub fn service_account_token(s: &Server, ns: &str, name: &str) -> String {
    let (code, body) = s.post(
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        &serde_json::json!({"metadata": {"name": name}}),
    );
    assert!(code == 201 || code == 409, "{body}");
    let (code, tr) = s.post(
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"),
        &serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    );
    assert_eq!(code, 201, "{tr}");
    tr["status"]["token"].as_str().unwrap().to_string()
}

/// Runs kubectl with `kubeconfig`; (exit code, stdout, stderr).
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let bin = if std::path::Path::new("/usr/bin/kubectl").exists() {
        "/usr/bin/kubectl"
    } else {
        "kubectl"
    };
    let out = std::process::Command::new(bin)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", kubeconfig.parent().unwrap())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run kubectl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A TLS connection to the secure port driven byte by byte (slow
/// clients, raw requests), authenticated as `who`.
pub type RawTls = rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>;

impl Server {
    pub fn raw_tls(&self, who: &Who) -> RawTls {
        self.raw_tls_with(self.credentials(who))
    }

    /// A raw TLS connection presenting this certificate (PEM, key PEM).
    pub fn raw_tls_with(&self, credentials: Option<(String, String)>) -> RawTls {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(self.ca_pem().as_bytes()).unwrap())
            .unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match credentials {
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let sock = std::net::TcpStream::connect(("127.0.0.1", self.secure_port)).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        rustls::StreamOwned::new(conn, sock)
    }
}

/// A CA of its own (CommonName `ca_name`) and a serving certificate it
/// signs for `sans`: (CA PEM, certificate, its key).
pub fn ca_and_serving_cert(
    ca_name: &str,
    sans: Vec<String>,
) -> (String, rcgen::Certificate, rcgen::KeyPair) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, ca_name);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(sans)
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (ca.pem(), leaf, key)
}

/// A TLS server configuration serving `cert` with `key` (test servers:
/// the stand-in kubelet, webhooks).
pub fn server_config(
    cert: &rcgen::Certificate,
    key: &rcgen::KeyPair,
) -> std::sync::Arc<rustls::ServerConfig> {
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .unwrap();
    std::sync::Arc::new(config)
}

/// A server-side TLS stream of a test server.
pub type ServerStream = rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>;

/// Serves TLS with `config` on a free loopback port (returned): each
/// connection on a thread of its own, handed to `serve`.
pub fn serve_tls(
    config: std::sync::Arc<rustls::ServerConfig>,
    serve: impl Fn(ServerStream) + Send + Sync + 'static,
) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = std::sync::Arc::new(serve);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (config, serve) = (config.clone(), serve.clone());
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                serve(rustls::StreamOwned::new(conn, stream));
            });
        }
    });
    port
}
