//! The admin kubeconfig written on first start: a user in system:masters
//! by client certificate, trusting the serving certificate's CA.

use super::ClientIssuer;
use base64::Engine;
use std::path::Path;

/// The user the admin kubeconfig authenticates as.
pub const ADMIN_USER: &str = "kubeshard-admin";

/// A kubeconfig for `server` with a client certificate and key (PEM).
pub fn render(server: &str, ca_pem: &str, cert_pem: &str, key_pem: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubeshard\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\ncontexts:\n- name: kubeshard\n  context:\n    cluster: kubeshard\n    user: {ADMIN_USER}\ncurrent-context: kubeshard\nusers:\n- name: {ADMIN_USER}\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(ca_pem),
        b64(cert_pem),
        b64(key_pem),
    )
}

/// Writes the admin kubeconfig unless it already exists for this server
/// address (the port may change between starts when it is chosen freely).
pub fn write_admin(
    path: &Path,
    server: &str,
    trust_pem: &str,
    issuer: &ClientIssuer,
) -> Result<(), String> {
    if let Ok(existing) = std::fs::read_to_string(path) {
        if existing.contains(&format!("server: {server}\n")) {
            return Ok(());
        }
    }
    let (cert, key) = issuer.client_cert(ADMIN_USER, &[kubeshard_core::authn::MASTERS], 365)?;
    super::write_private(path, render(server, trust_pem, &cert, &key).as_bytes())
}
