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

/// How coarsely a ring remembers when events arrived: trimming by age
/// needs no finer clock than this, and a timestamp per event would cost
/// more than the event's pointer.
const TIME_MARK_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct EventRing {
    events: VecDeque<Arc<Event>>,
    /// (sequence number, arrival time) of the first event pushed in each
    /// stretch of [`TIME_MARK_EVERY`]: every event from one mark to the
    /// next arrived no earlier than the mark's time.
    marks: VecDeque<(u64, Instant)>,
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
            marks: VecDeque::new(),
            first_seq: 0,
            compacted_through: start_revision,
            limits,
        }
    }

    /// Appends an event; revisions must not go back. Several events may
    /// share one: another store's (etcd's) transaction, or the deletions
    /// a resynced mirror finds, all happen at one revision.
    pub fn push(&mut self, event: Arc<Event>, now: Instant) {
        debug_assert!(
            self.events
                .back()
                .is_none_or(|e| e.revision <= event.revision),
            "ring revisions must not go back"
        );
        let seq = self.end_seq();
        if self
            .marks
            .back()
            .is_none_or(|(_, at)| now.saturating_duration_since(*at) >= TIME_MARK_EVERY)
        {
            self.marks.push_back((seq, now));
        }
        self.events.push_back(event);
        self.trim(now);
    }

    /// Drops events beyond the count limit or older than the window. Ages
    /// are known per stretch: every event of a stretch arrived before its
    /// mark's time plus [`TIME_MARK_EVERY`] (a later one would have started
    /// a new stretch), so a stretch goes once that bound is out of the
    /// window — at most a mark interval late.
    pub fn trim(&mut self, now: Instant) {
        let mut keep_from = self.end_seq() - self.events.len().min(self.limits.max_events) as u64;
        while let Some(&(_, at)) = self.marks.front() {
            if now.saturating_duration_since(at + TIME_MARK_EVERY) <= self.limits.window {
                break;
            }
            self.marks.pop_front();
            let end = self.marks.front().map_or(self.end_seq(), |m| m.0);
            keep_from = keep_from.max(end);
        }
        while self.first_seq < keep_from {
            let ev = self
                .events
                .pop_front()
                .expect("keep_from is within the ring");
            self.compacted_through = ev.revision;
            self.first_seq += 1;
        }
        // A stretch cut by the count limit starts where the ring now does.
        if let Some(first) = self.marks.front_mut() {
            first.0 = first.0.max(self.first_seq);
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
            .map(|e| e.revision)
            .unwrap_or(self.compacted_through)
    }

    /// The cursor position of the first event after `revision`, or
    /// `Err(compacted_through)` when events after it were already trimmed.
    pub fn seq_after(&self, revision: u64) -> Result<u64, u64> {
        if revision < self.compacted_through {
            return Err(self.compacted_through);
        }
        let idx = self.events.partition_point(|e| e.revision <= revision);
        Ok(self.first_seq + idx as u64)
    }

    pub fn read(&self, seq: u64) -> RingRead<'_> {
        if seq < self.first_seq {
            return RingRead::Overwritten;
        }
        match self.events.get((seq - self.first_seq) as usize) {
            Some(e) => RingRead::Event(e),
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
        Ok(self.events.range(start as usize..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(rev: u64) -> Arc<Event> {
        crate::event::test_event(rev, "/x", &format!("o{rev}"))
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
        // Ages are kept per one-second stretch: trimming may be that late.
        r.trim(t0 + Duration::from_secs(6));
        assert_eq!(r.len(), 2);
        r.trim(t0 + Duration::from_secs(7));
        assert_eq!(r.len(), 1);
        assert_eq!(r.compacted_through(), 11);
        let after: Vec<u64> = r.events_after(11).unwrap().map(|e| e.revision).collect();
        assert_eq!(after, vec![12]);
        assert!(r.events_after(10).is_err());
    }

    use proptest::prelude::*;

    proptest! {
        /// Against a model that keeps exact arrival times: no event younger
        /// than the window (within the count limit) is ever dropped, none
        /// older than the window plus a mark interval is kept, and cursors
        /// positioned by revision read exactly the model's later events.
        #[test]
        fn trimming_matches_a_timestamped_model(
            steps in prop::collection::vec((0u64..2500, prop::bool::ANY), 1..200),
            max_events in 1usize..40,
            window_ms in 500u64..5000,
        ) {
            let t0 = Instant::now();
            let window = Duration::from_millis(window_ms);
            let mut r = EventRing::new(0, RingLimits { max_events, window });
            let mut model: VecDeque<(u64, Instant)> = VecDeque::new();
            let (mut now, mut rev) = (t0, 0u64);
            for (advance_ms, push) in steps {
                now += Duration::from_millis(advance_ms);
                if push {
                    rev += 1;
                    r.push(ev(rev), now);
                    model.push_back((rev, now));
                } else {
                    r.trim(now);
                }
                while model.len() > max_events {
                    model.pop_front();
                }
                let kept: Vec<u64> = r.events_after(r.compacted_through()).unwrap().map(|e| e.revision).collect();
                for (mrev, at) in &model {
                    let age = now.saturating_duration_since(*at);
                    if age <= window {
                        prop_assert!(kept.contains(mrev), "rev {} aged {:?} dropped", mrev, age);
                    }
                    if age > window + TIME_MARK_EVERY && !push {
                        prop_assert!(!kept.contains(mrev), "rev {} aged {:?} kept", mrev, age);
                    }
                }
                prop_assert!(kept.len() <= max_events);
                prop_assert!(kept.windows(2).all(|w| w[0] + 1 == w[1]), "contiguous: {:?}", kept);
                if let Some(first) = kept.first() {
                    prop_assert_eq!(r.compacted_through(), first - 1);
                }
            }
        }
    }
}
