//! An executor's watch hub: merges the event streams of all shards into one
//! revision-ordered ring per resource, which that executor's watchers read
//! as cursors.
//!
//! Each shard sends its events to every hub once (not once per watcher).
//! Streams from different shards interleave arbitrarily, so the hub holds
//! events back until the closed revision passes them; by the sequencer's
//! contract every event at or below the closed revision has already been
//! sent, so releasing in revision order up to it never skips one.

use crate::event::Event;
use crate::index::IndexedRing;
use crate::ring::RingLimits;
use hashbrown::HashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Instant;

struct Pending(Arc<Event>);

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.0.revision == o.0.revision
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.revision.cmp(&o.0.revision)
    }
}

pub struct Hub {
    pending: BinaryHeap<Reverse<Pending>>,
    rings: HashMap<Arc<str>, IndexedRing>,
    limits: RingLimits,
    /// Every event at or below this revision has been released to a ring.
    released: u64,
    /// Rings created later start complete from the hub's start revision.
    start_revision: u64,
    /// Open watch streams (they register and unregister themselves).
    watchers: usize,
}

impl Hub {
    pub fn new(start_revision: u64, limits: RingLimits) -> Self {
        Self {
            pending: BinaryHeap::new(),
            rings: HashMap::new(),
            limits,
            released: start_revision,
            start_revision,
            watchers: 0,
        }
    }

    /// Takes a batch from one shard; nothing is released yet.
    pub fn absorb(&mut self, batch: &[Arc<Event>]) {
        for e in batch {
            self.pending.push(Reverse(Pending(e.clone())));
        }
    }

    /// Releases every pending event at or below `closed` into its ring, in
    /// revision order, and wakes waiting watchers. Returns how many.
    pub fn release(&mut self, closed: u64, now: Instant) -> usize {
        let mut n = 0;
        while let Some(Reverse(Pending(e))) = self.pending.peek() {
            if e.revision > closed {
                break;
            }
            let Reverse(Pending(e)) = self.pending.pop().expect("peeked");
            let (start, limits) = (self.start_revision, self.limits);
            self.rings
                .entry(e.resource.clone())
                .or_insert_with(|| IndexedRing::new(start, limits))
                .push(e, now);
            n += 1;
        }
        if closed > self.released {
            self.released = closed;
        }
        n
    }

    /// Trims rings by age even when no events arrive.
    pub fn trim(&mut self, now: Instant) {
        for r in self.rings.values_mut() {
            r.trim(now);
        }
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The revision up to which this hub's rings are complete.
    pub fn released(&self) -> u64 {
        self.released
    }

    /// The ring of a resource (created empty and complete from the start
    /// revision if it has seen no events yet).
    pub fn ring(&mut self, resource: &Arc<str>) -> &mut IndexedRing {
        let (start, limits) = (self.start_revision, self.limits);
        // Looked up twice per event per watcher: by reference, so the
        // key is copied only when the ring is new.
        self.rings
            .entry_ref(&**resource)
            .or_insert_with(|| IndexedRing::new(start, limits))
    }

    /// Wakes every watcher (shutdown, periodic checks).
    pub fn wake_all(&mut self) {
        for r in self.rings.values_mut() {
            r.wake_all();
        }
    }

    pub fn ring_events(&self) -> usize {
        self.rings.values().map(|r| r.ring().len()).sum()
    }

    pub fn watcher_opened(&mut self) {
        self.watchers += 1;
    }

    pub fn watcher_closed(&mut self) {
        self.watchers = self.watchers.saturating_sub(1);
    }

    pub fn watchers(&self) -> usize {
        self.watchers
    }

    /// Secondary index entries held by this hub.
    pub fn index_entries(&self) -> usize {
        self.rings.values().map(|r| r.index_entries()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::RingRead;

    fn ev(rev: u64, res: &str) -> Arc<Event> {
        crate::event::test_event(rev, res, "o")
    }

    #[test]
    fn releases_in_revision_order_up_to_closed() {
        let mut hub = Hub::new(0, RingLimits::default());
        let r: Arc<str> = Arc::from("/cm");
        hub.absorb(&[ev(2, "/cm"), ev(4, "/cm")]);
        hub.absorb(&[ev(1, "/cm"), ev(3, "/other")]);
        assert_eq!(hub.release(2, Instant::now()), 2);
        assert!(hub.has_pending());
        assert_eq!(hub.release(10, Instant::now()), 2);
        let ring = hub.ring(&r).ring();
        let revs: Vec<u64> = (0..ring.end_seq())
            .filter_map(|s| match ring.read(s) {
                RingRead::Event(e) => Some(e.revision),
                _ => None,
            })
            .collect();
        assert_eq!(revs, vec![1, 2, 4]);
        assert_eq!(hub.released(), 10);
    }
}
