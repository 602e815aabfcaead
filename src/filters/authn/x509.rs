//! Client-certificate authentication: a chain that verifies to one of the
//! client CAs (for client use, at the current time) names its user by the
//! subject's CommonName and its groups by the subject's Organizations.
//! Run once per connection; the verdict is kept on the connection.

use kubeshard_core::authn::UserInfo;
use rustls_pki_types::TrustAnchor;
use rustls_pki_types::{CertificateDer, UnixTime};
use std::sync::Arc;

pub fn verify(
    anchors: &[TrustAnchor<'static>],
    chain: &[CertificateDer<'static>],
) -> Result<Arc<UserInfo>, String> {
    let (leaf, intermediates) = chain.split_first().ok_or("no client certificate")?;
    let cert = webpki::EndEntityCert::try_from(leaf).map_err(|e| format!("x509: {e}"))?;
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        anchors,
        intermediates,
        UnixTime::now(),
        webpki::KeyUsage::client_auth(),
        None,
        None,
    )
    .map_err(|e| format!("x509: certificate signed by unknown authority or invalid: {e}"))?;
    let (_, parsed) =
        x509_parser::parse_x509_certificate(leaf).map_err(|e| format!("x509: {e}"))?;
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        return Err("x509: certificate has no common name".into());
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Ok(Arc::new(UserInfo {
        name,
        groups,
        ..Default::default()
    }))
}
