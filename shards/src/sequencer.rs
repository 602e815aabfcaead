//! The global revision sequencer and the closed revision.
//!
//! Revisions come from one atomic counter shared by all shards. Each shard
//! also publishes a lower bound of the revision it is applying (0 when
//! idle), stored *before* it draws a revision. The closed revision — the
//! largest R with every revision ≤ R applied and its event handed to the
//! watch hubs — is then the counter's value capped below every published
//! bound. All of it is SeqCst atomics; no lock is taken.
//!
//! A mirrored sequencer ([`Sequencer::mirrored`]) draws nothing: the
//! revisions are another store's (etcd's), handed to every shard in
//! order, and each shard reports the revision it has applied and
//! published up to; the closed revision is the lowest report.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

#[derive(Debug)]
#[repr(align(64))]
struct Slot(AtomicU64);

#[derive(Debug)]
pub struct Sequencer {
    current: AtomicU64,
    /// The highest closed revision ever reported; see [`Self::closed`].
    reported: AtomicU64,
    inflight: Box<[Slot]>,
    /// The slots hold each shard's applied revision (see the module doc).
    mirrored: bool,
}

impl Sequencer {
    /// A sequencer for `shards` shards whose last used revision is `start`.
    pub fn new(shards: usize, start: u64) -> Self {
        Self {
            current: AtomicU64::new(start),
            reported: AtomicU64::new(start),
            inflight: (0..shards).map(|_| Slot(AtomicU64::new(0))).collect(),
            mirrored: false,
        }
    }

    /// A sequencer following another store's revisions from `start`.
    pub fn mirrored(shards: usize, start: u64) -> Self {
        Self {
            current: AtomicU64::new(start),
            reported: AtomicU64::new(start),
            inflight: (0..shards).map(|_| Slot(AtomicU64::new(start))).collect(),
            mirrored: true,
        }
    }

    pub fn is_mirrored(&self) -> bool {
        self.mirrored
    }

    /// Every shard has been handed the changes up to `revision`.
    pub fn dispatched(&self, revision: u64) {
        self.current.fetch_max(revision, SeqCst);
    }

    /// `shard` has applied and published every change up to `revision`.
    pub fn applied(&self, shard: usize, revision: u64) {
        self.inflight[shard].0.fetch_max(revision, SeqCst);
    }

    /// Announces that `shard` is about to draw revisions. Must precede
    /// [`Self::next`]; pairs with [`Self::end`].
    pub fn begin(&self, shard: usize) {
        let lower_bound = self.current.load(SeqCst) + 1;
        self.inflight[shard].0.store(lower_bound, SeqCst);
    }

    /// Draws the next revision.
    pub fn next(&self) -> u64 {
        self.current.fetch_add(1, SeqCst) + 1
    }

    /// `shard` has applied and published everything it drew below
    /// `revision`, which it drew too and has not yet applied (a logged
    /// write still waiting for the disk).
    pub fn hold(&self, shard: usize, revision: u64) {
        self.inflight[shard].0.store(revision, SeqCst);
    }

    /// `shard` has applied and published everything it drew.
    pub fn end(&self, shard: usize) {
        self.inflight[shard].0.store(0, SeqCst);
    }

    /// The last revision handed out (possibly not yet applied).
    pub fn current(&self) -> u64 {
        self.current.load(SeqCst)
    }

    /// The closed revision: nothing above it may be shown to clients.
    ///
    /// A shard's published bound can be stale-low (it read the counter, then
    /// others drew and finished revisions before it stored the bound), which
    /// would make a fresh computation go backwards. Any revision that shard
    /// later draws is above every value computed before, so the maximum of
    /// all computed values is still closed, and it never decreases.
    pub fn closed(&self) -> u64 {
        if self.mirrored {
            return self
                .inflight
                .iter()
                .map(|s| s.0.load(SeqCst))
                .min()
                .unwrap_or(0);
        }
        let mut closed = self.current.load(SeqCst);
        for slot in self.inflight.iter() {
            let lb = slot.0.load(SeqCst);
            if lb != 0 && lb <= closed {
                closed = lb - 1;
            }
        }
        // Readers far outnumber advances: only write (an RMW that would
        // pull the line exclusive on every core) when it actually grows.
        let reported = self.reported.load(SeqCst);
        if closed <= reported {
            return reported;
        }
        self.reported.fetch_max(closed, SeqCst).max(closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_mirror_is_closed_at_its_slowest_shards_report() {
        let s = Sequencer::mirrored(2, 10);
        assert_eq!(s.closed(), 10);
        s.dispatched(12);
        s.applied(1, 12);
        assert_eq!((s.current(), s.closed()), (12, 10));
        s.applied(0, 12);
        assert_eq!(s.closed(), 12);
        s.applied(0, 11);
        assert_eq!(s.closed(), 12, "reports never go back");
    }

    #[test]
    fn closed_waits_for_the_slowest_shard() {
        let s = Sequencer::new(2, 0);
        s.begin(0);
        let a = s.next();
        s.begin(1);
        let b = s.next();
        assert_eq!((a, b), (1, 2));
        assert_eq!(s.closed(), 0);
        s.end(1);
        assert_eq!(s.closed(), 0, "revision 1 is still in flight");
        s.end(0);
        assert_eq!(s.closed(), 2);
    }

    /// Concurrent shards: whenever a reader sees closed = C, every revision
    /// ≤ C must already be marked applied.
    #[test]
    fn closed_never_passes_an_unapplied_revision() {
        const N: u64 = 20_000;
        let s = Arc::new(Sequencer::new(2, 0));
        let applied: Arc<Vec<AtomicU64>> =
            Arc::new((0..=2 * N + 1).map(|_| AtomicU64::new(0)).collect());
        let writers: Vec<_> = (0..2)
            .map(|shard| {
                let (s, applied) = (s.clone(), applied.clone());
                std::thread::spawn(move || {
                    for _ in 0..N {
                        s.begin(shard);
                        let r = s.next();
                        applied[r as usize].store(1, SeqCst);
                        s.end(shard);
                    }
                })
            })
            .collect();
        let reader = {
            let (s, applied) = (s.clone(), applied.clone());
            std::thread::spawn(move || {
                let mut last = 0;
                while last < 2 * N {
                    let c = s.closed();
                    assert!(c >= last, "closed went backwards");
                    for r in last + 1..=c {
                        assert_eq!(
                            applied[r as usize].load(SeqCst),
                            1,
                            "rev {r} visible before applied"
                        );
                    }
                    last = c;
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        assert_eq!(s.closed(), 2 * N);
    }
}
