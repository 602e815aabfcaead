//! TLS client configurations for webhooks and extension API servers, one
//! per distinct `caBundle` (and identity), kept per executor: building one
//! parses certificates, and every call to the same backend names the same
//! bundle.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Where Debian (and most distributions) keep the system's roots, used
/// when a webhook names no `caBundle` (kube then trusts the system's).
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// (bundle hash, skip verification, present the proxy client identity).
type ConfigKey = (u64, bool, bool);

thread_local! {
    static CONFIGS: RefCell<HashMap<ConfigKey, Arc<rustls::ClientConfig>>> = RefCell::default();
}

/// The configuration verifying a webhook against `ca_bundle` (PEM).
pub fn client_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    client_config_with(ca_bundle, false, None)
}

/// The configuration verifying a backend against `ca_bundle` (or not at
/// all when `insecure`), presenting `identity` when given. There is one
/// identity per server (the proxy client certificate), so whether one is
/// presented tells configurations apart.
pub fn client_config_with(
    ca_bundle: &[u8],
    insecure: bool,
    identity: Option<&crate::security::front_proxy::ProxyClient>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let key = (
        xxhash_rust::xxh3::xxh3_64(ca_bundle),
        insecure,
        identity.is_some(),
    );
    if let Some(c) = CONFIGS.with(|m| m.borrow().get(&key).cloned()) {
        return Ok(c);
    }
    let config = Arc::new(build(ca_bundle, insecure, identity)?);
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

fn build(
    ca_bundle: &[u8],
    insecure: bool,
    identity: Option<&crate::security::front_proxy::ProxyClient>,
) -> Result<rustls::ClientConfig, String> {
    let builder = if insecure {
        crate::proxy::dial::unverified_builder()
    } else {
        rustls::ClientConfig::builder().with_root_certificates(roots(ca_bundle)?)
    };
    match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| format!("proxy client certificate: {e}")),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// The roots `ca_bundle` names, or the system's when it is empty.
fn roots(ca_bundle: &[u8]) -> Result<rustls::RootCertStore, String> {
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
    Ok(roots)
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
