//! The service-account controller: every active namespace has a
//! ServiceAccount named `default`, created when the namespace appears and
//! again whenever it is deleted, as kube-controller-manager's
//! `serviceaccount` controller does. Pods that name no service account
//! run as it, and clients (kube's e2e framework among them) wait for it
//! before they use a new namespace.

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::registry::lifecycle::deletion_timestamp;
use kubeshard_core::status::ApiError;
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

const DEFAULT: &str = "default";

pub struct ServiceAccountController {
    /// Where namespaces and service accounts are stored.
    namespaces: Arc<str>,
    accounts: Arc<str>,
    /// Namespaces that exist and are not terminating.
    active: HashSet<Arc<str>>,
    queue: WorkQueue<Arc<str>>,
}

impl ServiceAccountController {
    pub fn new(keys: &KeyLayout) -> Self {
        Self {
            namespaces: keys.builtin("", "namespaces"),
            accounts: keys.builtin("", "serviceaccounts"),
            active: HashSet::new(),
            queue: WorkQueue::default(),
        }
    }

    pub fn queue_idle(&self) -> bool {
        self.queue.is_idle()
    }

    pub fn next_due(&self) -> Option<Duration> {
        self.queue.next_due()
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.active.clear();
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
        // A relist shows which accounts exist: every active namespace is
        // looked at once.
        for ns in &self.active {
            self.queue.add(ns.clone());
        }
    }

    pub fn observe(&mut self, c: &Change) {
        if c.resource == self.namespaces {
            let name = c.object.name.clone();
            let active =
                c.kind != EventType::Deleted && deletion_timestamp(&c.object.to_value()).is_none();
            if !active {
                self.active.remove(&name);
            } else if self.active.insert(name.clone()) {
                self.queue.add(name);
            }
        } else if c.resource == self.accounts
            && c.kind == EventType::Deleted
            && &*c.object.name == DEFAULT
            && self.active.contains(&*c.object.namespace)
        {
            self.queue.add(c.object.namespace.clone());
        }
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(ns) = self.queue.pop() else {
                return;
            };
            if !self.active.contains(&ns) {
                continue;
            }
            match ensure_default(env, &ns).await {
                Ok(()) => self.queue.forget(&ns),
                Err(e) => {
                    tracing::debug!(namespace = %ns, error = %e.message, "service-account controller retries");
                    self.queue.retry(ns);
                }
            }
        }
    }
}

/// Creates `default` in `ns` unless it is there. A namespace that is gone
/// or terminating by now is left alone.
async fn ensure_default(env: &Env<'_>, ns: &str) -> Result<(), ApiError> {
    let (Some(info), Some(namespaces)) = (
        env.catalog.lookup("", "v1", "serviceaccounts").cloned(),
        env.catalog.lookup("", "v1", "namespaces"),
    ) else {
        return Ok(());
    };
    if env
        .storage
        .get(&info.storage_key, ns, DEFAULT)
        .await
        .or_status()?
        .is_some()
    {
        return Ok(());
    }
    // The informer may lag: the namespace must still be there and active.
    let namespace = env
        .storage
        .get(&namespaces.storage_key, "", ns)
        .await
        .or_status()?;
    if namespace.is_none_or(|n| deletion_timestamp(&n.to_value()).is_some()) {
        return Ok(());
    }
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT, "namespace": ns}});
    match env.create(&info, sa).await {
        Ok(_) => Ok(()),
        // Created meanwhile, or the namespace went away or started
        // terminating.
        Err(e) if matches!(e.code, 404 | 409 | 403) => Ok(()),
        Err(e) => Err(e),
    }
}
