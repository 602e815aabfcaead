//! CertificateSubjectRestriction (kube's plugin): no one may ask the
//! `kubernetes.io/kube-apiserver-client` signer for a certificate in the
//! `system:masters` group, whatever their rights to create requests.

use super::{Attributes, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use x509_parser::prelude::FromDer;

pub const NAME: &str = "CertificateSubjectRestriction";
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

pub struct SubjectRestriction;

/// The organizations (groups) the request's subject names.
fn organizations(request_b64: &str) -> Result<Vec<String>, String> {
    use base64::Engine;
    let pem_bytes = base64::engine::general_purpose::STANDARD
        .decode(request_b64)
        .map_err(|e| e.to_string())?;
    let block = pem::parse(&pem_bytes).map_err(|e| e.to_string())?;
    if block.tag() != "CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    }
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(block.contents())
            .map_err(|e| e.to_string())?;
    Ok(csr
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect())
}

fn check(a: &Attributes<'_>, csr: &Value) -> Result<(), ApiError> {
    if meta::str_at(csr, "/spec/signerName") != CLIENT_SIGNER {
        return Ok(());
    }
    let refuse = |why: String| {
        ApiError::forbidden(
            "certificates.k8s.io",
            "certificatesigningrequests",
            a.name,
            &why,
        )
    };
    let orgs = organizations(meta::str_at(csr, "/spec/request"))
        .map_err(|e| refuse(format!("failed to parse CSR: {e}")))?;
    if orgs.iter().any(|o| o == "system:masters") {
        return Err(refuse(format!(
            "use of {CLIENT_SIGNER} signer with system:masters group is not allowed"
        )));
    }
    Ok(())
}

impl Validating for SubjectRestriction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.creates("certificates.k8s.io", "certificatesigningrequests")
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        Outcome::Ready(object.map_or(Ok(()), |csr| check(a, csr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(org: &str) -> String {
        use base64::Engine;
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "u");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, org);
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        base64::engine::general_purpose::STANDARD.encode(pem)
    }

    #[test]
    fn organizations_are_read_from_the_request() {
        assert_eq!(
            organizations(&request("system:masters")).unwrap(),
            ["system:masters"]
        );
        assert_eq!(organizations(&request("devs")).unwrap(), ["devs"]);
        assert!(organizations("bm90IGEgcmVxdWVzdA==").is_err());
    }
}
