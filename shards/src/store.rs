//! One shard's store: the objects whose keys hash to this shard, and the
//! recent history of their changes.
//!
//! Only the shard's own executor thread touches a store. Each mutation draws
//! a global revision, is handed to the backend, then becomes visible in the
//! maps and in the history ring, and its event is queued for the watch hubs
//! of every executor. [`ShardStore::finish_batch`] publishes the queued
//! events *before* it tells the sequencer the shard is idle, which is what
//! makes "closed ≥ R" imply "every event ≤ R is on its way to every hub".

use crate::sequencer::Sequencer;
use crate::storage::Backend;
use hashbrown::HashMap;
use kubeshard_cache::ring::RingLimits;
use kubeshard_cache::{Event, EventRing, EventType, Filter, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::DeleteStep;
use kubeshard_core::registry::should_delete_during_update;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// (namespace, name): the order lists are served in.
pub type NsName = (Box<str>, Box<str>);

/// A batch of events crossing to one executor's watch hub.
pub type EventBatch = Arc<[Arc<Event>]>;

/// Decides the new state of an object from its stored state (None when
/// absent). Runs on the owning shard, so read-modify-write is atomic.
pub type TryUpdate = Box<dyn FnOnce(Option<&Arc<StoredObject>>) -> Result<Value, ApiError> + Send>;

/// Decides whether a deletion may proceed, given the stored object.
pub type DeleteCheck = Box<dyn FnOnce(&Arc<StoredObject>) -> Result<(), ApiError> + Send>;

/// Decides what a deletion does to the stored object (the registry's
/// lifecycle rules), on the owning shard so the decision is atomic.
pub type DeletePlan = Box<dyn FnOnce(&Arc<StoredObject>) -> Result<DeleteStep, ApiError> + Send>;

/// What a lifecycle deletion did.
#[derive(Debug, Clone)]
pub enum DeleteOutcome {
    /// Removed; the object's last state at the deletion's revision.
    Deleted(Arc<StoredObject>),
    /// Kept, marked as being deleted (a new state was stored).
    Marked(Arc<StoredObject>),
    /// Kept and already marked; nothing was written.
    Unchanged(Arc<StoredObject>),
    /// A deletion already under way that this request does not change.
    Pending(Arc<StoredObject>),
}

#[derive(Debug)]
struct ResourceStore {
    objects: BTreeMap<NsName, Arc<StoredObject>>,
    history: EventRing,
}

/// What an update did.
#[derive(Debug, Clone)]
pub enum UpdateOutcome {
    Created(Arc<StoredObject>),
    Updated(Arc<StoredObject>),
    /// Nothing changed; no revision was drawn.
    Unchanged(Arc<StoredObject>),
    /// The update removed the last finalizer of an object whose deletion
    /// was due, so the object was deleted instead of stored (kube's
    /// delete-during-update). `deleted` is what watchers saw in DELETED;
    /// `response` is the updated object as the client sent it, with its
    /// revision set to the deletion's.
    Deleted {
        deleted: Arc<StoredObject>,
        response: Arc<StoredObject>,
    },
}

impl UpdateOutcome {
    /// What the write answers with.
    pub fn object(&self) -> &Arc<StoredObject> {
        match self {
            UpdateOutcome::Created(o) | UpdateOutcome::Updated(o) | UpdateOutcome::Unchanged(o) => {
                o
            }
            UpdateOutcome::Deleted { response, .. } => response,
        }
    }
}

/// One shard's part of a list.
#[derive(Debug, Default)]
pub struct ListChunk {
    /// Matching objects in key order, at most `limit` of them.
    pub items: Vec<Arc<StoredObject>>,
    /// Matching objects after the last returned one (0 unless counted).
    pub remaining: usize,
    /// More matching objects exist after `items`.
    pub more: bool,
}

/// Parameters of a list on one shard.
#[derive(Debug, Clone)]
pub struct ListRequest {
    pub resource: Arc<str>,
    pub filter: Arc<Filter>,
    /// The snapshot revision.
    pub revision: u64,
    /// Start strictly after this key (from a continue token).
    pub start_after: Option<NsName>,
    /// 0 = no limit.
    pub limit: usize,
    /// Count all matches past the page (for remainingItemCount).
    pub count_remaining: bool,
}

pub struct ShardStore {
    id: usize,
    seq: Arc<Sequencer>,
    backend: Box<dyn Backend>,
    resources: HashMap<Arc<str>, ResourceStore>,
    limits: RingLimits,
    /// Revision the store started at: history before it is unavailable.
    start_revision: u64,
    /// Events not yet published to the hubs.
    outbox: Vec<Arc<Event>>,
    in_batch: bool,
    hubs: Vec<async_channel::Sender<EventBatch>>,
}

impl ShardStore {
    pub fn new(
        id: usize,
        seq: Arc<Sequencer>,
        backend: Box<dyn Backend>,
        limits: RingLimits,
        hubs: Vec<async_channel::Sender<EventBatch>>,
        start_revision: u64,
    ) -> Self {
        Self {
            id,
            seq,
            backend,
            resources: HashMap::new(),
            limits,
            start_revision,
            outbox: Vec::new(),
            in_batch: false,
            hubs,
        }
    }

    fn resource_mut(&mut self, resource: &Arc<str>) -> &mut ResourceStore {
        let (limits, start) = (self.limits, self.start_revision);
        self.resources
            .entry(resource.clone())
            .or_insert_with(|| ResourceStore {
                objects: BTreeMap::new(),
                history: EventRing::new(start, limits),
            })
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        let rs = self.resources.get(resource)?;
        rs.objects.get(&(namespace.into(), name.into())).cloned()
    }

    /// The object as it was at `revision`, if history reaches back that far.
    pub fn get_at(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        revision: u64,
    ) -> Result<Option<Arc<StoredObject>>, u64> {
        let Some(rs) = self.resources.get(resource) else {
            return Ok(None);
        };
        let key: NsName = (namespace.into(), name.into());
        let mut found = rs.objects.get(&key).cloned();
        for ev in rs.history.events_after(revision)?.rev() {
            if *ev.object.namespace == *namespace && *ev.object.name == *name {
                found = ev.prev.clone();
            }
        }
        Ok(found)
    }

    /// Objects of every resource in this shard.
    pub fn total_objects(&self) -> usize {
        self.resources.values().map(|r| r.objects.len()).sum()
    }

    /// Events held in the history rings.
    pub fn history_events(&self) -> usize {
        self.resources.values().map(|r| r.history.len()).sum()
    }

    /// Heap bytes held by stored objects (memory reporting).
    pub fn object_bytes(&self) -> usize {
        self.resources
            .values()
            .flat_map(|r| r.objects.values())
            .map(|o| o.heap_size())
            .sum()
    }

    fn begin(&mut self) {
        if !self.in_batch {
            self.seq.begin(self.id);
            self.in_batch = true;
        }
    }

    /// Publishes queued events to every hub, then marks the shard idle.
    /// Callers must call this after every group of mutations, before they
    /// yield to the executor.
    pub fn finish_batch(&mut self) {
        if !self.outbox.is_empty() {
            let batch: EventBatch = std::mem::take(&mut self.outbox).into();
            for hub in &self.hubs {
                // Unbounded channels: a send fails only when the hub is gone
                // (shutdown), and then nobody is left to tell.
                let _ = hub.try_send(batch.clone());
            }
        }
        if self.in_batch {
            self.seq.end(self.id);
            self.in_batch = false;
        }
    }

    /// Draws a revision, stamps and encodes the object, persists the event
    /// and makes it visible.
    fn commit(
        &mut self,
        info: &ResourceInfo,
        kind: EventType,
        mut obj: Value,
        prev: Option<Arc<StoredObject>>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.begin();
        let revision = self.seq.next();
        meta::set_meta(
            &mut obj,
            "resourceVersion",
            Value::String(revision.to_string()),
        );
        let stored = Arc::new(StoredObject::encode(info, &obj, revision));
        let event = Arc::new(Event::new(
            revision,
            kind,
            info.storage_key.clone(),
            stored.clone(),
            prev,
        ));
        self.backend.persist(std::slice::from_ref(&event))?;
        let key: NsName = (stored.namespace.clone(), stored.name.clone());
        let rs = self.resource_mut(&info.storage_key);
        match kind {
            EventType::Deleted => {
                rs.objects.remove(&key);
            }
            _ => {
                rs.objects.insert(key, stored.clone());
            }
        }
        rs.history.push(event.clone(), Instant::now());
        self.outbox.push(event);
        Ok(stored)
    }

    /// Stores a new object (already prepared and validated).
    pub fn create(
        &mut self,
        info: &ResourceInfo,
        obj: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let (ns, name) = (
            meta::namespace(&obj).to_string(),
            meta::name(&obj).to_string(),
        );
        if self.get(&info.storage_key, &ns, &name).is_some() {
            return Err(ApiError::already_exists(&info.group, &info.plural, &name));
        }
        self.commit(info, EventType::Added, obj, None)
    }

    /// Read-modify-write of one object, atomic on this shard.
    pub fn update(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        try_update: TryUpdate,
    ) -> Result<UpdateOutcome, ApiError> {
        let old = self.get(&info.storage_key, namespace, name);
        let new = try_update(old.as_ref())?;
        if meta::namespace(&new) != namespace || meta::name(&new) != name {
            return Err(ApiError::bad_request(
                "an update may not change the object's name or namespace",
            ));
        }
        match old {
            None => Ok(UpdateOutcome::Created(self.commit(
                info,
                EventType::Added,
                new,
                None,
            )?)),
            Some(old) => {
                let old_value = old.to_value();
                if should_delete_during_update(info, &new, &old_value) {
                    let deleted =
                        self.commit(info, EventType::Deleted, old_value, Some(old.clone()))?;
                    let mut response = new;
                    meta::set_meta(
                        &mut response,
                        "resourceVersion",
                        Value::String(old.revision.to_string()),
                    );
                    let response =
                        Arc::new(StoredObject::encode(info, &response, deleted.revision));
                    return Ok(UpdateOutcome::Deleted { deleted, response });
                }
                if same_content(&old, old_value, &new) {
                    return Ok(UpdateOutcome::Unchanged(old));
                }
                Ok(UpdateOutcome::Updated(self.commit(
                    info,
                    EventType::Modified,
                    new,
                    Some(old),
                )?))
            }
        }
    }

    /// A deletion following the registry's lifecycle rules: `plan` sees
    /// the stored object and decides whether it goes now, is marked as
    /// being deleted (and kept), or both.
    pub fn delete_with(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        plan: DeletePlan,
    ) -> Result<DeleteOutcome, ApiError> {
        let Some(old) = self.get(&info.storage_key, namespace, name) else {
            return Err(ApiError::not_found(&info.group, &info.plural, name));
        };
        match plan(&old)? {
            DeleteStep::Delete => {
                let last = old.to_value();
                Ok(DeleteOutcome::Deleted(self.commit(
                    info,
                    EventType::Deleted,
                    last,
                    Some(old),
                )?))
            }
            DeleteStep::MarkThenDelete(mut marked) => {
                meta::remove_meta(&mut marked, "resourceVersion");
                let marked = self.commit(info, EventType::Modified, marked, Some(old))?;
                let last = marked.to_value();
                Ok(DeleteOutcome::Deleted(self.commit(
                    info,
                    EventType::Deleted,
                    last,
                    Some(marked),
                )?))
            }
            DeleteStep::Mark(mut marked) => {
                meta::remove_meta(&mut marked, "resourceVersion");
                if same_content(&old, old.to_value(), &marked) {
                    return Ok(DeleteOutcome::Unchanged(old));
                }
                Ok(DeleteOutcome::Marked(self.commit(
                    info,
                    EventType::Modified,
                    marked,
                    Some(old),
                )?))
            }
            DeleteStep::Pending => Ok(DeleteOutcome::Pending(old)),
        }
    }

    /// Removes an object; returns its last state stamped with the deletion
    /// revision (what watchers see in DELETED).
    pub fn delete(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        check: DeleteCheck,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let Some(old) = self.get(&info.storage_key, namespace, name) else {
            return Err(ApiError::not_found(&info.group, &info.plural, name));
        };
        check(&old)?;
        let last = old.to_value();
        self.commit(info, EventType::Deleted, last, Some(old))
    }

    /// This shard's part of a list at `req.revision`: current objects with
    /// the changes after that revision undone from history. Err carries the
    /// compaction point when history no longer reaches the revision.
    pub fn list(&self, req: &ListRequest) -> Result<ListChunk, u64> {
        let Some(rs) = self.resources.get(&req.resource) else {
            return Ok(ListChunk::default());
        };
        // Keys changed after the snapshot revision, mapped to their state at
        // the revision (None: did not exist then). Walking newest → oldest,
        // the last write per key is the oldest event's `prev`.
        let mut overlay: BTreeMap<NsName, Option<Arc<StoredObject>>> = BTreeMap::new();
        if req.revision < rs.history.last_revision() {
            for ev in rs.history.events_after(req.revision)?.rev() {
                let key = (ev.object.namespace.clone(), ev.object.name.clone());
                overlay.insert(key, ev.prev.clone());
            }
        }
        let ns = req.filter.namespace.as_deref();
        let lower: NsName = match (&req.start_after, ns) {
            (Some(k), _) => k.clone(),
            (None, Some(ns)) => (ns.into(), "".into()),
            (None, None) => ("".into(), "".into()),
        };
        let exclusive = req.start_after.is_some();
        let in_namespace = |k: &NsName| ns.is_none_or(|ns| *k.0 == *ns);
        let past_start = |k: &NsName| !exclusive || *k != lower;
        let current = rs
            .objects
            .range(lower.clone()..)
            .take_while(|(k, _)| in_namespace(k))
            .filter(|(k, _)| past_start(k));
        let changed = overlay
            .range(lower.clone()..)
            .take_while(|(k, _)| in_namespace(k))
            .filter(|(k, _)| past_start(k));
        let mut chunk = ListChunk::default();
        for obj in MergeOverlay::new(current, changed) {
            if !req.filter.matches(&obj) {
                continue;
            }
            if req.limit > 0 && chunk.items.len() >= req.limit {
                chunk.more = true;
                if !req.count_remaining {
                    break;
                }
                chunk.remaining += 1;
                continue;
            }
            chunk.items.push(obj);
        }
        Ok(chunk)
    }
}

/// Whether `new` stores the same object as `old` (whose decoded value is
/// `old_value`): compared with both at the stored revision.
fn same_content(old: &StoredObject, mut old_value: Value, new: &Value) -> bool {
    let mut candidate = new.clone();
    let rv = Value::String(old.revision.to_string());
    meta::set_meta(&mut candidate, "resourceVersion", rv.clone());
    meta::set_meta(&mut old_value, "resourceVersion", rv);
    candidate == old_value
}

/// Merges current objects with the snapshot overlay, both in key order:
/// an overlay entry replaces (or hides, when None) the current one.
struct MergeOverlay<'a, A, B>
where
    A: Iterator<Item = (&'a NsName, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a NsName, &'a Option<Arc<StoredObject>>)>,
{
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<'a, A, B> MergeOverlay<'a, A, B>
where
    A: Iterator<Item = (&'a NsName, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a NsName, &'a Option<Arc<StoredObject>>)>,
{
    fn new(a: A, b: B) -> Self {
        Self {
            a: a.peekable(),
            b: b.peekable(),
        }
    }
}

impl<'a, A, B> Iterator for MergeOverlay<'a, A, B>
where
    A: Iterator<Item = (&'a NsName, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a NsName, &'a Option<Arc<StoredObject>>)>,
{
    type Item = Arc<StoredObject>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.a.peek(), self.b.peek()) {
                (None, None) => return None,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
            };
            let from_overlay = match order {
                std::cmp::Ordering::Less => return self.a.next().map(|(_, o)| o.clone()),
                std::cmp::Ordering::Equal => {
                    self.a.next();
                    self.b.next()
                }
                std::cmp::Ordering::Greater => self.b.next(),
            };
            if let Some((_, Some(o))) = from_overlay {
                return Some(o.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests;
