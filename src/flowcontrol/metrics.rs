//! kube's `apiserver_flowcontrol_*` series. Each executor counts into its
//! own tally (a lock only a scrape contends for); a scrape sums them.

use super::queueset::Reason;
use crate::request::metrics::{escape, family, histogram, Histogram};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

const WAIT_BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

const REASONS: [Reason; 3] = [Reason::ConcurrencyLimit, Reason::QueueFull, Reason::TimeOut];

/// One (priority level, flow schema) pair's series on one executor.
#[derive(Clone, Default)]
struct Pair {
    dispatched: u64,
    rejected: [u64; 3],
    executing: i64,
    executing_seats: i64,
    inqueue: i64,
    /// Wait durations of requests that went on to execute, and of those
    /// that did not.
    waited: Histogram<13>,
    refused: Histogram<13>,
}

impl Pair {
    fn add(&mut self, o: &Pair) {
        self.dispatched += o.dispatched;
        for (a, b) in self.rejected.iter_mut().zip(o.rejected) {
            *a += b;
        }
        self.executing += o.executing;
        self.executing_seats += o.executing_seats;
        self.inqueue += o.inqueue;
        self.waited.add(&o.waited);
        self.refused.add(&o.refused);
    }
}

/// A (level, schema) pair's series in its executor's tally: found once
/// when the configuration is compiled, then recorded into by index.
#[derive(Clone, Copy, Debug)]
pub struct Slot(usize);

/// A pair's label values: (priority level, flow schema).
type Names = (Arc<str>, Arc<str>);

/// One executor's flow-control counts.
#[derive(Default)]
pub struct Tally {
    pairs: Vec<(Names, Pair)>,
    index: HashMap<Names, usize>,
    /// Per level: (server nominal seats, this executor's current limit).
    pub levels: HashMap<Arc<str>, (usize, usize)>,
    /// Requests executing: read-only, mutating (kube's in-flight gauge).
    inflight: [i64; 2],
}

impl Tally {
    /// The pair's slot (kept for good: a pair's counters outlive changes
    /// of the configuration, as kube's series do).
    pub fn slot(&mut self, level: &Arc<str>, schema: &Arc<str>) -> Slot {
        let key = (level.clone(), schema.clone());
        let next = self.pairs.len();
        let i = *self.index.entry(key.clone()).or_insert(next);
        if i == next {
            self.pairs.push((key, Pair::default()));
        }
        Slot(i)
    }

    fn pair(&mut self, slot: Slot) -> &mut Pair {
        &mut self.pairs[slot.0].1
    }

    pub fn enqueued(&mut self, slot: Slot) {
        self.pair(slot).inqueue += 1;
    }

    pub fn dequeued(&mut self, slot: Slot) {
        self.pair(slot).inqueue -= 1;
    }

    pub fn dispatched(&mut self, slot: Slot, seats: usize, waited: Duration, mutating: bool) {
        self.inflight[usize::from(mutating)] += 1;
        let p = self.pair(slot);
        p.dispatched += 1;
        p.executing += 1;
        p.executing_seats += seats as i64;
        p.waited.observe(&WAIT_BUCKETS, waited.as_secs_f64());
    }

    pub fn finished(&mut self, slot: Slot, seats: usize, mutating: bool) {
        self.inflight[usize::from(mutating)] -= 1;
        let p = self.pair(slot);
        p.executing -= 1;
        p.executing_seats -= seats as i64;
    }

    pub fn rejected(&mut self, slot: Slot, reason: Reason, waited: Duration) {
        let p = self.pair(slot);
        let i = REASONS.iter().position(|r| *r == reason).unwrap_or(0);
        p.rejected[i] += 1;
        p.refused.observe(&WAIT_BUCKETS, waited.as_secs_f64());
    }
}

/// A gauge or counter family: name, help, and how to read its value.
type Family<T, V> = (&'static str, &'static str, fn(&T) -> V);

static EXECUTORS: LazyLock<Mutex<Vec<Arc<Mutex<Tally>>>>> = LazyLock::new(Mutex::default);

/// A new executor's tally, registered for scrapes.
pub fn register() -> Arc<Mutex<Tally>> {
    let t = Arc::new(Mutex::new(Tally::default()));
    EXECUTORS.lock().push(t.clone());
    t
}

fn labels(level: &str, schema: &str) -> String {
    format!(
        "flow_schema=\"{}\",priority_level=\"{}\"",
        escape(schema),
        escape(level)
    )
}

/// The series, summed over the executors; empty when APF is off.
pub fn render() -> String {
    let mut pairs: BTreeMap<(String, String), Pair> = BTreeMap::new();
    let mut levels: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let executors = EXECUTORS.lock();
    if executors.is_empty() {
        return String::new();
    }
    let mut inflight = [0i64; 2];
    for e in executors.iter() {
        let t = e.lock();
        inflight[0] += t.inflight[0];
        inflight[1] += t.inflight[1];
        for ((l, s), p) in &t.pairs {
            pairs
                .entry((l.to_string(), s.to_string()))
                .or_default()
                .add(p);
        }
        for (l, (nominal, current)) in &t.levels {
            let e = levels.entry(l.to_string()).or_default();
            e.0 = *nominal;
            e.1 += current;
        }
    }
    drop(executors);
    let mut out = crate::security::maxinflight::gauge(inflight[0], inflight[1]);
    let families: [Family<Pair, i64>; 4] = [
        ("apiserver_flowcontrol_dispatched_requests_total", "[BETA] Number of requests executed by API Priority and Fairness subsystem", |p| p.dispatched as i64),
        ("apiserver_flowcontrol_current_executing_requests", "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem", |p| p.executing),
        ("apiserver_flowcontrol_current_executing_seats", "[BETA] Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem", |p| p.executing_seats),
        ("apiserver_flowcontrol_current_inqueue_requests", "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem", |p| p.inqueue),
    ];
    for (name, help, value) in families {
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        family(&mut out, name.trim_end_matches("_total"), kind, help);
        for ((l, s), p) in &pairs {
            let _ = writeln!(out, "{name}{{{}}} {}", labels(l, s), value(p));
        }
    }
    family(
        &mut out,
        "apiserver_flowcontrol_rejected_requests",
        "counter",
        "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
    );
    for ((l, s), p) in &pairs {
        for (reason, n) in REASONS.iter().zip(p.rejected) {
            if n > 0 {
                let _ = writeln!(
                    out,
                    "apiserver_flowcontrol_rejected_requests_total{{{},reason=\"{}\"}} {n}",
                    labels(l, s),
                    reason.label()
                );
            }
        }
    }
    family(
        &mut out,
        "apiserver_flowcontrol_request_wait_duration_seconds",
        "histogram",
        "[BETA] Length of time a request spent waiting in its queue",
    );
    for ((l, s), p) in &pairs {
        for (execute, h) in [("false", &p.refused), ("true", &p.waited)] {
            if h.count > 0 {
                histogram(
                    &mut out,
                    "apiserver_flowcontrol_request_wait_duration_seconds",
                    &format!("execute=\"{execute}\",{}", labels(l, s)),
                    &WAIT_BUCKETS,
                    h,
                );
            }
        }
    }
    let limits: [Family<(usize, usize), usize>; 2] = [
        (
            "apiserver_flowcontrol_nominal_limit_seats",
            "[BETA] Nominal number of execution seats configured for each priority level",
            |v| v.0,
        ),
        (
            "apiserver_flowcontrol_current_limit_seats",
            "[ALPHA] current derived number of execution seats available to each priority level",
            |v| v.1,
        ),
    ];
    for (name, help, value) in limits {
        family(&mut out, name, "gauge", help);
        for (l, v) in &levels {
            let _ = writeln!(
                out,
                "{name}{{priority_level=\"{}\"}} {}",
                escape(l),
                value(v)
            );
        }
    }
    out
}
