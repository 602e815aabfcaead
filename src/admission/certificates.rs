//! CertificateApproval and CertificateSigning (kube's plugins of those
//! names): approving or denying a CertificateSigningRequest needs the
//! `approve` verb, and setting its certificate the `sign` verb, on the
//! `signers` resource named by its signer (or the signer's domain with
//! `/*`) — so `kubectl certificate approve` is only for those a cluster
//! trusts with that signer, whatever else they may update.

use super::plugins::PluginInit;
use super::{Attributes, Operation, Outcome, Validating};
use crate::security::{authz, Security};
use kubeshard_core::authn::{Attributes as AuthzAttributes, UserInfo};
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::rc::Rc;

pub const APPROVAL: &str = "CertificateApproval";
pub const SIGNING: &str = "CertificateSigning";
const GROUP: &str = "certificates.k8s.io";

/// Whether `user` may `verb` requests of `signer`: by its name, or by
/// `<domain>/*`.
fn allowed_for_signer(sec: &Security, user: &UserInfo, verb: &str, signer: &str) -> bool {
    let ask = |name: &str| {
        let attrs = AuthzAttributes {
            name: name.into(),
            ..AuthzAttributes::resource(verb, GROUP, "signers", "", "")
        };
        authz::decide(sec, user, &attrs).allowed()
    };
    if ask(signer) {
        return true;
    }
    signer
        .split_once('/')
        .is_some_and(|(domain, _)| ask(&format!("{domain}/*")))
}

fn signer_of(csr: &Value) -> &str {
    kubeshard_core::meta::str_at(csr, "/spec/signerName")
}

fn is_csr(a: &Attributes<'_>) -> bool {
    a.resource.group == GROUP && a.resource.plural == "certificatesigningrequests"
}

/// One of the two plugins: which subresource it guards and with which verb.
pub struct SignerPermission {
    name: &'static str,
    subresource: &'static str,
    verb: &'static str,
    security: Rc<Security>,
}

impl SignerPermission {
    pub fn approval(init: &PluginInit<'_>) -> Self {
        Self {
            name: APPROVAL,
            subresource: "approval",
            verb: "approve",
            security: init.security.clone(),
        }
    }

    pub fn signing(init: &PluginInit<'_>) -> Self {
        Self {
            name: SIGNING,
            subresource: "status",
            verb: "sign",
            security: init.security.clone(),
        }
    }
}

impl Validating for SignerPermission {
    fn name(&self) -> &'static str {
        self.name
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        is_csr(a) && a.operation == Operation::Update && a.subresource == self.subresource
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let Some(csr) = object else {
            return Outcome::Ready(Ok(()));
        };
        if self.verb == "sign" {
            // Only a change of the certificate is signing.
            let certificate = |o: &Value| o.pointer("/status/certificate").cloned();
            if a.old_object.map(certificate) == Some(certificate(csr)) {
                return Outcome::Ready(Ok(()));
            }
        }
        let signer = signer_of(csr);
        if allowed_for_signer(&self.security, a.user, self.verb, signer) {
            return Outcome::Ready(Ok(()));
        }
        Outcome::Ready(Err(ApiError::forbidden(
            &a.resource.group,
            &a.resource.plural,
            a.name,
            &format!(
                "user not permitted to {} requests with signerName {signer:?}",
                self.verb
            ),
        )))
    }
}
