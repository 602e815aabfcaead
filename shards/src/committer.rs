//! A logged shard's committer: the task that turns queued writes into
//! durable ones, group by group, and keeps the log short with snapshots.
//!
//! Group commit falls out of the shape: while one group is being written,
//! every write that arrives queues behind it, and the next group takes them
//! all with one write and one sync. Under light load a group is one write.

use crate::backend::StorageError;
use crate::runtime::Shutdown;
use crate::storage::snapshot::{write_snapshot, SnapshotEncoder};
use crate::storage::wal::writer::LogWriter;
use crate::storage::WalConfig;
use crate::store::ShardStore;
use futures_lite::future;
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Snapshots kept: the newest, and the one before it in case the newest is
/// lost (the log is kept back to the older one, so either can recover).
const SNAPSHOTS_KEPT: usize = 2;

/// How long after a failed snapshot the next attempt waits.
const SNAPSHOT_RETRY: Duration = Duration::from_secs(10);

/// What the committer needs besides the store.
pub struct CommitterConfig {
    pub shard: usize,
    pub shards: usize,
    pub wal: WalConfig,
    /// Existing snapshots, oldest first.
    pub snapshots: Vec<(u64, PathBuf)>,
    /// Where snapshots are written: no client waits on them.
    pub background: glommio::TaskQueueHandle,
}

/// A write that could not be made durable: the client learns it, the
/// server keeps serving reads, and later writes retry the disk.
fn storage_error(e: std::io::Error) -> StorageError {
    tracing::error!(error = %e, "write-ahead log write failed; the writes in it were refused");
    StorageError::Unavailable(format!(
        "the write could not be made durable: {e}; the server stays up and retries on the next write"
    ))
}

pub async fn run(
    store: Rc<RefCell<ShardStore>>,
    mut log: LogWriter,
    cfg: CommitterConfig,
    shutdown: Shutdown,
) {
    let wake = store.borrow().log_wake().expect("a logged store");
    let snapshots = Rc::new(RefCell::new(cfg.snapshots.clone()));
    let snapshot_busy = Rc::new(Cell::new(false));
    let snapshot_finished = Rc::new(Cell::new(false));
    let next_snapshot_try = Rc::new(Cell::new(Instant::now()));
    let mut shutdown_seen = false;
    trim(&mut log, &snapshots).await;
    loop {
        let listener = wake.listen();
        if snapshot_finished.take() {
            trim(&mut log, &snapshots).await;
        }
        let group = store.borrow_mut().take_group();
        let Some(group) = group else {
            let due = log.sync_due();
            let woken = future::or(
                async {
                    listener.await;
                    true
                },
                async {
                    match due {
                        Some(at) => {
                            glommio::timer::sleep(at.saturating_duration_since(Instant::now()))
                                .await
                        }
                        None if !shutdown_seen => shutdown.wait().await,
                        None => future::pending::<()>().await,
                    }
                    false
                },
            )
            .await;
            if !woken {
                shutdown_seen |= shutdown.is_triggered();
                if let Err(e) = log.sync().await {
                    tracing::error!(error = %e, "periodic log sync failed");
                }
            }
            continue;
        };
        let result = log.append(&group).await.map_err(storage_error);
        store.borrow_mut().group_done(result);

        let threshold = cfg
            .wal
            .snapshot_after_bytes
            .max(last_snapshot_bytes(&snapshots.borrow()));
        if log.written_since_rotation() >= threshold
            && !snapshot_busy.get()
            && Instant::now() >= next_snapshot_try.get()
        {
            let revision = log.last_revision();
            let objects = store.borrow().frozen_objects();
            log.rotate_next();
            snapshot_busy.set(true);
            let (busy, finished, list, wake, retry) = (
                snapshot_busy.clone(),
                snapshot_finished.clone(),
                snapshots.clone(),
                wake.clone(),
                next_snapshot_try.clone(),
            );
            let dir = log_dir(&log);
            let encoder = SnapshotEncoder::new(cfg.shard, cfg.shards, revision, objects);
            let shard = cfg.shard;
            crate::runtime::spawn_background(cfg.background, async move {
                let dest = dir.join(format!("snap-{revision:020}.snap"));
                let tmp = dir.join(format!("snap-{revision:020}.tmp"));
                let started = Instant::now();
                match write_snapshot(&tmp, &dest, encoder).await {
                    Ok(()) => {
                        tracing::info!(shard, revision, elapsed = ?started.elapsed(), "snapshot written");
                        list.borrow_mut().push((revision, dest));
                        finished.set(true);
                    }
                    Err(e) => {
                        tracing::error!(shard, revision, error = %e, "snapshot failed; the log is kept and it is retried later");
                        let _ = std::fs::remove_file(&tmp);
                        retry.set(Instant::now() + SNAPSHOT_RETRY);
                    }
                }
                busy.set(false);
                wake.notify(1);
            });
        }
    }
}

fn log_dir(log: &LogWriter) -> PathBuf {
    log.dir().path.clone()
}

fn last_snapshot_bytes(snapshots: &[(u64, PathBuf)]) -> u64 {
    snapshots
        .last()
        .and_then(|(_, p)| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
}

/// Drops snapshots beyond the kept ones and the log segments only they
/// needed.
async fn trim(log: &mut LogWriter, snapshots: &RefCell<Vec<(u64, PathBuf)>>) {
    let oldest_kept = {
        let mut list = snapshots.borrow_mut();
        while list.len() > SNAPSHOTS_KEPT {
            let (_, path) = list.remove(0);
            let _ = std::fs::remove_file(path);
        }
        if list.len() < SNAPSHOTS_KEPT {
            return;
        }
        list[0].0
    };
    if let Err(e) = log.trim_through(oldest_kept).await {
        tracing::warn!(error = %e, "removing old log segments failed; retried after the next snapshot");
    }
}
