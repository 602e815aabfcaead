//! Client-certificate authentication: a chain that verifies to one of the
//! client CAs (for client use, at the current time) names its user by the
//! subject's CommonName and its groups by the subject's Organizations.
//! The chain is verified once per connection and the verdict kept there,
//! with the window in which every certificate of the chain is valid: each
//! request checks the clock against that window, so a certificate that
//! expires while a keep-alive connection stays open stops working on it.

use kubeshard_core::authn::UserInfo;
use rustls_pki_types::TrustAnchor;
use rustls_pki_types::{CertificateDer, UnixTime};
use std::sync::Arc;

/// A verified chain: who it names, and when it is valid (Unix seconds).
#[derive(Debug)]
pub struct Verified {
    pub user: Arc<UserInfo>,
    not_before: i64,
    not_after: i64,
}

impl Verified {
    /// The user, if every certificate of the chain is valid at `now`.
    pub fn at(&self, now: i64) -> Result<&Arc<UserInfo>, String> {
        if now < self.not_before {
            return Err("x509: certificate is not yet valid".into());
        }
        if now > self.not_after {
            return Err("x509: certificate has expired".into());
        }
        Ok(&self.user)
    }
}

pub fn verify(
    anchors: &[TrustAnchor<'static>],
    chain: &[CertificateDer<'static>],
) -> Result<Verified, String> {
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
    let (mut not_before, mut not_after) = (i64::MIN, i64::MAX);
    for der in chain {
        let (_, c) = x509_parser::parse_x509_certificate(der).map_err(|e| format!("x509: {e}"))?;
        not_before = not_before.max(c.validity().not_before.timestamp());
        not_after = not_after.min(c.validity().not_after.timestamp());
    }
    Ok(Verified {
        user: Arc::new(UserInfo {
            name,
            groups,
            ..Default::default()
        }),
        not_before,
        not_after,
    })
}
