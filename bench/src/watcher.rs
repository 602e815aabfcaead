//! A watcher that measures write-to-delivery latency.
//!
//! Writers note in an [`AckBook`] when each resourceVersion was sent and
//! acknowledged; a watcher looks up the resourceVersion of every event it
//! receives and records two latencies: from the write's acknowledgement
//! (what a controller reacting to its own write waits; zero when the event
//! beat the acknowledgement, as it often does because servers fan out
//! before they answer) and from the write's send (never negative). Events
//! that arrive before their write is in the book are held back briefly
//! and resolved as later events arrive, or at the end.
//!
//! Like an informer, a watcher whose stream ends early re-watches from the
//! last resourceVersion it saw.

use crate::client::Client;
use crate::objects;
use crate::stats::{Outcome, Stats};
use bytes::BytesMut;
use http_body_util::BodyExt;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// When each written resourceVersion was sent and acknowledged.
#[derive(Default)]
pub struct AckBook {
    acks: RwLock<HashMap<u64, (Instant, Instant)>>,
    max: AtomicU64,
}

impl AckBook {
    pub fn ack(&self, rv: u64, sent: Instant, acked: Instant) {
        self.acks.write().insert(rv, (sent, acked));
        self.max.fetch_max(rv, Ordering::Relaxed);
    }

    /// (sent, acknowledged) of `rv`. Every watcher asks for the same
    /// revisions at about the same time, so each thread remembers its last
    /// answer: with thousands of watchers the shared lock's reader count
    /// (one cache line bounced between threads per event) was a visible
    /// part of the load generator's cost.
    pub fn get(&self, rv: u64) -> Option<(Instant, Instant)> {
        /// (book, revision, its times) last answered on this thread.
        type Memo = Option<(usize, u64, (Instant, Instant))>;
        thread_local! {
            static LAST: std::cell::Cell<Memo> = const { std::cell::Cell::new(None) };
        }
        let me = self as *const Self as usize;
        if let Some((book, r, times)) = LAST.with(|l| l.get()) {
            if book == me && r == rv {
                return Some(times);
            }
        }
        let found = self.acks.read().get(&rv).copied();
        if let Some(times) = found {
            LAST.with(|l| l.set(Some((me, rv, times))));
        }
        found
    }

    /// The highest acknowledged resourceVersion.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }
}

/// Operation names delivery latencies are recorded under.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryOps {
    pub from_ack: &'static str,
    pub from_send: &'static str,
}

/// One watcher's delivery measurements, handed to [`Stats`] in batches
/// (a thousand watchers recording each event under the shared lock would
/// make the load generator the bottleneck).
pub struct DeliveryLog {
    acks: Arc<AckBook>,
    stats: Stats,
    ops: DeliveryOps,
    pending: Vec<(u64, Instant)>,
    /// Latencies from the acknowledgement and from the send, not yet
    /// handed over.
    from_ack: Vec<Duration>,
    from_send: Vec<Duration>,
    batch_since: Option<Instant>,
}

/// Flush a batch at this size or age, whichever comes first.
const BATCH: usize = 128;
const BATCH_AGE: Duration = Duration::from_millis(100);

impl DeliveryLog {
    pub fn new(acks: Arc<AckBook>, stats: Stats, ops: DeliveryOps) -> Self {
        Self {
            acks,
            stats,
            ops,
            pending: Vec::new(),
            from_ack: Vec::with_capacity(BATCH),
            from_send: Vec::with_capacity(BATCH),
            batch_since: None,
        }
    }

    /// The event of write `rv` arrived at `at`.
    pub fn event(&mut self, rv: u64, at: Instant) {
        if !self.pending.is_empty() {
            self.retry();
        }
        if !self.record(rv, at) {
            self.pending.push((rv, at));
        }
        let since = *self.batch_since.get_or_insert(at);
        if self.from_ack.len() >= BATCH || at.saturating_duration_since(since) >= BATCH_AGE {
            self.flush();
        }
    }

    fn record(&mut self, rv: u64, at: Instant) -> bool {
        match self.acks.get(rv) {
            Some((sent, acked)) => {
                self.from_ack.push(at.saturating_duration_since(acked));
                self.from_send.push(at.saturating_duration_since(sent));
                true
            }
            None => false,
        }
    }

    fn retry(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (rv, at) in pending {
            if !self.record(rv, at) {
                self.pending.push((rv, at));
            }
        }
    }

    fn flush(&mut self) {
        self.stats.record_ok_many(self.ops.from_ack, &self.from_ack);
        self.stats
            .record_ok_many(self.ops.from_send, &self.from_send);
        self.from_ack.clear();
        self.from_send.clear();
        self.batch_since = None;
    }

    /// Resolves what is still pending and flushes; events of writes that
    /// were never acknowledged (or not ours) are not measured.
    pub fn finish(mut self) {
        self.retry();
        self.flush();
    }
}

/// Shared among the watchers of a run.
#[derive(Clone)]
pub struct WatchShared {
    pub client: Client,
    pub acks: Arc<AckBook>,
    pub stats: Stats,
    /// Operation names delivery latencies are recorded under.
    pub ops: DeliveryOps,
    /// Set to true to end every watcher.
    pub stop: watch::Receiver<bool>,
    /// Watchers whose first stream opened (or failed to).
    pub established: Arc<AtomicUsize>,
}

/// What one watcher saw.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// ADDED, MODIFIED and DELETED events.
    pub events: u64,
    pub bookmarks: u64,
    pub error_events: u64,
    pub rewatches: u64,
    /// Why it stopped early, if it did.
    pub failure: Option<String>,
}

/// Handle on a running watcher's progress.
#[derive(Clone, Default)]
pub struct Position(Arc<AtomicU64>);

impl Position {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Moves the position forward to `rv` (never back).
    pub fn set(&self, rv: u64) {
        self.0.fetch_max(rv, Ordering::Relaxed);
    }
}

/// Watches `path` (a collection path with its query, without
/// `watch`/`resourceVersion`) from `rv` until told to stop.
pub async fn run(
    shared: WatchShared,
    slot: Option<usize>,
    path: String,
    mut rv: u64,
    position: Position,
) -> Tally {
    let mut tally = Tally::default();
    let mut log = DeliveryLog::new(shared.acks.clone(), shared.stats.clone(), shared.ops);
    let mut stop = shared.stop.clone();
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut first = true;
    'rewatch: loop {
        if *stop.borrow() {
            break;
        }
        let url = format!(
            "{path}{sep}watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3600"
        );
        let opened = Instant::now();
        let (status, mut body) = match shared.client.stream(slot, &url).await {
            Ok((200, body)) => {
                shared
                    .stats
                    .record("watch-open", opened.elapsed(), Outcome::Ok);
                (200, body)
            }
            Ok((code, _)) => {
                shared
                    .stats
                    .record("watch-open", opened.elapsed(), Outcome::Status(code));
                settle(&shared, first);
                tally.failure = Some(format!("watch answered {code}"));
                break;
            }
            Err(e) => {
                shared
                    .stats
                    .record("watch-open", opened.elapsed(), Outcome::Failed(e.kind()));
                settle(&shared, first);
                tally.failure = Some(e.to_string());
                break;
            }
        };
        debug_assert_eq!(status, 200);
        if first {
            settle(&shared, true);
            first = false;
        } else {
            tally.rewatches += 1;
        }
        let mut buf = BytesMut::new();
        let protobuf = shared.client.target().protobuf;
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = stop.changed() => break 'rewatch,
            };
            let data = match frame {
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
                // The stream ended or broke: re-watch from where we are.
                Some(Err(_)) | None => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue 'rewatch;
                }
            };
            let mut seen = Seen {
                rv: &mut rv,
                position: &position,
                tally: &mut tally,
                log: &mut log,
            };
            if protobuf {
                // Length-prefixed frames, completed across chunks.
                buf.extend_from_slice(&data);
                while let Some(len) = crate::protowire::frame_len(&buf) {
                    if buf.len() < 4 + len {
                        break;
                    }
                    let frame = buf.split_to(4 + len);
                    let (kind, r) = crate::protowire::watch_event(&frame[4..])
                        .map_or((None, None), |(k, r)| (Some(k), r));
                    if seen.event(kind, r, &frame, Instant::now()) {
                        break 'rewatch;
                    }
                }
                continue;
            }
            // Whole lines are read where they arrived; only a line split
            // across frames is copied into `buf` to be completed.
            let mut data = data;
            if !buf.is_empty() {
                match memchr::memchr(b'\n', &data) {
                    Some(nl) => {
                        buf.extend_from_slice(&data.split_to(nl + 1));
                    }
                    None => {
                        buf.extend_from_slice(&data);
                        continue;
                    }
                }
            }
            loop {
                let line = if !buf.is_empty() {
                    buf.split().freeze()
                } else if let Some(nl) = memchr::memchr(b'\n', &data) {
                    data.split_to(nl + 1)
                } else {
                    buf.extend_from_slice(&data);
                    break;
                };
                let now = Instant::now();
                let kind = objects::event_type(&line);
                let r = match kind {
                    Some(b"ERROR") | None => None,
                    Some(_) => objects::resource_version(&line),
                };
                if seen.event(kind, r, &line, now) {
                    break 'rewatch;
                }
            }
        }
    }
    log.finish();
    tally
}

/// What a watcher's stream has told it so far.
struct Seen<'a> {
    rv: &'a mut u64,
    position: &'a Position,
    tally: &'a mut Tally,
    log: &'a mut DeliveryLog,
}

impl Seen<'_> {
    /// Takes in one event (its type and resourceVersion, and its bytes for
    /// error reports); true when the watch must stop.
    fn event(&mut self, kind: Option<&[u8]>, r: Option<u64>, bytes: &[u8], now: Instant) -> bool {
        match kind {
            Some(b"ERROR") => {
                self.tally.error_events += 1;
                self.tally.failure = Some(String::from_utf8_lossy(bytes).trim().to_string());
                return true;
            }
            Some(b"BOOKMARK") => self.tally.bookmarks += 1,
            Some(_) => self.tally.events += 1,
            None => {
                if !bytes.iter().all(u8::is_ascii_whitespace) {
                    self.tally.failure = Some("unparseable watch event".into());
                }
                return false;
            }
        }
        if let Some(r) = r {
            *self.rv = (*self.rv).max(r);
            self.position.0.store(*self.rv, Ordering::Relaxed);
            if kind != Some(b"BOOKMARK") {
                self.log.event(r, now);
            }
        }
        false
    }
}

/// Counts a watcher as settled (its first stream opened, or it gave up).
fn settle(shared: &WatchShared, first: bool) {
    if first {
        shared.established.fetch_add(1, Ordering::Relaxed);
    }
}

/// Waits until every position reached `rv` or `timeout` passed; returns
/// how many did not.
pub async fn wait_for(positions: &[Position], rv: u64, timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let behind = positions.iter().filter(|p| p.get() < rv).count();
        if behind == 0 || Instant::now() >= deadline {
            return behind;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until `n` watchers have settled, or `timeout`.
pub async fn wait_established(established: &AtomicUsize, n: usize, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while established.load(Ordering::Relaxed) < n {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}
