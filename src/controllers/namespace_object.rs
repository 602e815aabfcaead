//! Controllers that keep one object in every active namespace, as
//! kube-controller-manager's `serviceaccount` controller keeps a `default`
//! ServiceAccount and its `root-ca-cert-publisher` keeps the
//! `kube-root-ca.crt` ConfigMap (the CA bundle pods use to trust the API
//! server): the object is created when the namespace appears, again
//! whenever it is deleted, and — where the controller owns its content —
//! written back when someone changes that content.

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::registry::lifecycle::deletion_timestamp;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// What a controller keeps in each namespace: a core/v1 object.
pub struct Wanted {
    pub plural: &'static str,
    pub name: &'static str,
    /// The whole object for a namespace.
    pub object: Box<dyn Fn(&str) -> Value>,
    /// Top-level fields whose content is the controller's (written back
    /// when changed); empty: the object is only ever created.
    pub owned: &'static [&'static str],
}

pub struct NamespaceObjectController {
    /// Where namespaces and the kept objects are stored.
    namespaces: Arc<str>,
    resource: Arc<str>,
    wanted: Wanted,
    /// Namespaces that exist and are not terminating.
    active: HashSet<Arc<str>>,
    pub(super) queue: WorkQueue<Arc<str>>,
}

impl NamespaceObjectController {
    pub fn new(keys: &KeyLayout, wanted: Wanted) -> Self {
        Self {
            namespaces: keys.builtin("", "namespaces"),
            resource: keys.builtin("", wanted.plural),
            wanted,
            active: HashSet::new(),
            queue: WorkQueue::default(),
        }
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.active.clear();
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
        // A relist shows which objects exist: every active namespace is
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
        } else if c.resource == self.resource
            && &*c.object.name == self.wanted.name
            && self.active.contains(&*c.object.namespace)
            && (c.kind == EventType::Deleted || !self.wanted.owned.is_empty())
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
            match self.ensure(env, &ns).await {
                Ok(()) => self.queue.forget(&ns),
                Err(e) => {
                    tracing::debug!(namespace = %ns, object = self.wanted.name, error = %e.message, "namespace object controller retries");
                    self.queue.retry(ns);
                }
            }
        }
    }

    /// Creates the object in `ns` unless it is there, or writes back the
    /// owned content it lost. A namespace that is gone or terminating by
    /// now is left alone.
    async fn ensure(&self, env: &Env<'_>, ns: &str) -> Result<(), ApiError> {
        let (Some(info), Some(namespaces)) = (
            env.catalog.lookup("", "v1", self.wanted.plural).cloned(),
            env.catalog.lookup("", "v1", "namespaces"),
        ) else {
            return Ok(());
        };
        let wanted = (self.wanted.object)(ns);
        let name = self.wanted.name;
        if let Some(have) = env
            .storage
            .get(&info.storage_key, ns, name)
            .await
            .or_status()?
        {
            let have = have.to_value();
            let owned = self.wanted.owned;
            if owned.iter().all(|f| have.get(*f) == wanted.get(*f)) {
                return Ok(());
            }
            let at = registry::Addressed::object(&info, ns, name);
            let mutation = Box::new(move |new: &mut Value| {
                for f in owned {
                    new[*f] = wanted.get(*f).cloned().unwrap_or(Value::Null);
                }
                Ok(true)
            });
            return env.update(at, mutation).await.map(|_| ());
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
        match env.create(&info, wanted).await {
            Ok(_) => Ok(()),
            // Created meanwhile, or the namespace went away or started
            // terminating.
            Err(e) if matches!(e.code, 404 | 409 | 403) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
