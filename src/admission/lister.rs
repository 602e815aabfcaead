//! Executor-local caches of the objects admission plugins read on every
//! write they handle (service accounts, priority classes, storage and
//! ingress classes, runtime classes), kept by an informer as kube's
//! plugins keep listers. A name the cache does not know yet (created a
//! moment ago through another core) is read from the store itself, as
//! kube's plugins fall back to a live lookup.

use super::plugins::PluginInit;
use super::Host;
use crate::informer::Change;
use crate::storage::Storage;
use kubeshard_cache::Filter;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// Namespace → name → object: plugins ask per namespace on every write.
type Cache = Rc<RefCell<HashMap<Arc<str>, HashMap<Arc<str>, Rc<Value>>>>>;

#[derive(Clone)]
pub struct Lister {
    storage_key: Arc<str>,
    cache: Cache,
}

impl Lister {
    /// Follows the built-in resource `group`/`plural` on this executor.
    pub fn start(init: &PluginInit<'_>, group: &str, plural: &str) -> Self {
        let storage_key = init.keys.builtin(group, plural);
        let cache: Cache = Rc::default();
        init.informers
            .start(init.ctx, storage_key.clone(), Filter::default(), {
                let cache = cache.clone();
                Box::new(move |change| {
                    let mut all = cache.borrow_mut();
                    match change {
                        Change::Reset => all.clear(),
                        Change::Upsert(o) => {
                            all.entry(o.namespace.clone())
                                .or_default()
                                .insert(o.name.clone(), Rc::new(o.to_value()));
                        }
                        Change::Delete(o) => {
                            if let Some(ns) = all.get_mut(&o.namespace) {
                                ns.remove(&o.name);
                                if ns.is_empty() {
                                    all.remove(&o.namespace);
                                }
                            }
                        }
                    }
                })
            });
        Self { storage_key, cache }
    }

    /// Whether the cache holds any object in `namespace`.
    pub fn any_in(&self, namespace: &str) -> bool {
        self.cache.borrow().contains_key(namespace)
    }

    /// Every cached object of `namespace` ("" for cluster-scoped kinds).
    pub fn list(&self, namespace: &str) -> Vec<Rc<Value>> {
        self.cache
            .borrow()
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// `namespace/name` from the cache, else from the store.
    pub async fn get(
        &self,
        api: &dyn Host,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Rc<Value>>, ApiError> {
        if let Some(v) = self.cache.borrow().get(namespace).and_then(|m| m.get(name)) {
            return Ok(Some(v.clone()));
        }
        let found = api
            .storage()
            .get(&self.storage_key, namespace, name)
            .await
            .map_err(|e| ApiError::internal(&format!("{e:?}")))?;
        Ok(found.map(|o| Rc::new(o.to_value())))
    }
}
