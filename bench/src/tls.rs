//! rustls client configuration (ring provider only, so no C toolchain is
//! needed): which CAs to trust, an optional client certificate, and ALPN.

use anyhow::{anyhow, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// Where trust and client identity come from.
#[derive(Debug, Default, Clone)]
pub struct TlsSettings {
    /// PEM bundle of CAs; None: the system bundle.
    pub ca_pem: Option<Vec<u8>>,
    pub insecure_skip_verify: bool,
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
}

/// A server's certificate chain and key from PEM files (the `--cert` and
/// `--key` of the test servers this tool runs).
pub fn serving_identity(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let certs = CertificateDer::pem_file_iter(cert)
        .context("reading --cert")?
        .collect::<Result<Vec<_>, _>>()
        .context("parsing --cert")?;
    let key = PrivateKeyDer::from_pem_file(key).context("reading --key")?;
    Ok((certs, key))
}

/// Debian's and most distributions' bundle of public CAs.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Builds the client config; `http2` offers h2 before http/1.1 in ALPN.
pub fn client_config(s: &TlsSettings, http2: bool) -> Result<Arc<ClientConfig>> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = if s.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        let pem = match &s.ca_pem {
            Some(p) => p.clone(),
            None => std::fs::read(SYSTEM_BUNDLE).unwrap_or_default(),
        };
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots
                .add(cert.context("bad CA PEM")?)
                .context("bad CA certificate")?;
        }
        if roots.is_empty() {
            return Err(anyhow!(
                "no CA to verify the server with: pass --ca-file or --insecure-skip-tls-verify"
            ));
        }
        builder.with_root_certificates(roots)
    };
    let mut cfg = match (&s.client_cert_pem, &s.client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .context("bad client certificate PEM")?;
            let key = PrivateKeyDer::from_pem_slice(key).context("bad client key PEM")?;
            builder
                .with_client_auth_cert(chain, key)
                .context("client certificate")?
        }
        _ => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(cfg))
}

/// `--insecure-skip-tls-verify`: accept any certificate, but still check
/// the handshake signatures so the connection is a real TLS session.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
