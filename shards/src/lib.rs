//! kubeshard-shards: the thread-per-core engine.
//!
//! Executors (one per core) each own one shard of the key space; requests
//! for another shard's keys travel as messages ([`messages`]) and come back
//! as messages, so a store is only ever touched by its own thread. The
//! [`sequencer`] hands out global revisions and computes the closed
//! revision; [`backend`] is the seam the registry stores through, and
//! [`storage`] the engine's own durable log and snapshots.

pub mod backend;
pub mod client;
pub mod closed;
mod committer;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod hyper_io;
pub mod messages;
pub mod runtime;
pub mod sequencer;
pub mod shared_keys;
pub mod storage;
pub mod store;

pub use client::ShardClient;
pub use runtime::{
    run, shutdown_pair, ExecutorContext, RuntimeConfig, Shutdown, ShutdownTrigger, StartState,
};
pub use sequencer::Sequencer;
