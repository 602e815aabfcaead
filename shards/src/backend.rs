//! The seam between the registry and storage, shaped like kube's
//! `storage.Interface`: what the registry needs of any backend (this
//! sharded engine in memory, on its write-ahead log, or mirroring etcd).
//!
//! Storage knows keys, revisions and bytes, not the API: its errors say
//! what happened to a key ([`StorageError`]) and the registry turns them
//! into Status errors with the resource's group, plural and name. The
//! caller's own functions (an update, a deletion plan) decide API
//! semantics and answer with API errors, which storage passes through
//! untouched ([`StorageError::Refused`]).
//!
//! Revisions are the backend's: a create or an update answers the stored
//! object stamped with the revision the backend assigned, and
//! [`Storage::progress`] tells up to which revision every write is visible
//! to reads and on its way to the watch feed (the engine's closed
//! revision; over etcd, the revision every shard's share of the mirrored
//! watch has reached). Each executor's
//! watch hub is fed by the backend's [`WatchFeed`], released up to that
//! same progress.

pub mod feed;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

pub use feed::WatchFeed;

use crate::store::{DeleteOutcome, DeletePlan, ListChunk, ListRequest, UpdateOutcome};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// What storage can say went wrong with a key.
#[derive(Debug, Clone)]
pub enum StorageError {
    /// No object at the key.
    NotFound,
    /// A create found an object at the key.
    AlreadyExists,
    /// The object the update function produced names another key.
    KeyChanged,
    /// The revision asked for is older than the history storage keeps.
    TooOld { requested: u64, compacted: u64 },
    /// Storage cannot take or answer the request now (shutting down, a
    /// disk that failed the write); the client may retry.
    Unavailable(String),
    /// Storage failed in a way the client cannot fix (a caller's function
    /// panicked on the storage's thread).
    Internal(String),
    /// The caller's function refused the write; its error, unchanged.
    Refused(ApiError),
}

impl From<ApiError> for StorageError {
    fn from(e: ApiError) -> Self {
        StorageError::Refused(e)
    }
}

/// What an update function decided the write does.
#[derive(Debug, Clone)]
pub enum UpdateStep {
    /// Store this state.
    Write(Value),
    /// Delete the object instead; the value is what the writer is
    /// answered with (the registry's delete-during-update: an update that
    /// removed the last finalizer of an object whose deletion was due).
    Delete(Value),
}

/// Decides the new state of an object from its stored state (None when
/// absent). A backend may call it more than once: a compare-and-swap
/// backend calls it again with the newer state when another writer got
/// in first, so it must be free of side effects beyond its answer.
pub type UpdateFn =
    Box<dyn FnMut(Option<&Arc<StoredObject>>) -> Result<UpdateStep, ApiError> + Send>;

/// A backend the registry stores objects in. One instance per executor;
/// futures are not `Send` (thread-per-core).
#[allow(async_fn_in_trait)]
pub trait Storage {
    /// The feed of every write, as events, for this executor's watch hub.
    type Feed: WatchFeed;

    /// The visible state of one object (`resource` is its kind's storage
    /// key).
    async fn get(
        &self,
        resource: &Arc<str>,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<StoredObject>>, StorageError>;

    /// The objects matching `req` at `req.revision`, in key order within
    /// each part, starting after `req.start_after`, at most `req.limit` per
    /// part. A backend answers one part or several (the engine answers one
    /// per shard); the caller merges them.
    async fn list(&self, req: &ListRequest) -> Result<Vec<ListChunk>, StorageError>;

    /// Stores a new object (prepared and validated) under the key its
    /// metadata names.
    async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        obj: Value,
    ) -> Result<Arc<StoredObject>, StorageError>;

    /// Read-modify-write of one object until it lands: `update` sees the
    /// current state and answers the new one, again if the state changed
    /// before the write (see [`UpdateFn`]). Creates the object when
    /// `update` answers one for an absent key.
    async fn guaranteed_update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        update: UpdateFn,
    ) -> Result<UpdateOutcome, StorageError>;

    /// A deletion whose preconditions and lifecycle `plan` checks against
    /// the stored object, atomically with the write.
    async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        plan: DeletePlan,
    ) -> Result<DeleteOutcome, StorageError>;

    /// The newest revision assigned so far (visible or not).
    fn current_revision(&self) -> u64;

    /// Every write up to this revision is visible to reads and has been
    /// handed to the watch feed.
    fn progress(&self) -> u64;

    /// A revision at which reads see every write acknowledged anywhere
    /// before this call (by this server or, over a shared store, by
    /// another), once visible here: what a read without a
    /// resourceVersion is served at. Fails when it cannot be reached in
    /// `timeout`.
    async fn consistent_revision(&self, timeout: Duration) -> Result<u64, StorageError>;

    /// Waits until [`Self::progress`] reaches `revision`; false at the
    /// timeout.
    async fn wait_progress(&self, revision: u64, timeout: Duration) -> bool;

    /// This executor's watch feed. The first call takes it (one hub per
    /// executor is fed from it, see [`feed::drive_hub`]); later calls
    /// answer None.
    fn watch_feed(&self) -> Option<Self::Feed>;
}
