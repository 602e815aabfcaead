//! One shard's store: the objects whose keys hash to this shard, and the
//! recent history of their changes.
//!
//! Only the shard's own executor thread touches a store. Each mutation draws
//! a global revision and is stamped and encoded once. Without a log it is
//! applied at once; with one it waits in the pending overlay (seen by later
//! writes to the same key, by nobody else) until its group is durable, and
//! only then is applied to the maps and history and queued for the watch
//! hubs. Events are published *before* the shard tells the sequencer it is
//! idle (or past them), which is what makes "closed ≥ R" imply "every event
//! ≤ R is durable and on its way to every hub".

mod list;
mod log;
pub(crate) mod outcome;

pub use list::{ListChunk, ListRequest};
pub use log::Completion;

use crate::backend::StorageError;
use crate::sequencer::Sequencer;
use hashbrown::HashMap;
use kubeshard_cache::ring::RingLimits;
use kubeshard_cache::{Event, EventRing, EventType, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::DeleteStep;
use kubeshard_core::status::ApiError;
use log::LogState;
use outcome::contained;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// (namespace, name): the order lists are served in. The strings are the
/// stored object's own (shared, not copied).
pub type NsName = (Arc<str>, Arc<str>);

/// A key as borrowed strings, so lookups allocate nothing: `NsName`
/// borrows as it, and both order by (namespace, name).
pub trait KeyView {
    fn namespace(&self) -> &str;
    fn name(&self) -> &str;
}

impl KeyView for NsName {
    fn namespace(&self) -> &str {
        &self.0
    }
    fn name(&self) -> &str {
        &self.1
    }
}

impl KeyView for (&str, &str) {
    fn namespace(&self) -> &str {
        self.0
    }
    fn name(&self) -> &str {
        self.1
    }
}

impl<'a> std::borrow::Borrow<dyn KeyView + 'a> for NsName {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.namespace() == other.namespace() && self.name() == other.name()
    }
}

impl Eq for dyn KeyView + '_ {}

impl PartialOrd for dyn KeyView + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyView + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.namespace(), self.name()).cmp(&(other.namespace(), other.name()))
    }
}

/// A change another store made (etcd's, through its watch), applied at
/// that store's revision by the shard that owns its key.
#[derive(Debug)]
pub struct Mirrored {
    pub info: Arc<ResourceInfo>,
    pub namespace: String,
    pub name: String,
    pub revision: u64,
    pub change: MirroredChange,
}

#[derive(Debug)]
pub enum MirroredChange {
    /// The object as stored, resourceVersion set.
    Put(Value),
    Delete,
}

/// The kind stored under a storage key (whose objects are namespaced or
/// not): the server's, or a stand-in when it does not know the key.
pub type KindOf = dyn Fn(&str, bool) -> Arc<ResourceInfo> + Send + Sync;

/// A batch of events crossing to one executor's watch hub.
pub type EventBatch = Arc<[Arc<Event>]>;

/// Decides the new state of an object from its stored state (None when
/// absent). Runs on the owning shard, once: read-modify-write there is
/// atomic.
pub type TryUpdate = crate::backend::UpdateFn;

/// Decides what a deletion does to the stored object (the registry's
/// lifecycle rules), on the owning shard so the decision is atomic.
///
/// A compare-and-swap backend asks again when another writer got in
/// first, so it must be free of side effects beyond its answer.
pub type DeletePlan = Box<dyn FnMut(&Arc<StoredObject>) -> Result<DeleteStep, ApiError> + Send>;

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

impl DeleteOutcome {
    pub fn object(&self) -> &Arc<StoredObject> {
        match self {
            DeleteOutcome::Deleted(o)
            | DeleteOutcome::Marked(o)
            | DeleteOutcome::Unchanged(o)
            | DeleteOutcome::Pending(o) => o,
        }
    }
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

pub struct ShardStore {
    id: usize,
    seq: Arc<Sequencer>,
    resources: HashMap<Arc<str>, ResourceStore>,
    limits: RingLimits,
    /// Revision the store's history starts at: older history is unavailable.
    start_revision: u64,
    /// Applied events not yet published to the hubs.
    outbox: Vec<Arc<Event>>,
    /// The sequencer slot of this shard is held.
    in_batch: bool,
    hubs: Vec<async_channel::Sender<EventBatch>>,
    /// Present when mutations are logged before they apply.
    log: Option<LogState>,
    /// One allocation per namespace name, shared by its objects and keys.
    namespaces: hashbrown::HashSet<Arc<str>>,
    /// Objects with the same labels (a ReplicaSet's pods) share one copy.
    label_sets: kubeshard_cache::pairs::PairInterner,
    /// The mirrored revision this shard reports once its batch is
    /// published (see [`Self::mirror`]).
    mirrored_through: Option<u64>,
}

impl ShardStore {
    /// `logged`: mutations wait for the write-ahead log (see [`log`]).
    pub fn new(
        id: usize,
        seq: Arc<Sequencer>,
        logged: bool,
        limits: RingLimits,
        hubs: Vec<async_channel::Sender<EventBatch>>,
        start_revision: u64,
    ) -> Self {
        Self {
            id,
            seq,
            resources: HashMap::new(),
            limits,
            start_revision,
            outbox: Vec::new(),
            in_batch: false,
            hubs,
            log: logged.then(LogState::default),
            namespaces: hashbrown::HashSet::new(),
            label_sets: Default::default(),
            mirrored_through: None,
        }
    }

    /// Loads recovered state: objects, and the history after the start
    /// revision (so watches and lists can resume across a restart). Nothing
    /// is published: every executor's hub gets the same history itself.
    pub fn restore(&mut self, objects: Vec<(Arc<str>, Arc<StoredObject>)>, history: &[Arc<Event>]) {
        for (resource, obj) in objects {
            let key: NsName = (obj.namespace.clone(), obj.name.clone());
            self.resource_mut(&resource).objects.insert(key, obj);
        }
        let now = Instant::now();
        for ev in history {
            self.resource_mut(&ev.resource)
                .history
                .push(ev.clone(), now);
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

    /// The visible (durable) state of an object.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        let rs = self.resources.get(resource)?;
        rs.objects.get(&(namespace, name) as &dyn KeyView).cloned()
    }

    /// The state a new write builds on: pending writes included.
    fn current(&self, resource: &str, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        if let Some(pending) = self
            .log
            .as_ref()
            .and_then(|l| l.pending_state(resource, namespace, name))
        {
            return pending;
        }
        self.get(resource, namespace, name)
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
        let mut found = rs.objects.get(&(namespace, name) as &dyn KeyView).cloned();
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

    /// Objects per resource (by storage key) in this shard, with the mean
    /// JSON size of a sample of them (what flow control sizes a LIST by).
    pub fn objects_by_resource(&self) -> Vec<crate::messages::ResourceCount> {
        const SAMPLE: usize = 32;
        self.resources
            .iter()
            .map(|(k, r)| {
                let sampled: Vec<usize> = r
                    .objects
                    .values()
                    .take(SAMPLE)
                    .map(|o| o.json_slice().len())
                    .collect();
                let mean = sampled.iter().sum::<usize>() / sampled.len().max(1);
                (k.clone(), r.objects.len(), mean)
            })
            .collect()
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

    /// Every visible object, in no particular order: a snapshot's content.
    /// Objects are immutable and shared, so this copies pointers only.
    pub fn frozen_objects(&self) -> Vec<(Arc<str>, Arc<StoredObject>)> {
        let mut out = Vec::with_capacity(self.total_objects());
        for (res, rs) in &self.resources {
            out.extend(rs.objects.values().map(|o| (res.clone(), o.clone())));
        }
        out
    }

    fn begin(&mut self) {
        if !self.in_batch {
            self.seq.begin(self.id);
            self.in_batch = true;
        }
    }

    /// Publishes applied events to every hub, then releases the shard's
    /// sequencer slot unless logged writes are still pending. Callers must
    /// call this after every group of mutations, before they yield.
    pub fn finish_batch(&mut self) {
        self.publish();
        if let Some(through) = self.mirrored_through.take() {
            self.seq.applied(self.id, through);
        }
        if self.in_batch && self.log.as_ref().is_none_or(LogState::is_idle) {
            self.seq.end(self.id);
            self.in_batch = false;
        }
    }

    fn publish(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        let batch: EventBatch = std::mem::take(&mut self.outbox).into();
        for hub in &self.hubs {
            // Unbounded channels: a send fails only when the hub is gone
            // (shutdown), and then nobody is left to tell.
            let _ = hub.try_send(batch.clone());
        }
    }

    /// Makes an event visible: maps, history, and the outbox for the hubs.
    fn apply(&mut self, event: Arc<Event>) {
        let key: NsName = (event.object.namespace.clone(), event.object.name.clone());
        let rs = self.resource_mut(&event.resource);
        match event.kind {
            EventType::Deleted => {
                rs.objects.remove(&key);
            }
            _ => {
                rs.objects.insert(key, event.object.clone());
            }
        }
        rs.history.push(event.clone(), Instant::now());
        self.outbox.push(event);
    }

    /// Draws a revision, stamps and encodes the object, and applies the
    /// event (without a log) or queues it for the log.
    fn commit(
        &mut self,
        info: &ResourceInfo,
        kind: EventType,
        obj: Value,
        prev: Option<Arc<StoredObject>>,
    ) -> Arc<StoredObject> {
        self.begin();
        let revision = self.seq.next();
        let (stored, event) = self.stamp(info, kind, obj, prev, revision);
        match &mut self.log {
            None => self.apply(event),
            Some(log) => log.queue(event),
        }
        stored
    }

    /// Applies changes another store made, in revision order; every one up
    /// to `through` has then been handed over (see [`Mirrored`]).
    pub fn mirror(&mut self, changes: Vec<Mirrored>, through: u64) {
        for m in changes {
            let prev = self.get(&m.info.storage_key, &m.namespace, &m.name);
            let (kind, obj) = match (m.change, &prev) {
                (MirroredChange::Put(obj), None) => (EventType::Added, obj),
                (MirroredChange::Put(obj), Some(_)) => (EventType::Modified, obj),
                (MirroredChange::Delete, Some(p)) => (EventType::Deleted, p.to_value()),
                // A deletion of what this shard never held.
                (MirroredChange::Delete, None) => continue,
            };
            let (_, event) = self.stamp(&m.info, kind, obj, prev, m.revision);
            self.apply(event);
        }
        self.mirrored_through = Some(self.mirrored_through.unwrap_or(0).max(through));
    }

    /// Catches up with another store whose history this shard can no
    /// longer follow (etcd compacted what it had not seen): the state at
    /// `revision` replaces this shard's, as the changes that lead to it —
    /// each changed object at its own revision, each vanished one
    /// deleted at `revision`.
    pub fn resync(
        &mut self,
        objects: Vec<(Arc<ResourceInfo>, Arc<StoredObject>)>,
        revision: u64,
        kinds: &KindOf,
    ) {
        let mut seen: hashbrown::HashSet<(Arc<str>, NsName)> = hashbrown::HashSet::new();
        let mut changes = Vec::new();
        for (info, obj) in objects {
            seen.insert((
                info.storage_key.clone(),
                (obj.namespace.clone(), obj.name.clone()),
            ));
            let current = self.get(&info.storage_key, &obj.namespace, &obj.name);
            if current.is_some_and(|c| c.revision == obj.revision) {
                continue;
            }
            changes.push(Mirrored {
                namespace: obj.namespace.to_string(),
                name: obj.name.to_string(),
                revision: obj.revision,
                change: MirroredChange::Put(obj.to_value()),
                info,
            });
        }
        let mut gone = Vec::new();
        for (resource, rs) in &self.resources {
            for (key, obj) in &rs.objects {
                if !seen.contains(&(resource.clone(), key.clone())) {
                    gone.push((resource.clone(), obj.clone()));
                }
            }
        }
        for (resource, obj) in gone {
            changes.push(Mirrored {
                info: kinds(&resource, !obj.namespace.is_empty()),
                namespace: obj.namespace.to_string(),
                name: obj.name.to_string(),
                revision,
                change: MirroredChange::Delete,
            });
        }
        changes.sort_by_key(|m| m.revision);
        self.mirror(changes, revision);
    }

    /// The object at `revision`, encoded once, sharing its strings with
    /// the state it replaces, and its event.
    fn stamp(
        &mut self,
        info: &ResourceInfo,
        kind: EventType,
        mut obj: Value,
        prev: Option<Arc<StoredObject>>,
        revision: u64,
    ) -> (Arc<StoredObject>, Arc<Event>) {
        meta::set_meta(
            &mut obj,
            "resourceVersion",
            Value::String(revision.to_string()),
        );
        let mut stored = StoredObject::encode_for(info, &obj, revision, kind);
        match &prev {
            Some(p) => stored.share_names(&p.namespace, &p.name),
            None => {
                let ns = self.intern_namespace(&stored.namespace);
                let name = stored.name.clone();
                stored.share_names(&ns, &name);
            }
        }
        stored.labels = match &prev {
            Some(p) if p.labels == stored.labels => p.labels.clone(),
            _ => self.label_sets.intern(&stored.labels),
        };
        let stored = Arc::new(stored);
        let event = Arc::new(Event::new(
            revision,
            kind,
            info.storage_key.clone(),
            stored.clone(),
            prev,
        ));
        (stored, event)
    }

    fn intern_namespace(&mut self, ns: &Arc<str>) -> Arc<str> {
        if let Some(known) = self.namespaces.get(&**ns) {
            return known.clone();
        }
        self.namespaces.insert(ns.clone());
        ns.clone()
    }

    /// Calls `done` once the write that produced `revision` is durable (or
    /// failed to be). Must be called right after that write, before the
    /// store is released: a revision not pending then is already durable.
    pub fn when_durable(&mut self, revision: u64, done: Completion) {
        match &mut self.log {
            Some(log) => log.when_durable(revision, done),
            None => done(Ok(())),
        }
    }

    /// Stores a new object (already prepared and validated).
    pub fn create(
        &mut self,
        info: &ResourceInfo,
        obj: Value,
    ) -> Result<Arc<StoredObject>, StorageError> {
        let (ns, name) = (
            meta::namespace(&obj).to_string(),
            meta::name(&obj).to_string(),
        );
        if self.current(&info.storage_key, &ns, &name).is_some() {
            return Err(StorageError::AlreadyExists);
        }
        Ok(self.commit(info, EventType::Added, obj, None))
    }

    /// Read-modify-write of one object, atomic on this shard.
    pub fn update(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        mut try_update: TryUpdate,
    ) -> Result<UpdateOutcome, StorageError> {
        let old = self.current(&info.storage_key, namespace, name);
        let step = contained(|| try_update(old.as_ref()))?;
        outcome::update(info, namespace, name, old, step, |kind, obj, prev| {
            self.commit(info, kind, obj, prev)
        })
    }

    /// A deletion following the registry's lifecycle rules: `plan` sees
    /// the stored object and decides whether it goes now, is marked as
    /// being deleted (and kept), or both.
    pub fn delete_with(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        mut plan: DeletePlan,
    ) -> Result<DeleteOutcome, StorageError> {
        let Some(old) = self.current(&info.storage_key, namespace, name) else {
            return Err(StorageError::NotFound);
        };
        let step = contained(|| plan(&old))?;
        Ok(outcome::delete(old, step, |kind, obj, prev| {
            self.commit(info, kind, obj, prev)
        }))
    }
}

#[cfg(test)]
mod log_tests;
#[cfg(test)]
mod mirror_tests;
#[cfg(test)]
mod tests;
