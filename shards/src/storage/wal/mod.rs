//! The per-shard write-ahead log: segments of framed records written with
//! O_DIRECT by group commit (off the shard's thread, see [`direct`]), read
//! back at recovery.

mod direct;
pub mod scan;
pub mod writer;

use std::path::PathBuf;

/// What the log knows about one of its segment files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    pub seq: u64,
    pub path: PathBuf,
    /// The newest revision the segment holds (its base revision if none).
    pub max_revision: u64,
}

/// Default size segments are preallocated to.
pub const DEFAULT_SEGMENT_SIZE: u64 = 64 << 20;
