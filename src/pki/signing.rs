//! Certificates for CertificateSigningRequests: the requested public key
//! and subject, signed by a CA for one use (client or server) and a
//! bounded lifetime — what a cluster signer issues.

use super::certs::ClientIssuer;
use rcgen::{
    CertificateSigningRequestParams, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa,
    KeyUsagePurpose, SerialNumber,
};
use std::time::Duration;

/// What an issued certificate may be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertUsage {
    Client,
    Server,
}

/// The subject a request names.
#[derive(Debug, Default)]
pub struct Subject {
    pub common_name: String,
    pub organizations: Vec<String>,
}

/// kube's signers backdate a certificate a little, so clocks a few
/// minutes apart still accept it.
const BACKDATE: Duration = Duration::from_secs(5 * 60);

/// A subject attribute's text (the string kinds names are written in).
fn text(v: &DnValue) -> String {
    match v {
        DnValue::Utf8String(s) => s.clone(),
        DnValue::PrintableString(s) => s.as_str().to_string(),
        DnValue::Ia5String(s) => s.as_str().to_string(),
        DnValue::TeletexString(s) => s.as_str().to_string(),
        _ => String::new(),
    }
}

/// A parsed certificate request (its signature checked), read once for
/// both its subject and the certificate signed for it.
pub struct CertRequest(CertificateSigningRequestParams);

impl CertRequest {
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        CertificateSigningRequestParams::from_pem(pem)
            .map(Self)
            .map_err(|e| format!("the request is not a valid PEM certificate request: {e}"))
    }

    /// The subject the request names.
    pub fn subject(&self) -> Subject {
        let mut subject = Subject::default();
        for (t, v) in self.0.params.distinguished_name.iter() {
            match t {
                DnType::CommonName => subject.common_name = text(v),
                DnType::OrganizationName => subject.organizations.push(text(v)),
                DnType::CustomDnType(oid) if oid == &[2, 5, 4, 10] => {
                    subject.organizations.push(text(v))
                }
                _ => {}
            }
        }
        subject
    }
}

impl ClientIssuer {
    /// A certificate (PEM) for the request's key and subject, for `usage`,
    /// valid for `lifetime`.
    pub fn sign_request(
        &self,
        request: CertRequest,
        usage: CertUsage,
        lifetime: Duration,
    ) -> Result<String, String> {
        let mut req = request.0;
        let now = time::OffsetDateTime::now_utc();
        let p = &mut req.params;
        p.not_before = now - BACKDATE;
        p.not_after = now + lifetime;
        p.is_ca = IsCa::ExplicitNoCa;
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![match usage {
            CertUsage::Client => ExtendedKeyUsagePurpose::ClientAuth,
            CertUsage::Server => ExtendedKeyUsagePurpose::ServerAuth,
        }];
        p.serial_number = Some(SerialNumber::from_slice(&rand::random::<[u8; 16]>()));
        if usage == CertUsage::Client {
            // A client certificate names a user, not hosts.
            p.subject_alt_names.clear();
        }
        let cert = req
            .signed_by(self.issuer())
            .map_err(|e| format!("signing: {e}"))?;
        Ok(cert.pem())
    }
}
