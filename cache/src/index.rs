//! Per-resource event ring with secondary indexes, as a hub keeps it.
//!
//! Controllers at scale watch narrow slices: each kubelet its node's pods
//! (`spec.nodeName=X`), many clients one namespace or one object. A cursor
//! over the whole ring would make each of them look at every event of the
//! resource. Instead, for a few indexed fields, the ring also keeps, per
//! field value, the sequence numbers of the events that touch that value
//! (before or after the change, so selector transitions are seen), and
//! watchers waiting on a value are woken only by events for it. A watch of
//! one node's pods then costs work proportional to that node's events.

use crate::event::Event;
use crate::filter::Filter;
use crate::object::StoredObject;
use crate::ring::{EventRing, RingLimits, RingRead};
use hashbrown::HashMap;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

/// The fields with an index, most selective first (the order a watcher
/// prefers them in).
pub const INDEXED_FIELDS: [&str; 3] = ["spec.nodeName", "metadata.name", "metadata.namespace"];

/// Fields indexed only for values someone watches. Names are as many as
/// objects, and an always-on name index cost ~400 bytes per object across
/// two executors; a run for a name is built (from the ring) when its first
/// watcher arrives and dropped when its last one leaves.
const ON_DEMAND: [bool; 3] = [false, true, false];

/// One value's run of event positions. Positions are absolute ring
/// sequence numbers; `base` counts entries dropped from the front.
#[derive(Debug, Default)]
struct Run {
    base: u64,
    seqs: VecDeque<u64>,
    waiters: Waiters,
    /// Watchers positioned in this run (kept alive while > 0 for
    /// on-demand fields).
    watchers: usize,
}

/// Where a watcher is: in the whole ring, or in one value's run.
#[derive(Debug)]
pub struct Cursor {
    at: At,
    /// Where this cursor's waker sits in its waiter list, and in which
    /// generation of that list (see [`Waiters`]).
    registered: Cell<Option<(u64, usize)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum At {
    Ring(u64),
    Index {
        field: usize,
        value: Box<str>,
        pos: u64,
    },
}

impl Cursor {
    fn new(at: At) -> Self {
        Self {
            at,
            registered: Cell::new(None),
        }
    }

    /// The indexed field this cursor follows, if any.
    pub fn index_field(&self) -> Option<usize> {
        match self.at {
            At::Index { field, .. } => Some(field),
            At::Ring(_) => None,
        }
    }
}

/// A copy is positioned where the original is, but not registered: it
/// must never take over the original's place among the waiters.
impl Clone for Cursor {
    fn clone(&self) -> Self {
        Self::new(self.at.clone())
    }
}

impl PartialEq for Cursor {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Cursor {}

/// Wakers of the watchers waiting on a ring or a run.
///
/// A watcher polled again before anything woke it (a timer, a spurious
/// poll) must not be listed twice. Looking for it in the list cost a scan
/// of every waiting watcher per poll: quadratic in the watchers per event,
/// a fifth of a fan-out's CPU with only 1,000 of them. Instead each
/// generation of the list (it is emptied whenever it is woken) has a
/// process-wide unique number, and a cursor remembers the generation and
/// slot it registered in: the same generation means it is still listed.
#[derive(Debug)]
struct Waiters {
    list: Vec<Waker>,
    generation: u64,
}

fn next_generation() -> u64 {
    static GENERATIONS: AtomicU64 = AtomicU64::new(0);
    GENERATIONS.fetch_add(1, Ordering::Relaxed)
}

impl Default for Waiters {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            generation: next_generation(),
        }
    }
}

impl Waiters {
    fn register(&mut self, cursor: &Cursor, waker: &Waker) {
        if let Some((generation, slot)) = cursor.registered.get() {
            if generation == self.generation {
                if !self.list[slot].will_wake(waker) {
                    self.list[slot] = waker.clone();
                }
                return;
            }
        }
        cursor
            .registered
            .set(Some((self.generation, self.list.len())));
        self.list.push(waker.clone());
    }

    fn wake_all(&mut self) {
        if self.list.is_empty() {
            return;
        }
        self.generation = next_generation();
        for w in self.list.drain(..) {
            w.wake();
        }
    }

    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What a read finds.
pub enum Read {
    Event(Arc<Event>),
    CaughtUp,
    /// The cursor's position was trimmed away.
    Overwritten,
}

#[derive(Debug)]
pub struct IndexedRing {
    ring: EventRing,
    indexes: [HashMap<Box<str>, Run>; INDEXED_FIELDS.len()],
    waiters: Waiters,
}

fn field_value(o: &StoredObject, field: usize) -> Option<&str> {
    let v = o.field(INDEXED_FIELDS[field])?;
    // Cluster-scoped objects have no namespace to index by.
    (!v.is_empty() || field != 2).then_some(v)
}

impl IndexedRing {
    pub fn new(start_revision: u64, limits: RingLimits) -> Self {
        Self {
            ring: EventRing::new(start_revision, limits),
            indexes: Default::default(),
            waiters: Waiters::default(),
        }
    }

    pub fn ring(&self) -> &EventRing {
        &self.ring
    }

    /// Appends an event, indexes it, and wakes the watchers it concerns.
    pub fn push(&mut self, event: Arc<Event>, now: Instant) {
        let seq = self.ring.end_seq();
        for (field, index) in self.indexes.iter_mut().enumerate() {
            let new = field_value(&event.object, field);
            let old = event.prev.as_deref().and_then(|p| field_value(p, field));
            for value in [new, old.filter(|o| Some(*o) != new)].into_iter().flatten() {
                let run = if ON_DEMAND[field] {
                    match index.get_mut(value) {
                        Some(run) => run,
                        None => continue,
                    }
                } else {
                    index.entry(value.into()).or_default()
                };
                run.seqs.push_back(seq);
                run.waiters.wake_all();
            }
        }
        self.waiters.wake_all();
        self.ring.push(event, now);
    }

    /// Trims the ring by age and drops index entries that fell off it.
    pub fn trim(&mut self, now: Instant) {
        self.ring.trim(now);
        let first = self.ring.end_seq() - self.ring.len() as u64;
        for index in &mut self.indexes {
            index.retain(|_, run| {
                while run.seqs.front().is_some_and(|s| *s < first) {
                    run.seqs.pop_front();
                    run.base += 1;
                }
                !run.seqs.is_empty() || !run.waiters.is_empty() || run.watchers > 0
            });
        }
    }

    /// The best index for a filter: an exact field selector on an indexed
    /// field, else the watch's namespace.
    pub fn choose_index(filter: &Filter) -> Option<(usize, &str)> {
        for (i, field) in INDEXED_FIELDS.iter().enumerate() {
            if let Some(v) = filter.fields.exact_match(field) {
                return Some((i, v));
            }
            if i == 2 {
                if let Some(ns) = filter.namespace.as_deref() {
                    return Some((i, ns));
                }
            }
        }
        None
    }

    /// A cursor positioned at the first event after `revision`, or the
    /// compaction point when history no longer reaches it.
    pub fn cursor_after(&mut self, filter: &Filter, revision: u64) -> Result<Cursor, u64> {
        let ring_pos = self.ring.seq_after(revision)?;
        let Some((field, value)) = Self::choose_index(filter) else {
            return Ok(Cursor::new(At::Ring(ring_pos)));
        };
        if ON_DEMAND[field] && !self.indexes[field].contains_key(value) {
            let run = self.backfill(field, value);
            self.indexes[field].insert(value.into(), run);
        }
        let run = self.indexes[field].entry(value.into()).or_default();
        run.watchers += 1;
        let idx = run.seqs.partition_point(|s| *s < ring_pos);
        Ok(Cursor::new(At::Index {
            field,
            value: value.into(),
            pos: run.base + idx as u64,
        }))
    }

    /// A run for an on-demand value, built from the events still in the
    /// ring (one scan, when the value's first watcher arrives).
    fn backfill(&self, field: usize, value: &str) -> Run {
        let first = self.ring.end_seq() - self.ring.len() as u64;
        let mut run = Run {
            base: 0,
            ..Run::default()
        };
        for seq in first..self.ring.end_seq() {
            if let RingRead::Event(e) = self.ring.read(seq) {
                let touches = field_value(&e.object, field) == Some(value)
                    || e.prev.as_deref().and_then(|p| field_value(p, field)) == Some(value);
                if touches {
                    run.seqs.push_back(seq);
                }
            }
        }
        run
    }

    /// A watcher leaves: on-demand runs nobody watches are dropped.
    pub fn release(&mut self, cursor: &Cursor) {
        if let At::Index { field, value, .. } = &cursor.at {
            let index = &mut self.indexes[*field];
            if let Some(run) = index.get_mut(value) {
                run.watchers = run.watchers.saturating_sub(1);
                if ON_DEMAND[*field] && run.watchers == 0 {
                    index.remove(value);
                }
            }
        }
    }

    /// The event at the cursor, advancing it.
    pub fn read(&self, cursor: &mut Cursor) -> Read {
        match &mut cursor.at {
            At::Ring(seq) => match self.ring.read(*seq) {
                RingRead::Event(e) => {
                    *seq += 1;
                    Read::Event(e.clone())
                }
                RingRead::CaughtUp => Read::CaughtUp,
                RingRead::Overwritten => Read::Overwritten,
            },
            At::Index { field, value, pos } => {
                let Some(run) = self.indexes[*field].get(value) else {
                    return Read::CaughtUp;
                };
                if *pos < run.base {
                    return Read::Overwritten;
                }
                let Some(seq) = run.seqs.get((*pos - run.base) as usize) else {
                    return Read::CaughtUp;
                };
                match self.ring.read(*seq) {
                    RingRead::Event(e) => {
                        *pos += 1;
                        Read::Event(e.clone())
                    }
                    RingRead::Overwritten => Read::Overwritten,
                    RingRead::CaughtUp => Read::CaughtUp,
                }
            }
        }
    }

    /// Registers a watcher to be woken by the next event that can concern
    /// its cursor.
    pub fn wait(&mut self, cursor: &Cursor, waker: &Waker) {
        let waiters = match &cursor.at {
            At::Ring(_) => &mut self.waiters,
            At::Index { field, value, .. } => {
                // The run outlives its cursors (they count as its
                // watchers), so the value is copied only if it was not.
                &mut self.indexes[*field]
                    .entry_ref(&**value)
                    .or_default()
                    .waiters
            }
        };
        waiters.register(cursor, waker);
    }

    /// Wakes every watcher (shutdown, periodic checks).
    pub fn wake_all(&mut self) {
        self.waiters.wake_all();
        for index in &mut self.indexes {
            for run in index.values_mut() {
                run.waiters.wake_all();
            }
        }
    }

    /// Index entries held (memory reporting).
    pub fn index_entries(&self) -> usize {
        self.indexes
            .iter()
            .flat_map(|i| i.values())
            .map(|r| r.seqs.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventType;
    use crate::object::ObjectMeta;
    use kubeshard_core::selector::fields::FieldSelector;

    fn pod(rev: u64, name: &str, node: &str) -> Arc<StoredObject> {
        Arc::new(StoredObject::from_json(
            b"{}",
            EventType::Added,
            ObjectMeta {
                revision: rev,
                namespace: "ns".into(),
                name: name.into(),
                uid: "".into(),
                labels: Default::default(),
                fields: [("spec.nodeName", node)].into_iter().collect(),
                lifecycle: None,
            },
        ))
    }

    fn ev(rev: u64, obj: Arc<StoredObject>, prev: Option<Arc<StoredObject>>) -> Arc<Event> {
        let kind = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        Arc::new(Event::new(rev, kind, Arc::from("/pods"), obj, prev))
    }

    fn node_filter(node: &str) -> Filter {
        Filter {
            fields: FieldSelector::parse(&format!("spec.nodeName={node}")).unwrap(),
            ..Filter::default()
        }
    }

    fn drain(r: &IndexedRing, c: &mut Cursor) -> Vec<u64> {
        let mut out = Vec::new();
        while let Read::Event(e) = r.read(c) {
            out.push(e.revision);
        }
        out
    }

    #[test]
    fn node_cursor_sees_only_its_node_including_moves() {
        let now = Instant::now();
        let mut r = IndexedRing::new(0, RingLimits::default());
        let mut c = r.cursor_after(&node_filter("n1"), 0).unwrap();
        assert_eq!(c.index_field(), Some(0));
        let a1 = pod(1, "a", "n1");
        r.push(ev(1, a1.clone(), None), now);
        r.push(ev(2, pod(2, "b", "n2"), None), now);
        let a3 = pod(3, "a", "n2");
        r.push(ev(3, a3, Some(a1)), now); // moves off n1: n1's watcher must see it
        r.push(ev(4, pod(4, "c", "n2"), None), now);
        assert_eq!(drain(&r, &mut c), vec![1, 3]);
        let mut all = r.cursor_after(&Filter::default(), 0).unwrap();
        assert_eq!(drain(&r, &mut all), vec![1, 2, 3, 4]);
        let mut late = r.cursor_after(&node_filter("n2"), 2).unwrap();
        assert_eq!(drain(&r, &mut late), vec![3, 4]);
    }

    #[test]
    fn name_runs_exist_only_while_watched_and_backfill_history() {
        let now = Instant::now();
        let mut r = IndexedRing::new(0, RingLimits::default());
        r.push(ev(1, pod(1, "a", "n1"), None), now);
        r.push(ev(2, pod(2, "b", "n1"), None), now);
        assert_eq!(
            r.index_entries(),
            4,
            "node and namespace runs only: no name runs without watchers"
        );
        let by_name = Filter {
            fields: FieldSelector::parse("metadata.name=a").unwrap(),
            ..Filter::default()
        };
        let mut c = r.cursor_after(&by_name, 0).unwrap();
        r.push(ev(3, pod(3, "a", "n2"), Some(pod(1, "a", "n1"))), now);
        r.push(ev(4, pod(4, "c", "n2"), None), now);
        assert_eq!(
            drain(&r, &mut c),
            vec![1, 3],
            "history backfilled, new events indexed"
        );
        r.release(&c);
        r.push(ev(5, pod(5, "a", "n2"), Some(pod(3, "a", "n2"))), now);
        let mut again = r.cursor_after(&by_name, 3).unwrap();
        assert_eq!(drain(&r, &mut again), vec![5]);
    }

    #[test]
    fn index_cursor_detects_trimming() {
        let now = Instant::now();
        let limits = RingLimits {
            max_events: 2,
            window: std::time::Duration::from_secs(60),
        };
        let mut r = IndexedRing::new(0, limits);
        let mut c = r.cursor_after(&node_filter("n1"), 0).unwrap();
        for rev in 1..=4 {
            r.push(ev(rev, pod(rev, &format!("p{rev}"), "n1"), None), now);
        }
        r.trim(now);
        assert!(matches!(r.read(&mut c), Read::Overwritten));
        assert_eq!(r.cursor_after(&node_filter("n1"), 1), Err(2));
        let mut fresh = r.cursor_after(&node_filter("n1"), 2).unwrap();
        assert_eq!(drain(&r, &mut fresh), vec![3, 4]);
    }

    #[test]
    fn namespace_index_for_namespaced_watches() {
        let f = Filter {
            namespace: Some("ns".into()),
            ..Filter::default()
        };
        assert_eq!(IndexedRing::choose_index(&f), Some((2, "ns")));
        assert_eq!(IndexedRing::choose_index(&Filter::default()), None);
        let by_name = Filter {
            namespace: Some("ns".into()),
            fields: FieldSelector::parse("metadata.name=x").unwrap(),
            ..Filter::default()
        };
        assert_eq!(IndexedRing::choose_index(&by_name), Some((1, "x")));
    }

    /// A waker that counts its wake-ups.
    fn counting_waker() -> (Waker, Arc<std::sync::atomic::AtomicUsize>) {
        struct Count(Arc<std::sync::atomic::AtomicUsize>);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        (Waker::from(Arc::new(Count(n.clone()))), n)
    }

    #[test]
    fn a_cursor_waits_once_however_often_it_is_polled() {
        let now = Instant::now();
        let mut r = IndexedRing::new(0, RingLimits::default());
        for (round, filter) in [Filter::default(), node_filter("n1")].iter().enumerate() {
            let rev = 2 * round as u64;
            let c = r.cursor_after(filter, rev).unwrap();
            let other = r.cursor_after(filter, rev).unwrap();
            let (w, woken) = counting_waker();
            let (w2, woken2) = counting_waker();
            for _ in 0..5 {
                r.wait(&c, &w);
            }
            r.wait(&other, &w2);
            // A copy of a registered cursor is not registered: it must not
            // take the original's place.
            r.wait(&c.clone(), &w2);
            assert_eq!(
                r.waiters.list.len()
                    + r.indexes[0]
                        .values()
                        .map(|x| x.waiters.list.len())
                        .sum::<usize>(),
                3
            );
            r.push(ev(rev + 1, pod(rev + 1, "a", "n1"), None), now);
            assert_eq!(woken.load(Ordering::Relaxed), 1);
            assert_eq!(woken2.load(Ordering::Relaxed), 2);
            // After the wake-up the cursor registers anew, and a new waker
            // for it replaces the old one in place.
            r.wait(&c, &w);
            let (w3, woken3) = counting_waker();
            r.wait(&c, &w3);
            r.push(ev(rev + 2, pod(rev + 2, "b", "n1"), None), now);
            assert_eq!(woken.load(Ordering::Relaxed), 1);
            assert_eq!(woken3.load(Ordering::Relaxed), 1);
            r.release(&c);
            r.release(&other);
        }
    }
}
