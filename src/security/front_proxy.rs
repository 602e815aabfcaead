//! The front proxy, both ways round. Towards extension API servers this
//! server *is* the authenticating proxy: it presents the proxy client
//! certificate and names the user in `X-Remote-*` headers. Towards its
//! own clients it *trusts* one: a connection whose certificate the
//! request-header CA signs (with an allowed CommonName) may name its
//! user in the configured headers, so kubeshard can sit behind a proxy
//! that authenticates for it (kube's request-header authenticator).
//!
//! With no flags, a front-proxy CA and a `front-proxy-client`
//! certificate are generated into the cert dir (as kubeadm does), and
//! that CA is the request-header CA: extension servers registered by
//! APIService work out of the box, reading the CA from kube-system's
//! `extension-apiserver-authentication` ConfigMap.

use super::SecurityFlags;
use crate::pki::{self, ClientIssuer};
use http::HeaderName;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, TrustAnchor};
use std::path::Path;

/// The CommonName of the generated proxy client certificate.
pub const PROXY_CLIENT_NAME: &str = "front-proxy-client";

/// Who may name the user in request headers, and in which headers.
pub struct RequestHeader {
    pub anchors: Vec<TrustAnchor<'static>>,
    pub certs: Vec<CertificateDer<'static>>,
    /// As PEM, for the `extension-apiserver-authentication` ConfigMap.
    pub ca_pem: String,
    /// Empty: any CommonName the CA signs.
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<HeaderName>,
    pub uid_headers: Vec<HeaderName>,
    pub group_headers: Vec<HeaderName>,
    /// Lowercase.
    pub extra_prefixes: Vec<String>,
}

/// The certificate this server presents to extension API servers.
pub struct ProxyClient {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

#[derive(Default)]
pub struct FrontProxy {
    pub request_header: Option<RequestHeader>,
    pub client: Option<ProxyClient>,
}

impl FrontProxy {
    pub fn build(flags: &SecurityFlags, cert_dir: &Path) -> Result<Self, String> {
        let mut generated_ca = None;
        let client = match (&flags.proxy_client_cert_file, &flags.proxy_client_key_file) {
            (Some(cert), Some(key)) => Some(load_client(cert, key)?),
            (None, None) => {
                let ca = ClientIssuer::load_or_generate_named(
                    cert_dir,
                    "front-proxy-ca",
                    "kubeshard-front-proxy-ca",
                )?;
                let (cert, key) =
                    ca.kept_client_cert(cert_dir, PROXY_CLIENT_NAME, PROXY_CLIENT_NAME)?;
                generated_ca = Some(ca.ca_pem.clone());
                Some(load_client(&cert, &key)?)
            }
            _ => {
                return Err(
                    "--proxy-client-cert-file and --proxy-client-key-file go together".into(),
                )
            }
        };
        let (ca_pem, what, default_names) = match &flags.requestheader_client_ca_file {
            Some(f) => (pki::read(f)?, f.clone(), Vec::new()),
            None => match generated_ca {
                Some(pem) => (
                    pem,
                    cert_dir.join("front-proxy-ca.crt"),
                    vec![PROXY_CLIENT_NAME.to_string()],
                ),
                None => {
                    return Ok(Self {
                        request_header: None,
                        client,
                    })
                }
            },
        };
        let certs = pki::parse_certs(&ca_pem, &what)?;
        let anchors = pki::anchors(&certs, "--requestheader-client-ca-file")?;
        let allowed_names = if flags.requestheader_allowed_names.is_empty() {
            default_names
        } else {
            flags.requestheader_allowed_names.clone()
        };
        Ok(Self {
            request_header: Some(RequestHeader {
                anchors,
                certs,
                ca_pem,
                allowed_names,
                username_headers: header_names(&flags.requestheader_username_headers)?,
                uid_headers: header_names(&flags.requestheader_uid_headers)?,
                group_headers: header_names(&flags.requestheader_group_headers)?,
                extra_prefixes: flags
                    .requestheader_extra_headers_prefix
                    .iter()
                    .map(|p| p.trim().to_ascii_lowercase())
                    .filter(|p| !p.is_empty())
                    .collect(),
            }),
            client,
        })
    }
}

fn load_client(cert: &Path, key: &Path) -> Result<ProxyClient, String> {
    use rustls_pki_types::pem::PemObject;
    let chain = pki::parse_certs(&pki::read(cert)?, cert)?;
    let key = PrivateKeyDer::from_pem_slice(pki::read(key)?.as_bytes())
        .map_err(|e| format!("{}: {e}", key.display()))?;
    Ok(ProxyClient { chain, key })
}

fn header_names(names: &[String]) -> Result<Vec<HeaderName>, String> {
    names
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .map(|n| HeaderName::try_from(n).map_err(|e| format!("request header {n:?}: {e}")))
        .collect()
}
