//! What the filter chain knows about the connection a request came on.

use super::connections::ConnState;
use crate::pki::client_cert::Verified;
use rustls_pki_types::CertificateDer;
use std::cell::OnceCell;
use std::net::SocketAddr;
use std::rc::Rc;

pub struct ConnInfo {
    pub peer: Option<SocketAddr>,
    /// The plain-HTTP (loopback-only) port: requests act as a privileged
    /// user and skip authentication and authorization.
    pub privileged: bool,
    /// The client certificate chain presented in the TLS handshake (end
    /// entity first); empty without TLS or without a certificate.
    pub client_chain: Vec<CertificateDer<'static>>,
    /// The x509 authenticator's verdict on `client_chain`, computed by the
    /// first request and reused by the rest of the connection (each
    /// request still checks the chain's validity window).
    pub x509: OnceCell<Result<Verified, String>>,
    /// The request-header authenticator's verdict on `client_chain` (is
    /// this an authenticating proxy?), kept the same way.
    pub front_proxy: OnceCell<Result<Verified, String>>,
    /// Its place among the executor's connections: in flight, idle,
    /// trusted.
    pub state: Rc<ConnState>,
}

impl ConnInfo {
    pub fn plain(peer: Option<SocketAddr>, state: Rc<ConnState>) -> Self {
        // The plain port is loopback-only and privileged: its connections
        // are never evicted as unauthenticated.
        state.set_trusted();
        Self {
            peer,
            privileged: true,
            client_chain: Vec::new(),
            x509: OnceCell::new(),
            front_proxy: OnceCell::new(),
            state,
        }
    }

    pub fn tls(
        peer: Option<SocketAddr>,
        client_chain: Vec<CertificateDer<'static>>,
        state: Rc<ConnState>,
    ) -> Self {
        Self {
            peer,
            privileged: false,
            client_chain,
            x509: OnceCell::new(),
            front_proxy: OnceCell::new(),
            state,
        }
    }
}
