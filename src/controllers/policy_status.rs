//! kube-controller-manager's `validatingadmissionpolicy-status-controller`:
//! each ValidatingAdmissionPolicy whose generation its status has not
//! observed yet is type-checked (see
//! [`crate::admission::policies::type_check`]), and the warnings are
//! written to `status.typeChecking` with the generation they are about,
//! which is how clients learn that the check finished.

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::admission::policies::type_check;
use crate::registry;
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

pub const VALIDATING_ADMISSION_POLICY_STATUS: &str = "validatingadmissionpolicy-status-controller";

pub struct PolicyStatusController {
    policies: Arc<str>,
    /// Policies whose status lags their generation, as last seen.
    pending: HashMap<Arc<str>, Value>,
    pub(super) queue: WorkQueue<Arc<str>>,
}

fn generation(policy: &Value, pointer: &str) -> i64 {
    policy.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

impl PolicyStatusController {
    pub fn new(keys: &KeyLayout) -> Self {
        Self {
            policies: keys.builtin(
                "admissionregistration.k8s.io",
                "validatingadmissionpolicies",
            ),
            pending: HashMap::new(),
            queue: WorkQueue::default(),
        }
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.pending.clear();
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
    }

    pub fn observe(&mut self, c: &Change) {
        if c.resource != self.policies {
            return;
        }
        let name = c.object.name.clone();
        let policy = c.object.to_value();
        if c.kind != EventType::Deleted
            && generation(&policy, "/metadata/generation")
                > generation(&policy, "/status/observedGeneration")
        {
            self.pending.insert(name.clone(), policy);
            self.queue.add(name);
        } else {
            self.pending.remove(&name);
        }
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(name) = self.queue.pop() else {
                return;
            };
            let Some(policy) = self.pending.get(&name) else {
                continue;
            };
            match report(env, policy).await {
                Ok(()) => self.queue.forget(&name),
                Err(e) => {
                    tracing::debug!(policy = %name, error = %e.message, "policy status retries");
                    self.queue.retry(name);
                }
            }
        }
    }
}

/// Writes the policy's type check for the generation seen; a newer
/// generation written meanwhile is left to its own event.
async fn report(env: &Env<'_>, policy: &Value) -> Result<(), ApiError> {
    let Some(info) = env
        .catalog
        .lookup(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        )
        .cloned()
    else {
        return Ok(());
    };
    let seen = generation(policy, "/metadata/generation");
    let warnings = type_check::warnings(policy, env.catalog);
    let name = meta::name(policy).to_string();
    let uid = meta::str_at(policy, "/metadata/uid").to_string();
    let mut at = registry::Addressed::status(&info, "", &name);
    at.uid = Some(&uid);
    let mutation = Box::new(move |current: &mut Value| {
        if generation(current, "/metadata/generation") != seen {
            return Ok(false);
        }
        let status = current
            .as_object_mut()
            .and_then(|o| {
                o.entry("status")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            })
            .ok_or_else(|| ApiError::internal("policy status is not an object"))?;
        status.insert("observedGeneration".into(), json!(seen));
        let checking = match warnings.is_empty() {
            true => json!({}),
            false => json!({"expressionWarnings": warnings.clone()}),
        };
        status.insert("typeChecking".into(), checking);
        Ok(true)
    });
    match env.update(at, mutation).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}
