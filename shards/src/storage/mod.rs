//! Storage: how a shard's mutations become durable.
//!
//! A shard keeps its objects in memory. With `--storage=memory` a mutation
//! is visible as soon as it is applied. With the default write-ahead log
//! (`--storage=wal`) the shard logs each mutation first and lets it become
//! visible — to GET, LIST and WATCH alike — only once it is durable under
//! the fsync policy; snapshots bound the log, and recovery rebuilds the
//! state from both. An etcd backend will plug in at the same place: a
//! durable sink for groups of committed mutations.

pub mod layout;
pub mod record;
pub mod recovery;
pub mod snapshot;
pub mod wal;

use std::time::Duration;

/// When a logged write counts as durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// On stable storage (fdatasync) before it is acknowledged or visible.
    Always,
    /// Written before it is acknowledged; synced at most this long after.
    Interval(Duration),
    /// Written before it is acknowledged; never explicitly synced.
    None,
}

impl FsyncPolicy {
    /// `always`, `none` or `interval:<duration>` (the duration parsed by
    /// `parse_duration`).
    pub fn parse(
        s: &str,
        parse_duration: impl Fn(&str) -> Result<Duration, String>,
    ) -> Result<Self, String> {
        match s {
            "always" => Ok(Self::Always),
            "none" => Ok(Self::None),
            _ => match s.strip_prefix("interval:") {
                Some(d) => {
                    let d = parse_duration(d)?;
                    if d.is_zero() {
                        return Err("an fsync interval must be above zero".into());
                    }
                    Ok(Self::Interval(d))
                }
                None => Err(format!(
                    "unknown fsync policy {s:?}: use always, interval:<duration> or none"
                )),
            },
        }
    }
}

/// How a shard persists: chosen at start, fixed for the run.
#[derive(Debug, Clone)]
pub enum StorageMode {
    /// Nothing is persisted; mutations are visible when applied.
    Memory,
    /// The write-ahead log with snapshots.
    Wal(WalConfig),
    /// An etcd cluster; the shards are its cache.
    #[cfg(feature = "etcd")]
    Etcd(Box<crate::etcd::Etcd>),
}

#[derive(Debug, Clone)]
pub struct WalConfig {
    pub fsync: FsyncPolicy,
    /// Segment size (None: the default).
    pub segment_size: Option<u64>,
    /// Log bytes after which a shard writes a snapshot and trims its log.
    pub snapshot_after_bytes: u64,
    /// Test hook: writes fail with ENOSPC while this file exists.
    pub fault_file: Option<std::path::PathBuf>,
}
