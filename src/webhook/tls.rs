//! TLS client configurations for webhooks, one per distinct `caBundle`,
//! kept per executor: building one parses certificates, and every call to
//! the same webhook names the same bundle.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Where Debian (and most distributions) keep the system's roots, used
/// when a webhook names no `caBundle` (kube then trusts the system's).
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

thread_local! {
    static CONFIGS: RefCell<HashMap<u64, Arc<rustls::ClientConfig>>> = RefCell::default();
}

/// The configuration verifying a webhook against `ca_bundle` (PEM).
pub fn client_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let key = xxhash_rust::xxh3::xxh3_64(ca_bundle);
    if let Some(c) = CONFIGS.with(|m| m.borrow().get(&key).cloned()) {
        return Ok(c);
    }
    let config = Arc::new(build(ca_bundle)?);
    CONFIGS.with(|m| {
        let mut m = m.borrow_mut();
        // Bundles change rarely; a flood of distinct ones must not grow
        // this without bound.
        if m.len() >= 1024 {
            m.clear();
        }
        m.insert(key, config.clone());
    });
    Ok(config)
}

fn build(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let system;
    let pem = if ca_bundle.is_empty() {
        system = std::fs::read(SYSTEM_ROOTS).unwrap_or_default();
        &system[..]
    } else {
        ca_bundle
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    if roots.is_empty() && !ca_bundle.is_empty() {
        return Err("unable to load root certificates: no certificate in caBundle".into());
    }
    Ok(rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_are_parsed_once_and_bad_ones_refused() {
        let key = rcgen::KeyPair::generate().unwrap();
        let ca = rcgen::CertificateParams::new(vec!["ca".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let pem = ca.pem();
        let a = client_config(pem.as_bytes()).unwrap();
        let b = client_config(pem.as_bytes()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(client_config(b"not a certificate").is_err());
    }
}
