//! kubeshard-shards: the thread-per-core engine.
//!
//! Executors (one per core) each own one shard of the key space; requests
//! for another shard's keys travel as messages ([`messages`]) and come back
//! as messages, so a store is only ever touched by its own thread. The
//! [`sequencer`] hands out global revisions and computes the closed
//! revision; [`storage`] is the seam where durable backends plug in.

pub mod client;
pub mod closed;
mod committer;
pub mod messages;
pub mod runtime;
pub mod sequencer;
pub mod storage;
pub mod store;

pub use client::ShardClient;
pub use runtime::{
    run, shutdown_pair, ExecutorContext, RuntimeConfig, Shutdown, ShutdownTrigger, StartState,
};
pub use sequencer::Sequencer;
