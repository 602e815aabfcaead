//! Namespace name → its labels (and its `scheduler.alpha.kubernetes.io/`
//! annotations), on this executor: namespace selectors (webhooks,
//! policies), namespace policies (PodSecurity) and the node selector and
//! toleration plugins ask on every write in a namespace.

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

/// What plugins read of a namespace.
#[derive(Default)]
pub struct Meta {
    pub labels: Rc<Map<String, Value>>,
    /// Its annotations under [`SCHEDULING_PREFIX`].
    pub scheduling: Rc<Map<String, Value>>,
}

pub const SCHEDULING_PREFIX: &str = "scheduler.alpha.kubernetes.io/";

impl Meta {
    fn of(obj: &Value) -> Meta {
        let scheduling = obj
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k.starts_with(SCHEDULING_PREFIX))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        Meta {
            labels: Rc::new(labels(obj)),
            scheduling: Rc::new(scheduling),
        }
    }
}

/// Namespace name → what plugins read of it.
type Cache = Rc<RefCell<HashMap<String, Rc<Meta>>>>;

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
                |o| Rc::new(Meta::of(&o.to_value())),
            ),
        );
        Self { namespaces, cache }
    }

    /// The labels of namespace `name`.
    pub async fn of(
        &self,
        host: &dyn Host,
        name: &str,
    ) -> Result<Rc<Map<String, Value>>, ApiError> {
        Ok(self.meta(host, name).await?.labels.clone())
    }

    /// What plugins read of namespace `name`: from the cache, or read from
    /// the store when the cache has not seen it yet (kube's live lookup).
    pub async fn meta(&self, host: &dyn Host, name: &str) -> Result<Rc<Meta>, ApiError> {
        if let Some(m) = self.cache.borrow().get(name) {
            return Ok(m.clone());
        }
        match host
            .storage()
            .get(&self.namespaces, "", name)
            .await
            .map_err(|e| ApiError::internal(&format!("{e:?}")))?
        {
            Some(o) => Ok(Rc::new(Meta::of(&o.to_value()))),
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
