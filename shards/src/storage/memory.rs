//! Keeps nothing beyond the shard's own memory: for tests, load harnesses
//! and `--storage=memory`. Everything is lost at exit.

use super::Backend;
use kubeshard_cache::Event;
use kubeshard_core::status::ApiError;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct MemoryBackend;

impl Backend for MemoryBackend {
    fn persist(&mut self, _batch: &[Arc<Event>]) -> Result<(), ApiError> {
        Ok(())
    }

    fn name(&self) -> &'static str {
        "memory"
    }
}
