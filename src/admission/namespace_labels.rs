//! Namespace name → its labels, on this executor: namespace selectors
//! (webhooks) and namespace policies (PodSecurity) are asked on every
//! write in a namespace.

use super::plugins::PluginInit;
use super::Host;
use crate::storage::Storage;
use kubeshard_cache::Filter;
use kubeshard_core::status::ApiError;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// Namespace name → its labels.
type Cache = Rc<RefCell<HashMap<String, Rc<Map<String, Value>>>>>;

#[derive(Clone)]
pub struct NamespaceLabels {
    /// Where namespaces are stored.
    namespaces: Arc<str>,
    /// Shared with callers: asked on every write, copied never.
    cache: Cache,
}

impl NamespaceLabels {
    pub fn start(init: &PluginInit<'_>) -> Self {
        let cache: Cache = Rc::default();
        let namespaces = init.keys.builtin("", "namespaces");
        init.informers.start(
            init.ctx,
            namespaces.clone(),
            Filter::default(),
            crate::informer::mirror(
                cache.clone(),
                |o| Some(o.name.to_string()),
                |o| Rc::new(labels(&o.to_value())),
            ),
        );
        Self { namespaces, cache }
    }

    /// The labels of namespace `name`: from the cache, or read from the
    /// store when the cache has not seen it yet (kube's live lookup).
    pub async fn of(
        &self,
        host: &dyn Host,
        name: &str,
    ) -> Result<Rc<Map<String, Value>>, ApiError> {
        if let Some(l) = self.cache.borrow().get(name) {
            return Ok(l.clone());
        }
        match host
            .storage()
            .get(&self.namespaces, "", name)
            .await
            .map_err(|e| ApiError::internal(&format!("{e:?}")))?
        {
            Some(o) => Ok(Rc::new(labels(&o.to_value()))),
            None => Err(ApiError::not_found("", "namespaces", name)),
        }
    }
}

pub fn labels(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}
