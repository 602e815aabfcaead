//! A bounded ring of events, read through cursors.
//!
//! Each event is held once; a reader is an absolute sequence number into the
//! ring. Writers never look at readers: when the ring trims, a reader whose
//! position fell off the front learns it at its next read and must restart
//! (its client re-watches). That keeps per-watcher memory O(1) and writers
//! independent of slow watchers.

use crate::event::Event;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Limits on how much history a ring keeps.
#[derive(Debug, Clone, Copy)]
pub struct RingLimits {
    pub max_events: usize,
    pub window: Duration,
}

impl Default for RingLimits {
    fn default() -> Self {
        Self {
            max_events: 100_000,
            window: Duration::from_secs(300),
        }
    }
}

#[derive(Debug)]
pub struct EventRing {
    events: VecDeque<(Instant, Arc<Event>)>,
    /// Absolute sequence number of `events[0]`.
    first_seq: u64,
    /// Every event with a revision above this is in the ring.
    compacted_through: u64,
    limits: RingLimits,
}

/// What a cursor finds at its position.
pub enum RingRead<'a> {
    Event(&'a Arc<Event>),
    /// Nothing new yet.
    CaughtUp,
    /// The position was trimmed away: the reader fell too far behind.
    Overwritten,
}

impl EventRing {
    /// A ring that starts complete from `start_revision` on.
    pub fn new(start_revision: u64, limits: RingLimits) -> Self {
        Self {
            events: VecDeque::new(),
            first_seq: 0,
            compacted_through: start_revision,
            limits,
        }
    }

    /// Appends an event; revisions must increase.
    pub fn push(&mut self, event: Arc<Event>, now: Instant) {
        debug_assert!(
            self.events
                .back()
                .is_none_or(|(_, e)| e.revision < event.revision),
            "ring revisions must increase"
        );
        self.events.push_back((now, event));
        self.trim(now);
    }

    /// Drops events beyond the count limit or older than the window.
    pub fn trim(&mut self, now: Instant) {
        while let Some((at, ev)) = self.events.front() {
            let too_many = self.events.len() > self.limits.max_events;
            let too_old = now.saturating_duration_since(*at) > self.limits.window;
            if !(too_many || too_old) {
                break;
            }
            self.compacted_through = ev.revision;
            self.events.pop_front();
            self.first_seq += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The sequence number the next pushed event will get.
    pub fn end_seq(&self) -> u64 {
        self.first_seq + self.events.len() as u64
    }

    pub fn compacted_through(&self) -> u64 {
        self.compacted_through
    }

    /// The newest revision in the ring, or the compaction point if empty.
    pub fn last_revision(&self) -> u64 {
        self.events
            .back()
            .map(|(_, e)| e.revision)
            .unwrap_or(self.compacted_through)
    }

    /// The cursor position of the first event after `revision`, or
    /// `Err(compacted_through)` when events after it were already trimmed.
    pub fn seq_after(&self, revision: u64) -> Result<u64, u64> {
        if revision < self.compacted_through {
            return Err(self.compacted_through);
        }
        let idx = self.events.partition_point(|(_, e)| e.revision <= revision);
        Ok(self.first_seq + idx as u64)
    }

    pub fn read(&self, seq: u64) -> RingRead<'_> {
        if seq < self.first_seq {
            return RingRead::Overwritten;
        }
        match self.events.get((seq - self.first_seq) as usize) {
            Some((_, e)) => RingRead::Event(e),
            None => RingRead::CaughtUp,
        }
    }

    /// Events with a revision above `revision`, oldest first, or
    /// `Err(compacted_through)` when some were trimmed.
    pub fn events_after(
        &self,
        revision: u64,
    ) -> Result<impl DoubleEndedIterator<Item = &Arc<Event>>, u64> {
        let start = self.seq_after(revision)? - self.first_seq;
        Ok(self.events.range(start as usize..).map(|(_, e)| e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventType;
    use crate::object::StoredObject;
    use bytes::Bytes;

    fn ev(rev: u64) -> Arc<Event> {
        let obj = Arc::new(StoredObject {
            bytes: Bytes::from_static(b"{}"),
            revision: rev,
            namespace: "".into(),
            name: format!("o{rev}").into(),
            uid: "".into(),
            labels: Box::new([]),
            fields: Box::new([]),
        });
        Arc::new(Event::new(
            rev,
            EventType::Added,
            Arc::from("/x"),
            obj,
            None,
        ))
    }

    #[test]
    fn cursor_reads_in_order_and_detects_overwrite() {
        let now = Instant::now();
        let mut r = EventRing::new(
            0,
            RingLimits {
                max_events: 3,
                window: Duration::from_secs(60),
            },
        );
        let cur = r.seq_after(0).unwrap();
        for rev in 1..=3 {
            r.push(ev(rev), now);
        }
        assert!(matches!(r.read(cur), RingRead::Event(e) if e.revision == 1));
        r.push(ev(4), now);
        assert!(matches!(r.read(cur), RingRead::Overwritten));
        assert_eq!(r.compacted_through(), 1);
        assert_eq!(r.seq_after(0), Err(1));
        let c = r.seq_after(2).unwrap();
        assert!(matches!(r.read(c), RingRead::Event(e) if e.revision == 3));
        assert!(matches!(r.read(r.end_seq()), RingRead::CaughtUp));
    }

    #[test]
    fn window_trims_old_events() {
        let t0 = Instant::now();
        let mut r = EventRing::new(
            10,
            RingLimits {
                max_events: 100,
                window: Duration::from_secs(5),
            },
        );
        r.push(ev(11), t0);
        r.push(ev(12), t0 + Duration::from_secs(3));
        r.trim(t0 + Duration::from_secs(6));
        assert_eq!(r.len(), 1);
        assert_eq!(r.compacted_through(), 11);
        let after: Vec<u64> = r.events_after(11).unwrap().map(|e| e.revision).collect();
        assert_eq!(after, vec![12]);
        assert!(r.events_after(10).is_err());
    }
}
