//! Requests one executor sends to the shard that owns a key.

use crate::backend::StorageError;
use crate::store::{
    DeleteOutcome, DeletePlan, ListChunk, ListRequest, Mirrored, TryUpdate, UpdateOutcome,
};
use futures_channel::oneshot;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use serde_json::Value;
use std::sync::Arc;

pub type Reply<T> = oneshot::Sender<T>;

/// Memory and size figures of one executor: its shard's store and its
/// watch hub.
#[derive(Debug, Clone, Default)]
pub struct ShardStats {
    pub objects: usize,
    /// Heap bytes of stored objects (encodings and extracted metadata).
    pub object_bytes: usize,
    /// Events kept in the shard's history rings (list snapshots).
    pub history_events: usize,
    /// Events kept in the executor's merged watch rings.
    pub watch_events: usize,
    /// Secondary index entries in the watch rings.
    pub watch_index_entries: usize,
    /// Watch streams open on this executor.
    pub watchers: usize,
    /// Objects stored in the shard per resource.
    pub objects_by_resource: Vec<ResourceCount>,
}

/// A resource's objects in one shard: (storage key, count, mean JSON size
/// of a sample of them).
pub type ResourceCount = (Arc<str>, usize, usize);

pub enum ShardMsg {
    Get {
        resource: Arc<str>,
        namespace: String,
        name: String,
        reply: Reply<Option<Arc<StoredObject>>>,
    },
    List {
        req: ListRequest,
        reply: Reply<Result<ListChunk, u64>>,
    },
    Create {
        info: Arc<ResourceInfo>,
        obj: Value,
        reply: Reply<Result<Arc<StoredObject>, StorageError>>,
    },
    Update {
        info: Arc<ResourceInfo>,
        namespace: String,
        name: String,
        try_update: TryUpdate,
        reply: Reply<Result<UpdateOutcome, StorageError>>,
    },
    DeleteWith {
        info: Arc<ResourceInfo>,
        namespace: String,
        name: String,
        plan: DeletePlan,
        reply: Reply<Result<DeleteOutcome, StorageError>>,
    },
    Stats {
        reply: Reply<ShardStats>,
    },
    /// Only the per-resource counts: what flow control polls, without the
    /// walk over every object that the full figures take.
    Resources {
        reply: Reply<Vec<ResourceCount>>,
    },
    /// Changes another store made (etcd's), for this shard's keys, and
    /// the revision every change up to which has now been handed over.
    Mirror {
        changes: Vec<Mirrored>,
        through: u64,
    },
    /// The whole state at a revision, for this shard's keys (after the
    /// shard fell behind etcd's history: see `ShardStore::resync`).
    Resync {
        objects: Vec<(Arc<ResourceInfo>, Arc<StoredObject>)>,
        revision: u64,
        kinds: Arc<crate::store::KindOf>,
    },
}
