//! A second [`Storage`]: one map and a list of every change, nothing else.
//! It exists to prove the seam: the same property tests run against it
//! and against the sharded engine, so the trait says everything the
//! registry relies on, and the engine's answers match the plainest
//! possible store.
//!
//! Updates are optimistic, as a compare-and-swap backend's are: the update
//! function runs against a read, and the write lands only if the key has
//! not changed since; otherwise it runs again. [`Reference::interfere`]
//! makes another writer get in between, so the retry is exercised.

use super::feed::{ChannelFeed, Progress};
use super::{Storage, StorageError, UpdateFn};
use crate::store::outcome::{self, contained};
use crate::store::{
    DeleteOutcome, DeletePlan, EventBatch, ListChunk, ListRequest, NsName, UpdateOutcome,
};
use kubeshard_cache::{Event, EventType, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

type Key = (Arc<str>, String, String);

/// One change: the key and its state before it (None: absent).
struct Change {
    revision: u64,
    key: Key,
    prev: Option<Arc<StoredObject>>,
}

pub struct Reference {
    objects: RefCell<BTreeMap<Key, Arc<StoredObject>>>,
    changes: RefCell<Vec<Change>>,
    revision: Rc<Cell<u64>>,
    /// Each write's event, as it is made.
    events: async_channel::Sender<EventBatch>,
    feed: RefCell<Option<ReferenceFeed>>,
    /// Writes to make, as another writer, right after the next update
    /// function runs: (key, object).
    interference: RefCell<Vec<(Arc<ResourceInfo>, Value)>>,
    /// How many times update functions ran.
    pub update_calls: Cell<usize>,
}

impl Default for Reference {
    fn default() -> Self {
        let (events, batches) = async_channel::unbounded();
        let revision = Rc::new(Cell::new(0));
        let feed = ChannelFeed::new(batches, revision.clone());
        Self {
            objects: RefCell::default(),
            changes: RefCell::default(),
            revision,
            events,
            feed: RefCell::new(Some(feed)),
            interference: RefCell::default(),
            update_calls: Cell::default(),
        }
    }
}

/// One event per write, in order; progress is the last revision (every
/// write is visible as it is made).
pub type ReferenceFeed = ChannelFeed<Rc<Cell<u64>>>;

impl Progress for Rc<Cell<u64>> {
    fn progress(&self) -> u64 {
        self.get()
    }
}

fn key(resource: &Arc<str>, namespace: &str, name: &str) -> Key {
    (resource.clone(), namespace.to_string(), name.to_string())
}

impl Reference {
    /// After the next update function runs (before its write), `obj` is
    /// written as if by another writer.
    pub fn interfere(&self, info: &Arc<ResourceInfo>, obj: Value) {
        self.interference.borrow_mut().push((info.clone(), obj));
    }

    fn current(&self, k: &Key) -> Option<Arc<StoredObject>> {
        self.objects.borrow().get(k).cloned()
    }

    fn write(
        &self,
        info: &ResourceInfo,
        kind: EventType,
        mut obj: Value,
        prev: Option<Arc<StoredObject>>,
    ) -> Arc<StoredObject> {
        let revision = self.revision.get() + 1;
        self.revision.set(revision);
        meta::set_meta(
            &mut obj,
            "resourceVersion",
            Value::String(revision.to_string()),
        );
        let stored = Arc::new(StoredObject::encode_for(info, &obj, revision, kind));
        let k = key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
        match kind {
            EventType::Deleted => self.objects.borrow_mut().remove(&k),
            _ => self.objects.borrow_mut().insert(k.clone(), stored.clone()),
        };
        let event = Event::new(revision, kind, k.0.clone(), stored.clone(), prev.clone());
        let _ = self.events.try_send(Arc::from([Arc::new(event)]));
        self.changes.borrow_mut().push(Change {
            revision,
            key: k,
            prev,
        });
        stored
    }

    /// The objects of `resource` at `revision`: today's with every later
    /// change undone.
    fn at(&self, resource: &Arc<str>, revision: u64) -> BTreeMap<NsName, Arc<StoredObject>> {
        let mut state: BTreeMap<Key, Option<Arc<StoredObject>>> = self
            .objects
            .borrow()
            .iter()
            .filter(|(k, _)| k.0 == *resource)
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        for c in self.changes.borrow().iter().rev() {
            if c.revision <= revision {
                break;
            }
            if c.key.0 == *resource {
                state.insert(c.key.clone(), c.prev.clone());
            }
        }
        state
            .into_iter()
            .filter_map(|(k, v)| Some(((k.1.as_str().into(), k.2.as_str().into()), v?)))
            .collect()
    }

    fn run_interference(&self) {
        let pending = std::mem::take(&mut *self.interference.borrow_mut());
        for (info, obj) in pending {
            let k = key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
            let prev = self.current(&k);
            let kind = if prev.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            self.write(&info, kind, obj, prev);
        }
    }
}

impl Storage for Reference {
    type Feed = ReferenceFeed;

    async fn get(
        &self,
        resource: &Arc<str>,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<StoredObject>>, StorageError> {
        Ok(self.current(&key(resource, namespace, name)))
    }

    async fn list(&self, req: &ListRequest) -> Result<Vec<ListChunk>, StorageError> {
        let mut chunk = ListChunk::default();
        for ((ns, name), obj) in self.at(&req.resource, req.revision) {
            if req.filter.namespace.as_deref().is_some_and(|n| n != &*ns)
                || req
                    .start_after
                    .as_ref()
                    .is_some_and(|k| (&*ns, &*name) <= (&*k.0, &*k.1))
                || !req.filter.matches(&obj)
            {
                continue;
            }
            if req.limit > 0 && chunk.items.len() == req.limit {
                chunk.more = true;
                chunk.remaining += 1;
                continue;
            }
            chunk.items.push(obj);
        }
        if !req.count_remaining {
            chunk.remaining = 0;
        }
        Ok(vec![chunk])
    }

    async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        obj: Value,
    ) -> Result<Arc<StoredObject>, StorageError> {
        let k = key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
        if self.current(&k).is_some() {
            return Err(StorageError::AlreadyExists);
        }
        Ok(self.write(info, EventType::Added, obj, None))
    }

    async fn guaranteed_update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        mut update: UpdateFn,
    ) -> Result<UpdateOutcome, StorageError> {
        let k = key(&info.storage_key, namespace, name);
        loop {
            let read = self.current(&k);
            self.update_calls.set(self.update_calls.get() + 1);
            let step = contained(|| update(read.as_ref()))?;
            self.run_interference();
            let now = self.current(&k);
            if now.as_ref().map(|o| o.revision) != read.as_ref().map(|o| o.revision) {
                continue; // another writer got in: run the function again
            }
            return outcome::update(info, namespace, name, read, step, |kind, obj, prev| {
                self.write(info, kind, obj, prev)
            });
        }
    }

    async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        mut plan: DeletePlan,
    ) -> Result<DeleteOutcome, StorageError> {
        let k = key(&info.storage_key, namespace, name);
        let old = self.current(&k).ok_or(StorageError::NotFound)?;
        let step = contained(|| plan(&old))?;
        Ok(outcome::delete(old, step, |kind, obj, prev| {
            self.write(info, kind, obj, prev)
        }))
    }

    fn current_revision(&self) -> u64 {
        self.revision.get()
    }

    /// Every write is visible as it is made.
    fn progress(&self) -> u64 {
        self.revision.get()
    }

    async fn wait_progress(&self, revision: u64, _timeout: Duration) -> bool {
        revision <= self.progress()
    }

    async fn consistent_revision(&self, _timeout: Duration) -> Result<u64, StorageError> {
        Ok(self.progress())
    }

    fn watch_feed(&self) -> Option<ReferenceFeed> {
        self.feed.borrow_mut().take()
    }
}
