//! TLS for the secure port: rustls (ring provider), TLS 1.2 and 1.3, ALPN
//! h2 and http/1.1.
//!
//! Client certificates are *requested*, never required, and the handshake
//! accepts one from any issuer as long as the client proves it holds the
//! key. Whether the certificate is trusted is the x509 authenticator's
//! call (filters/authn/x509.rs), as in kube-apiserver: an untrusted
//! certificate then answers 401 with a Status, instead of a handshake
//! failure the client cannot explain.

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use std::sync::Arc;

/// Accepts any client certificate chain, checking only the handshake
/// signature (possession of the certificate's key).
#[derive(Debug)]
struct RequestClientCert {
    provider: Arc<CryptoProvider>,
    hints: Vec<DistinguishedName>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The server configuration every executor's acceptor shares.
/// `client_cas` are sent as hints so clients pick the right certificate.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_cas: &[CertificateDer<'static>],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let hints = client_cas
        .iter()
        .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
        .map(|a| DistinguishedName::in_sequence(&a.subject))
        .collect();
    let verifier = Arc::new(RequestClientCert {
        provider: provider.clone(),
        hints,
    });
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| format!("serving certificate: {e}"))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
