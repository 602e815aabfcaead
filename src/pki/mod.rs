//! Certificates and keys the server needs, loaded from the flags or
//! generated into `--cert-dir` on first start and reused afterwards: a
//! self-signed CA, the serving certificate it signs, the service-account
//! token key pair, and the admin kubeconfig.

mod certs;
pub mod client_cert;
pub mod kubeconfig;
mod sa_keys;
mod signing;

pub use certs::{hostname, ClientIssuer, ServingCerts};
pub use sa_keys::ServiceAccountKeys;
pub use signing::{CertRequest, CertUsage};

use std::path::Path;

/// Writes a file readable only by its owner (keys, kubeconfigs).
pub fn write_private(path: &Path, contents: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    f.write_all(contents)
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

/// Trust anchors for `certs`; `what` names them in errors.
pub fn anchors(
    certs: &[rustls_pki_types::CertificateDer<'static>],
    what: &str,
) -> Result<Vec<rustls_pki_types::TrustAnchor<'static>>, String> {
    certs
        .iter()
        .map(|c| {
            webpki::anchor_from_trusted_cert(c)
                .map(|a| a.to_owned())
                .map_err(|e| format!("{what}: {e}"))
        })
        .collect()
}

/// Every certificate in a PEM file.
pub fn parse_certs(
    pem: &str,
    what: &Path,
) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, String> {
    use rustls_pki_types::pem::PemObject;
    let certs: Vec<_> = rustls_pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", what.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate found", what.display()));
    }
    Ok(certs)
}
