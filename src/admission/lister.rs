//! Executor-local caches of the objects admission plugins read on every
//! write they handle (service accounts, priority classes, storage and
//! ingress classes, runtime classes), kept by an informer as kube's
//! plugins keep listers. A name the cache does not know yet (created a
//! moment ago through another core) is read from the store itself, as
//! kube's plugins fall back to a live lookup.

use super::plugins::PluginInit;
use super::Host;
use crate::informer::mirror;
use crate::storage::Storage;
use kubeshard_cache::Filter;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

type Cache = Rc<RefCell<HashMap<(String, String), Rc<Value>>>>;

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
        init.informers.start(
            init.ctx,
            storage_key.clone(),
            Filter::default(),
            mirror(
                cache.clone(),
                |o| Some((o.namespace.to_string(), o.name.to_string())),
                |o| Rc::new(o.to_value()),
            ),
        );
        Self { storage_key, cache }
    }

    /// Every cached object of `namespace` ("" for cluster-scoped kinds).
    pub fn list(&self, namespace: &str) -> Vec<Rc<Value>> {
        self.cache
            .borrow()
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// `namespace/name` from the cache, else from the store.
    pub async fn get(
        &self,
        api: &dyn Host,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Rc<Value>>, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        if let Some(v) = self.cache.borrow().get(&key) {
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
