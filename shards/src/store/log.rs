//! The logged half of a store: writes that are committed (revision drawn,
//! object encoded, frame built) but not yet durable.
//!
//! They wait in an overlay that later writes to the same key build on, so a
//! burst of writes to one object needs no round trip to the disk between
//! them, while GET, LIST and WATCH only ever see the durable maps. The
//! shard's committer task takes the queued frames as one group, writes it,
//! and reports back: on success the group's events apply in revision order;
//! on failure that group and everything queued after it (which may build on
//! it) fail, and the overlay is dropped, so nothing half-written is ever
//! visible.

use super::ShardStore;
use crate::backend::StorageError;
use crate::storage::record::{encode_frame, kind_code, Frame, ObjectRecord};
use crate::storage::wal::writer::Group;
use hashbrown::HashMap;
use kubeshard_cache::{Event, EventType, StoredObject};
use std::rc::Rc;
use std::sync::Arc;

/// Told whether a write became durable.
pub type Completion = Box<dyn FnOnce(Result<(), StorageError>)>;

type Key = (Arc<str>, Arc<str>, Arc<str>);

/// A borrowed [`Key`]: hashes and compares like it, so lookups allocate
/// nothing.
#[derive(Hash)]
struct KeyRef<'a>(&'a str, &'a str, &'a str);

impl hashbrown::Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, k: &Key) -> bool {
        *k.0 == *self.0 && *k.1 == *self.1 && *k.2 == *self.2
    }
}

struct PendingWrite {
    event: Arc<Event>,
    waiters: Vec<Completion>,
}

#[derive(Default)]
pub(super) struct LogState {
    /// The newest pending state of each key with a pending write, and the
    /// revision that wrote it (None: pending deletion).
    overlay: HashMap<Key, (u64, Option<Arc<StoredObject>>)>,
    /// Committed, framed, not yet handed to the writer.
    queued: Vec<PendingWrite>,
    group: Group,
    /// Handed to the writer; the outcome is not known yet.
    flushing: Vec<PendingWrite>,
    /// Wakes the committer when something is queued.
    wake: Rc<event_listener::Event>,
}

impl LogState {
    /// Nothing is pending: the shard's sequencer slot may be released.
    pub(super) fn is_idle(&self) -> bool {
        self.queued.is_empty() && self.flushing.is_empty()
    }

    fn first_pending_revision(&self) -> Option<u64> {
        self.flushing
            .first()
            .or(self.queued.first())
            .map(|p| p.event.revision)
    }

    /// Some(state) when the key has a pending write.
    pub(super) fn pending_state(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Option<Arc<StoredObject>>> {
        if self.overlay.is_empty() {
            return None;
        }
        self.overlay
            .get(&KeyRef(resource, namespace, name))
            .map(|(_, state)| state.clone())
    }

    pub(super) fn queue(&mut self, event: Arc<Event>) {
        let o = &event.object;
        let state = (event.kind != EventType::Deleted).then(|| o.clone());
        self.overlay.insert(
            (event.resource.clone(), o.namespace.clone(), o.name.clone()),
            (event.revision, state),
        );
        encode_frame(
            &Frame::Mutation {
                revision: event.revision,
                kind: kind_code(event.kind),
                object: ObjectRecord::from_stored(&event.resource, o),
            },
            &mut self.group.bytes,
        );
        self.group.last_revision = event.revision;
        self.queued.push(PendingWrite {
            event,
            waiters: Vec::new(),
        });
        self.wake.notify(1);
    }

    pub(super) fn when_durable(&mut self, revision: u64, done: Completion) {
        let pending = self
            .queued
            .iter_mut()
            .rev()
            .chain(self.flushing.iter_mut().rev())
            .find(|p| p.event.revision == revision);
        match pending {
            Some(p) => p.waiters.push(done),
            None => done(Ok(())),
        }
    }
}

impl ShardStore {
    /// Wakes whoever waits for queued writes (the committer), if logged.
    pub fn log_wake(&self) -> Option<Rc<event_listener::Event>> {
        self.log.as_ref().map(|l| l.wake.clone())
    }

    /// Whether writes wait in the queue for the committer.
    pub fn has_queued_writes(&self) -> bool {
        self.log.as_ref().is_some_and(|l| !l.queued.is_empty())
    }

    /// Hands every queued write to the committer as one group. None when
    /// nothing is queued or a group is still being written.
    pub fn take_group(&mut self) -> Option<Group> {
        let log = self.log.as_mut()?;
        if log.queued.is_empty() || !log.flushing.is_empty() {
            return None;
        }
        log.flushing = std::mem::take(&mut log.queued);
        // The next group starts at this one's size: grown from empty it
        // was reallocated, and copied, a dozen times per group.
        let next = Group {
            bytes: Vec::with_capacity(log.group.bytes.len()),
            ..Group::default()
        };
        Some(std::mem::replace(&mut log.group, next))
    }

    /// The group from [`Self::take_group`] is durable (Ok), or could not be
    /// made durable (Err: it and everything queued after it fail).
    pub fn group_done(&mut self, result: Result<(), StorageError>) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        let (settled, outcome) = match result {
            Ok(()) => {
                let done = std::mem::take(&mut log.flushing);
                for p in &done {
                    let o = &p.event.object;
                    let key = KeyRef(&p.event.resource, &o.namespace, &o.name);
                    if log
                        .overlay
                        .get(&key)
                        .is_some_and(|(rev, _)| *rev == p.event.revision)
                    {
                        log.overlay.remove(&key);
                    }
                }
                for p in &done {
                    self.apply(p.event.clone());
                }
                (done, Ok(()))
            }
            Err(e) => {
                let mut failed = std::mem::take(&mut log.flushing);
                failed.append(&mut log.queued);
                log.overlay.clear();
                log.group = Group::default();
                (failed, Err(e))
            }
        };
        self.publish();
        self.release_slot();
        for p in settled {
            for w in p.waiters {
                w(outcome.clone());
            }
        }
    }

    /// After a group settled: hold the sequencer below the first write
    /// still pending, or release the slot when none is.
    fn release_slot(&mut self) {
        if !self.in_batch {
            return;
        }
        match self.log.as_ref().and_then(LogState::first_pending_revision) {
            Some(rev) => self.seq.hold(self.id, rev),
            None => {
                self.seq.end(self.id);
                self.in_batch = false;
            }
        }
    }
}
