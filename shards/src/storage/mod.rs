//! The storage backend seam.
//!
//! A shard store keeps its objects in memory and hands every mutation to a
//! backend before the mutation becomes visible. The in-memory backend
//! accepts everything at once; the write-ahead log (durable default) and
//! etcd backends plug in here without the store or the handlers changing.

use kubeshard_cache::Event;
use kubeshard_core::status::ApiError;
use std::sync::Arc;

pub mod memory;

/// Where a shard's mutations go to become durable.
pub trait Backend {
    /// Takes one batch of events (in revision order). When it returns Ok the
    /// batch is durable under the backend's policy and may become visible;
    /// on Err the store rolls the batch back and fails its requests.
    fn persist(&mut self, batch: &[Arc<Event>]) -> Result<(), ApiError>;

    /// A short name for logs and metrics.
    fn name(&self) -> &'static str;
}
