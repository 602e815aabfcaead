//! kube-controller-manager's `pvc-protection` and `pv-protection`
//! controllers: the finalizers StorageObjectInUseProtection puts on every
//! claim and volume are taken off a deleted one once nothing uses it — a
//! claim once no running pod mounts it, a volume once it is not bound —
//! so deletions finish on a cluster without a controller manager too.

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::meta;
use kubeshard_core::registry::lifecycle::deletion_timestamp;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

pub const PVC_PROTECTION: &str = "pvc-protection";
pub const PV_PROTECTION: &str = "pv-protection";

const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
const PV_FINALIZER: &str = "kubernetes.io/pv-protection";

/// (namespace, name); the namespace is empty for volumes.
type Key = (Arc<str>, Arc<str>);

pub struct StorageProtectionController {
    /// Claims (`pvc-protection`) or volumes (`pv-protection`).
    claims_not_volumes: bool,
    claims: Arc<str>,
    volumes: Arc<str>,
    pods: Arc<str>,
    /// Terminating claims still held by the finalizer.
    held: HashSet<Key>,
    pub(super) queue: WorkQueue<Key>,
}

fn holds(obj: &Value, finalizer: &str) -> bool {
    deletion_timestamp(obj).is_some()
        && meta::array_at(obj, "/metadata/finalizers")
            .iter()
            .any(|f| f == finalizer)
}

impl StorageProtectionController {
    /// `pvc-protection` (claims) or `pv-protection` (volumes).
    pub fn new(keys: &KeyLayout, claims_not_volumes: bool) -> Self {
        Self {
            claims_not_volumes,
            claims: keys.builtin("", "persistentvolumeclaims"),
            volumes: keys.builtin("", "persistentvolumes"),
            pods: keys.builtin("", "pods"),
            held: HashSet::new(),
            queue: WorkQueue::default(),
        }
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.held.clear();
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
    }

    pub fn observe(&mut self, c: &Change) {
        let key = (c.object.namespace.clone(), c.object.name.clone());
        let mine = if self.claims_not_volumes {
            c.resource == self.claims
        } else {
            c.resource == self.volumes
        };
        if mine {
            let finalizer = if c.resource == self.claims {
                PVC_FINALIZER
            } else {
                PV_FINALIZER
            };
            if c.kind != EventType::Deleted && holds(&c.object.to_value(), finalizer) {
                if c.resource == self.claims {
                    self.held.insert(key.clone());
                }
                self.queue.add(key);
            } else {
                self.held.remove(&key);
            }
        } else if self.claims_not_volumes && c.resource == self.pods {
            // A pod that went away or finished may have been the last
            // user of a held claim in its namespace.
            let done = c.kind == EventType::Deleted
                || matches!(
                    meta::str_at(&c.object.to_value(), "/status/phase"),
                    "Succeeded" | "Failed"
                );
            if done {
                let ns = &c.object.namespace;
                let again: Vec<Key> = self.held.iter().filter(|(n, _)| n == ns).cloned().collect();
                for k in again {
                    self.queue.add(k);
                }
            }
        }
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(key) = self.queue.pop() else {
                return;
            };
            match self.release(env, &key).await {
                Ok(()) => self.queue.forget(&key),
                Err(e) => {
                    tracing::debug!(namespace = %key.0, name = %key.1, error = %e.message, "storage protection retries");
                    self.queue.retry(key);
                }
            }
        }
    }

    /// Takes the finalizer off the claim or volume `key` if nothing uses it.
    async fn release(&mut self, env: &Env<'_>, key: &Key) -> Result<(), ApiError> {
        let claim = !key.0.is_empty();
        let plural = if claim {
            "persistentvolumeclaims"
        } else {
            "persistentvolumes"
        };
        let Some(info) = env.catalog.lookup("", "v1", plural).cloned() else {
            return Ok(());
        };
        let Some(obj) = env
            .storage
            .get(&info.storage_key, &key.0, &key.1)
            .await
            .or_status()?
        else {
            self.held.remove(key);
            return Ok(());
        };
        let obj = obj.to_value();
        let finalizer = if claim { PVC_FINALIZER } else { PV_FINALIZER };
        if !holds(&obj, finalizer) {
            return Ok(());
        }
        let in_use = if claim {
            self.claim_in_use(env, &key.0, &key.1).await?
        } else {
            meta::str_at(&obj, "/status/phase") == "Bound"
        };
        if in_use {
            return Ok(());
        }
        let at = registry::Addressed::object(&info, &key.0, &key.1);
        let mutation = Box::new(move |new: &mut Value| {
            let md = meta::metadata_mut(new);
            let Some(list) = md.get_mut("finalizers").and_then(Value::as_array_mut) else {
                return Ok(false);
            };
            let before = list.len();
            list.retain(|f| f != finalizer);
            Ok(list.len() != before)
        });
        match env.update(at, mutation).await {
            Ok(_) => {
                self.held.remove(key);
                Ok(())
            }
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Whether a pod that has not finished mounts the claim (directly, or
    /// as the generic ephemeral volume it made).
    async fn claim_in_use(&self, env: &Env<'_>, ns: &str, claim: &str) -> Result<bool, ApiError> {
        let Some(pods) = env.catalog.lookup("", "v1", "pods") else {
            return Ok(false);
        };
        let pods = crate::storage::list_in(env.storage, pods, ns).await?;
        Ok(pods.iter().map(|p| p.to_value()).any(|pod| {
            let running = !matches!(meta::str_at(&pod, "/status/phase"), "Succeeded" | "Failed");
            running
                && meta::array_at(&pod, "/spec/volumes").iter().any(|v| {
                    meta::str_at(v, "/persistentVolumeClaim/claimName") == claim
                        || (v.get("ephemeral").is_some()
                            && format!("{}-{}", meta::name(&pod), meta::str_at(v, "/name"))
                                == claim)
                })
        }))
    }
}
