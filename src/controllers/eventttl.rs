//! Event expiry (`--event-ttl`, kube's default one hour): an Event lives
//! that long after its last write, as kube-apiserver keeps events under
//! an etcd lease that every write renews. Without it a busy cluster's
//! Events only ever grow. Part of the API server rather than of the
//! controller-manager, so it runs whichever controllers are chosen; with
//! `--storage etcd` the events are under those leases and this is off.

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::ApiError;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Key = (Arc<str>, Arc<str>);

pub struct EventTtl {
    resource: Arc<str>,
    ttl: Duration,
    /// Each live event's last write (its revision) and when it expires.
    expires: HashMap<Key, (u64, Instant)>,
    pub(super) queue: WorkQueue<Key>,
}

impl EventTtl {
    pub fn new(keys: &KeyLayout, ttl: Duration) -> Self {
        Self {
            resource: keys.builtin("", "events"),
            ttl,
            expires: HashMap::new(),
            queue: WorkQueue::default(),
        }
    }

    /// After a relist the writes' times are unknown: each event gets a
    /// full lifetime from now.
    pub fn reset(&mut self, items: &[Change]) {
        self.expires.clear();
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
    }

    pub fn observe(&mut self, c: &Change) {
        if c.resource != self.resource {
            return;
        }
        let key = (c.object.namespace.clone(), c.object.name.clone());
        if c.kind == EventType::Deleted {
            self.expires.remove(&key);
            return;
        }
        let first = self
            .expires
            .insert(key.clone(), (c.object.revision, Instant::now() + self.ttl))
            .is_none();
        // One timer per event: a rewrite only moves its deadline, which
        // the timer finds when it fires.
        if first {
            self.queue.add_after(key, self.ttl);
        }
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(key) = self.queue.pop() else {
                return;
            };
            let Some(&(revision, deadline)) = self.expires.get(&key) else {
                continue;
            };
            let now = Instant::now();
            if deadline > now {
                self.queue.add_after(key, deadline - now);
                continue;
            }
            match expire(env, &key, revision).await {
                Ok(()) => {
                    self.expires.remove(&key);
                    self.queue.forget(&key);
                }
                Err(e) => {
                    tracing::debug!(namespace = %key.0, event = %key.1, error = %e.message, "event expiry retries");
                    self.queue.retry(key);
                }
            }
        }
    }
}

/// Deletes the event if it is still the write that expired.
async fn expire(env: &Env<'_>, key: &Key, revision: u64) -> Result<(), ApiError> {
    let Some(info) = env.catalog.lookup("", "v1", "events").cloned() else {
        return Ok(());
    };
    let Some(current) = env
        .storage
        .get(&info.storage_key, &key.0, &key.1)
        .await
        .or_status()?
    else {
        return Ok(());
    };
    if current.revision != revision {
        // Rewritten meanwhile: that write's own deadline applies.
        return Ok(());
    }
    let mut opts = DeleteOptions::default();
    opts.preconditions.resource_version = Some(revision.to_string());
    match env.delete(&info, &key.0, &key.1, &opts).await {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.code, 404 | 409) => Ok(()),
        Err(e) => Err(e),
    }
}
