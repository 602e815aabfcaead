//! What the filter chain knows about the connection a request came on.

use kubeshard_core::authn::UserInfo;
use rustls_pki_types::CertificateDer;
use std::cell::OnceCell;
use std::net::SocketAddr;
use std::sync::Arc;

pub struct ConnInfo {
    pub peer: Option<SocketAddr>,
    /// The plain-HTTP (loopback-only) port: requests act as a privileged
    /// user and skip authentication and authorization.
    pub privileged: bool,
    /// The client certificate chain presented in the TLS handshake (end
    /// entity first); empty without TLS or without a certificate.
    pub client_chain: Vec<CertificateDer<'static>>,
    /// The x509 authenticator's verdict on `client_chain`, computed by the
    /// first request and reused by the rest of the connection.
    pub x509: OnceCell<Result<Arc<UserInfo>, String>>,
}

impl ConnInfo {
    pub fn plain(peer: Option<SocketAddr>) -> Self {
        Self {
            peer,
            privileged: true,
            client_chain: Vec::new(),
            x509: OnceCell::new(),
        }
    }

    pub fn tls(peer: Option<SocketAddr>, client_chain: Vec<CertificateDer<'static>>) -> Self {
        Self {
            peer,
            privileged: false,
            client_chain,
            x509: OnceCell::new(),
        }
    }
}
