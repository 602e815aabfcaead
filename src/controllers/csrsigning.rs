//! The CSR signing controller: signs approved CertificateSigningRequests
//! for kube's built-in signers — `kubernetes.io/kube-apiserver-client`,
//! `kubernetes.io/kube-apiserver-client-kubelet` and
//! `kubernetes.io/kubelet-serving` — with the cluster signing CA, as
//! kube-controller-manager's `csrsigning` controller does, so a harness
//! without a controller-manager can still issue client and kubelet
//! certificates. A request its signer may not sign is marked Failed
//! rather than signed; other signers are left to whoever implements them.

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::pki::{CertRequest, CertUsage, ClientIssuer};
use crate::registry;
use crate::storage::{Storage, StorageResult};
use base64::Engine;
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::registry::certificates::awaits_certificate;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const CLIENT: &str = "kubernetes.io/kube-apiserver-client";
const KUBELET_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";

pub struct CsrSigningController {
    resource: Arc<str>,
    signer: Arc<ClientIssuer>,
    /// The longest certificate it issues (`--cluster-signing-duration`).
    max_lifetime: Duration,
    pub(super) queue: WorkQueue<Arc<str>>,
}

impl CsrSigningController {
    pub fn new(keys: &KeyLayout, signer: Arc<ClientIssuer>, max_lifetime: Duration) -> Self {
        Self {
            resource: keys.builtin("certificates.k8s.io", "certificatesigningrequests"),
            signer,
            max_lifetime,
            queue: WorkQueue::default(),
        }
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
    }

    pub fn observe(&mut self, c: &Change) {
        if c.resource == self.resource
            && c.kind != EventType::Deleted
            && awaits_certificate(&c.object.to_value())
        {
            self.queue.add(c.object.name.clone());
        }
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(name) = self.queue.pop() else {
                return;
            };
            match self.sign(env, &name).await {
                Ok(()) => self.queue.forget(&name),
                Err(e) => {
                    tracing::debug!(csr = %name, error = %e.message, "csr signing retries");
                    self.queue.retry(name);
                }
            }
        }
    }

    async fn sign(&self, env: &Env<'_>, name: &str) -> Result<(), ApiError> {
        let Some(info) = env
            .catalog
            .lookup("certificates.k8s.io", "v1", "certificatesigningrequests")
            .cloned()
        else {
            return Ok(());
        };
        let Some(csr) = env
            .storage
            .get(&info.storage_key, "", name)
            .await
            .or_status()?
        else {
            return Ok(());
        };
        let csr = csr.to_value();
        if !awaits_certificate(&csr) {
            return Ok(());
        }
        let outcome = self.certificate_for(&csr);
        let at = registry::Addressed::status(&info, "", name);
        let mutation = Box::new(move |new: &mut Value| {
            if !awaits_certificate(new) {
                return Ok(false);
            }
            let status = &mut new["status"];
            match &outcome {
                Ok(pem) => {
                    status["certificate"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(pem));
                }
                Err(why) => {
                    let now = crate::registry::strategy::now_rfc3339();
                    let failed = json!({"type": "Failed", "status": "True",
                        "reason": "SignerValidationFailure", "message": why,
                        "lastUpdateTime": now, "lastTransitionTime": now});
                    match status["conditions"].as_array_mut() {
                        Some(list) => list.push(failed),
                        None => status["conditions"] = json!([failed]),
                    }
                }
            }
            Ok(true)
        });
        env.update(at, mutation).await.map(|_| ())
    }

    /// The signed certificate (PEM), or why this signer refuses it.
    fn certificate_for(&self, csr: &Value) -> Result<String, String> {
        let signer = csr
            .pointer("/spec/signerName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let usages: Vec<&str> = csr
            .pointer("/spec/usages")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let (allowed, needed, usage): (&[&str], &str, CertUsage) = match signer {
            CLIENT | KUBELET_CLIENT => (
                &["digital signature", "key encipherment", "client auth"],
                "client auth",
                CertUsage::Client,
            ),
            KUBELET_SERVING => (
                &["digital signature", "key encipherment", "server auth"],
                "server auth",
                CertUsage::Server,
            ),
            _ => {
                return Err(format!(
                    "signer {signer:?} is not one this controller signs for"
                ))
            }
        };
        if let Some(bad) = usages.iter().find(|u| !allowed.contains(u)) {
            return Err(format!(
                "usage {bad:?} is not allowed for signer {signer:?}"
            ));
        }
        if !usages.contains(&needed) {
            return Err(format!("signer {signer:?} requires the {needed:?} usage"));
        }
        let request = csr
            .pointer("/spec/request")
            .and_then(Value::as_str)
            .and_then(|r| base64::engine::general_purpose::STANDARD.decode(r).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or("the request is not base64 PEM")?;
        let request = CertRequest::from_pem(&request)?;
        let subject = request.subject();
        if signer != CLIENT {
            // Kubelet signers sign only for nodes: CN system:node:<name>, O system:nodes.
            let node = subject
                .common_name
                .strip_prefix("system:node:")
                .unwrap_or("");
            if node.is_empty() || subject.organizations != ["system:nodes"] {
                return Err(format!(
                    "signer {signer:?} signs only for system:node:<name> in system:nodes"
                ));
            }
        }
        let asked = csr
            .pointer("/spec/expirationSeconds")
            .and_then(Value::as_u64)
            .map(Duration::from_secs)
            .unwrap_or(self.max_lifetime);
        self.signer
            .sign_request(request, usage, asked.min(self.max_lifetime))
    }
}
