//! The watch half of the storage seam: a backend hands every write to
//! each executor's watch hub as events, and says up to which revision
//! nothing more will come (its progress signal). The hub releases events
//! to watchers only up to that revision, so each watcher sees one total
//! order whatever order the parts of a backend deliver in — the engine's
//! shards, or the etcd watch the mirror hands to every shard.

use crate::store::EventBatch;
use futures_lite::future;
use kubeshard_cache::Hub;
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// One executor's feed from a backend (see [`super::Storage::watch_feed`]).
#[allow(async_fn_in_trait)]
pub trait WatchFeed {
    /// The next batch of events; None once the backend has stopped for
    /// good. Batches may arrive out of revision order across parts.
    async fn recv(&mut self) -> Option<EventBatch>;

    /// A batch that is already waiting, if any.
    fn try_recv(&mut self) -> Option<EventBatch>;

    /// Every event at or below this revision has been handed to this feed
    /// (it is waiting in [`Self::recv`] if not yet taken). Only grows.
    fn progress(&self) -> u64;
}

/// Where a feed reads its progress from.
pub trait Progress {
    fn progress(&self) -> u64;
}

/// A feed whose batches come over a channel (one per executor) and whose
/// progress is read from `P`: the engine's (shards publish into it, the
/// closed revision is progress) and the reference map's.
pub struct ChannelFeed<P> {
    batches: async_channel::Receiver<EventBatch>,
    progress: P,
}

impl<P> ChannelFeed<P> {
    pub fn new(batches: async_channel::Receiver<EventBatch>, progress: P) -> Self {
        Self { batches, progress }
    }
}

impl<P: Progress> WatchFeed for ChannelFeed<P> {
    async fn recv(&mut self) -> Option<EventBatch> {
        self.batches.recv().await.ok()
    }

    fn try_recv(&mut self) -> Option<EventBatch> {
        self.batches.try_recv().ok()
    }

    fn progress(&self) -> u64 {
        self.progress.progress()
    }
}

/// Takes everything the feed holds into `hub` and releases it up to the
/// feed's progress; answers the progress it released to.
///
/// Progress is read *before* draining: every event at or below it is
/// already in the feed, so the drain takes it. Read after, progress could
/// cover an event handed over in between, and releasing past it would put
/// it behind later revisions.
pub fn pump<F: WatchFeed>(
    hub: &RefCell<Hub>,
    feed: &mut F,
    first: Option<EventBatch>,
    now: Instant,
) -> u64 {
    let progress = feed.progress();
    let mut h = hub.borrow_mut();
    if let Some(batch) = first {
        h.absorb(&batch);
    }
    while let Some(batch) = feed.try_recv() {
        h.absorb(&batch);
    }
    h.release(progress, now);
    progress
}

/// What [`drive_hub`] tells its owner.
pub trait HubDriver {
    /// The hub has released events up to `progress` (the feed may have
    /// progressed further since; `current` is its value now).
    fn advanced(&self, current: u64, now: Instant);
    /// The backend stopped: nothing will be released again.
    fn ended(&self);
    /// Whether the server is shutting down (watchers are woken to end).
    fn shutting_down(&self) -> bool;
}

/// Feeds one executor's hub from a backend for as long as the backend
/// runs: events are released as the progress signal passes them, and
/// history older than the hub's window is trimmed once a second.
pub async fn drive_hub<F: WatchFeed, D: HubDriver>(hub: &RefCell<Hub>, mut feed: F, driver: D) {
    let mut last_trim = Instant::now();
    loop {
        // While events wait for a slower part, re-check soon; otherwise
        // sleep until a batch arrives (or trim old history once a second).
        let recheck = if hub.borrow().has_pending() {
            Duration::from_micros(200)
        } else {
            Duration::from_secs(1)
        };
        let got = future::or(async { Some(feed.recv().await) }, async {
            glommio::timer::sleep(recheck).await;
            None
        })
        .await;
        if driver.shutting_down() {
            hub.borrow_mut().wake_all();
        }
        let first = match got {
            Some(None) => {
                hub.borrow_mut().wake_all();
                driver.ended();
                return;
            }
            Some(batch) => batch,
            None => None,
        };
        let now = Instant::now();
        pump(hub, &mut feed, first, now);
        // Writers waiting to answer read progress afresh: it only grows,
        // and may have grown since the pump read it.
        driver.advanced(feed.progress(), now);
        if now.duration_since(last_trim) > Duration::from_secs(1) {
            hub.borrow_mut().trim(now);
            last_trim = now;
        }
    }
}
