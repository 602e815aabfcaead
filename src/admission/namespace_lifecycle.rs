//! NamespaceLifecycle (kube's plugin of that name): nothing is created in
//! a namespace that does not exist or is being terminated, and the system
//! namespaces cannot be deleted.
//!
//! Every create in a namespace asks, so the answer comes from this
//! executor's namespace cache (an informer on its watch hub), not from a
//! read of the namespace on whichever shard owns it. A namespace the cache
//! does not know as active — created a moment ago through another core, or
//! terminating — is looked at again once the cache has caught up with
//! everything acknowledged so far, and then read from the store itself.
//! So is one whose deletion was admitted lately ([`RecentDeletes`], kube's
//! forced live lookup): this executor's cache may still call it active
//! after the client has seen the deletion acknowledged by another core.

use super::plugins::PluginInit;
use super::{Attributes, Mutating, Operation, Outcome};
use crate::informer::{mirror, Informers};
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::Filter;
use kubeshard_core::registry::lifecycle::deletion_timestamp;
use kubeshard_core::status::{ApiError, StatusCause};
use kubeshard_shards::ExecutorContext;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// How long a deleted namespace is decided from fresh state.
const FORCE_FRESH: Duration = Duration::from_secs(30);

/// Namespaces whose deletion this server admitted lately, shared by every
/// executor. Creates check it with one atomic load while no namespace was
/// deleted in the last [`FORCE_FRESH`].
struct RecentDeletes {
    epoch: Instant,
    /// Milliseconds after `epoch` until which `names` may hold anything.
    until: AtomicU64,
    names: Mutex<HashMap<String, Instant>>,
}

static RECENT_DELETES: LazyLock<RecentDeletes> = LazyLock::new(|| RecentDeletes {
    epoch: Instant::now(),
    until: AtomicU64::new(0),
    names: Mutex::default(),
});

impl RecentDeletes {
    fn millis(&self, at: Instant) -> u64 {
        at.duration_since(self.epoch).as_millis() as u64
    }

    fn mark(&self, namespace: &str) {
        let expires = Instant::now() + FORCE_FRESH;
        let mut names = self
            .names
            .lock()
            .expect("never poisoned: no panics under it");
        names.retain(|_, until| *until > Instant::now());
        names.insert(namespace.to_string(), expires);
        self.until
            .fetch_max(self.millis(expires), Ordering::Release);
    }

    fn holds(&self, namespace: &str) -> bool {
        let now = Instant::now();
        if self.millis(now) >= self.until.load(Ordering::Acquire) {
            return false;
        }
        let names = self
            .names
            .lock()
            .expect("never poisoned: no panics under it");
        names.get(namespace).is_some_and(|until| *until > now)
    }
}

/// Namespaces the server keeps for itself (kube-node-lease may go).
pub const PROTECTED: &[&str] = &["default", "kube-system", "kube-public"];

/// Kinds created in a namespace without being stored there: reviews ask a
/// question about the namespace, which need not exist.
const NAMESPACE_FREE: &[&str] = &["localsubjectaccessreviews"];

pub struct NamespaceLifecycle {
    /// Where namespaces are stored.
    namespaces: Arc<str>,
    /// Namespace name → terminating.
    cache: Rc<RefCell<HashMap<String, bool>>>,
    ctx: Rc<ExecutorContext>,
    informers: Rc<Informers>,
}

impl NamespaceLifecycle {
    /// The plugin, with its namespace cache kept current on this executor.
    pub fn start(init: &PluginInit<'_>) -> Self {
        let cache: Rc<RefCell<HashMap<String, bool>>> = Rc::default();
        let namespaces = init.keys.builtin("", "namespaces");
        init.informers.start(
            init.ctx,
            namespaces.clone(),
            Filter::default(),
            mirror(
                cache.clone(),
                |o| Some(o.name.to_string()),
                |o| terminating(&o.to_value()),
            ),
        );
        Self {
            namespaces,
            cache,
            ctx: init.ctx.clone(),
            informers: init.informers.clone(),
        }
    }

    fn cached(&self, namespace: &str) -> Option<bool> {
        self.cache.borrow().get(namespace).copied()
    }

    /// The answer once the cache has caught up, or from the store.
    async fn decide_fresh(&self, a: &Attributes<'_>) -> Result<(), ApiError> {
        let closed = self.ctx.shards.progress();
        self.informers.catch_up(&self.ctx.hub, closed).await;
        let terminating = match self.cached(a.namespace) {
            Some(t) => Some(t),
            None => self
                .ctx
                .shards
                .get(&self.namespaces, "", a.namespace)
                .await
                .or_status()?
                .map(|ns| terminating(&ns.to_value())),
        };
        verdict(a, terminating)
    }
}

fn terminating(ns: &Value) -> bool {
    deletion_timestamp(ns).is_some()
        || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

/// kube's answers: 404 for a namespace that does not exist, 403 (with the
/// NamespaceTerminating cause) for one being terminated.
fn verdict(a: &Attributes<'_>, terminating: Option<bool>) -> Result<(), ApiError> {
    match terminating {
        Some(false) => Ok(()),
        None => Err(ApiError::not_found("", "namespaces", a.namespace)),
        Some(true) => {
            let mut e = ApiError::forbidden(
                &a.resource.group,
                &a.resource.plural,
                a.name,
                &format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    a.namespace
                ),
            );
            if let Some(d) = e.details.as_mut() {
                d.causes.push(StatusCause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {} is being terminated", a.namespace),
                    field: "metadata.namespace".into(),
                });
            }
            Err(e)
        }
    }
}

fn is_namespaces(a: &Attributes<'_>) -> bool {
    a.resource.group.is_empty() && a.resource.plural == "namespaces"
}

impl Mutating for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        match a.operation {
            Operation::Delete => is_namespaces(a) && a.subresource.is_empty(),
            Operation::Create => {
                a.resource.namespaced
                    && !a.namespace.is_empty()
                    && !(a.resource.group == "authorization.k8s.io"
                        && NAMESPACE_FREE.contains(&a.resource.plural.as_str()))
            }
            _ => false,
        }
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, _object: Option<&'a mut Value>) -> Outcome<'a> {
        if a.operation == Operation::Delete {
            if PROTECTED.contains(&a.name) {
                return Outcome::Ready(Err(ApiError::forbidden(
                    "",
                    "namespaces",
                    a.name,
                    "this namespace may not be deleted",
                )));
            }
            RECENT_DELETES.mark(a.name);
            return Outcome::Ready(Ok(()));
        }
        match self.cached(a.namespace) {
            Some(false) if !RECENT_DELETES.holds(a.namespace) => Outcome::Ready(Ok(())),
            _ => Outcome::later(self.decide_fresh(a)),
        }
    }
}
