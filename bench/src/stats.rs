//! Latency and error recording, per operation and per second.
//!
//! One shared recorder behind a mutex: a record is two histogram
//! increments, so even at 100k ops/s on two cores the lock is held for a
//! few milliseconds per second, and nothing needs merging at the end.
//! Only successful (2xx) responses go into latency histograms; errors are
//! counted by HTTP code or by transport failure, so fast 404s cannot make a
//! server look quick.

use crate::client::{ClientError, Response};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Histograms hold microseconds from 1 µs to an hour.
const MAX_US: u64 = 3_600_000_000;

/// How one operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// An HTTP status outside 2xx.
    Status(u16),
    /// No response: "timeout", "connect", "transport", or a workload's own
    /// kind of failure (e.g. "bad-response").
    Failed(&'static str),
}

impl Outcome {
    pub fn of(r: &Result<Response, ClientError>) -> Outcome {
        match r {
            Ok(resp) if resp.ok() => Outcome::Ok,
            Ok(resp) => Outcome::Status(resp.status),
            Err(e) => Outcome::Failed(e.kind()),
        }
    }

    pub fn is_ok(self) -> bool {
        self == Outcome::Ok
    }

    fn key(self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Status(c) => c.to_string(),
            Outcome::Failed(k) => k.into(),
        }
    }
}

fn histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, sigfig).expect("valid histogram bounds")
}

struct Second {
    ok: u64,
    errors: u64,
    hist: Histogram<u64>,
}

struct OpStats {
    hist: Histogram<u64>,
    ok: u64,
    errors: BTreeMap<String, u64>,
    timeline: Vec<Second>,
    window: Option<(Instant, Instant)>,
}

impl OpStats {
    /// One success in second `sec` (its timeline reaches it).
    fn ok_at(&mut self, sec: usize, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_US);
        let bucket = &mut self.timeline[sec];
        self.ok += 1;
        self.hist.saturating_record(us);
        bucket.ok += 1;
        bucket.hist.saturating_record(us);
    }

    fn new() -> Self {
        Self {
            hist: histogram(3),
            ok: 0,
            errors: BTreeMap::new(),
            timeline: Vec::new(),
            window: None,
        }
    }
}

/// The recorder of one run. Clones share it.
#[derive(Clone)]
pub struct Stats {
    start: Instant,
    ops: Arc<Mutex<BTreeMap<&'static str, OpStats>>>,
}

impl Stats {
    pub fn new(start: Instant) -> Self {
        Self {
            start,
            ops: Arc::default(),
        }
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    /// Records one completed operation (now) that took `latency`.
    pub fn record(&self, op: &'static str, latency: Duration, outcome: Outcome) {
        let sec = self.second();
        Self::add(&mut self.ops.lock(), sec, op, latency, outcome);
    }

    /// Records successful operations of one kind that completed about now,
    /// under one lock and one lookup (for hot loops such as watchers).
    pub fn record_ok_many(&self, op: &'static str, latencies: &[Duration]) {
        if latencies.is_empty() {
            return;
        }
        let sec = self.second();
        let mut ops = self.ops.lock();
        let s = Self::op_until(&mut ops, sec, op);
        for latency in latencies {
            s.ok_at(sec, *latency);
        }
    }

    fn second(&self) -> usize {
        Instant::now()
            .saturating_duration_since(self.start)
            .as_secs() as usize
    }

    /// An operation's stats, with its timeline reaching second `sec`.
    fn op_until<'a>(
        ops: &'a mut BTreeMap<&'static str, OpStats>,
        sec: usize,
        op: &'static str,
    ) -> &'a mut OpStats {
        let s = ops.entry(op).or_insert_with(OpStats::new);
        while s.timeline.len() <= sec {
            s.timeline.push(Second {
                ok: 0,
                errors: 0,
                hist: histogram(2),
            });
        }
        s
    }

    fn add(
        ops: &mut BTreeMap<&'static str, OpStats>,
        sec: usize,
        op: &'static str,
        latency: Duration,
        outcome: Outcome,
    ) {
        let s = Self::op_until(ops, sec, op);
        if outcome.is_ok() {
            s.ok_at(sec, latency);
        } else {
            *s.errors.entry(outcome.key()).or_default() += 1;
            s.timeline[sec].errors += 1;
        }
    }

    /// Sets the time span an operation's throughput is computed over (a
    /// phase of a workload); without one, the whole run counts.
    pub fn set_window(&self, op: &'static str, from: Instant, to: Instant) {
        let mut ops = self.ops.lock();
        ops.entry(op).or_insert_with(OpStats::new).window = Some((from, to));
    }

    /// Successful operations so far, all kinds together.
    pub fn ok_count(&self, op: &str) -> u64 {
        self.ops.lock().get(op).map_or(0, |s| s.ok)
    }

    /// Summaries of every operation; `end` closes the run.
    pub fn summarize(&self, end: Instant) -> Vec<OpSummary> {
        let ops = self.ops.lock();
        ops.iter()
            .map(|(name, s)| {
                let (from, to) = s.window.unwrap_or((self.start, end));
                let secs = to.saturating_duration_since(from).as_secs_f64().max(1e-9);
                let errors: u64 = s.errors.values().sum();
                OpSummary {
                    name: name.to_string(),
                    requests: s.ok + errors,
                    ok: s.ok,
                    errors: s.errors.clone(),
                    seconds: secs,
                    throughput_per_s: s.ok as f64 / secs,
                    latency_ms: Percentiles::of(&s.hist),
                    timeline: s
                        .timeline
                        .iter()
                        .enumerate()
                        .map(|(t, b)| Point {
                            t_s: t as u64,
                            ok: b.ok,
                            errors: b.errors,
                            p50_ms: ms(b.hist.value_at_quantile(0.5)),
                            p90_ms: ms(b.hist.value_at_quantile(0.9)),
                            p99_ms: ms(b.hist.value_at_quantile(0.99)),
                            max_ms: ms(b.hist.max()),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Latency percentiles in milliseconds (all zero when nothing succeeded).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// One operation's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpSummary {
    pub name: String,
    /// Completed operations, successful or not.
    pub requests: u64,
    pub ok: u64,
    /// Failed operations by HTTP code or failure kind.
    pub errors: BTreeMap<String, u64>,
    /// The span throughput is computed over.
    pub seconds: f64,
    /// Successful operations per second.
    pub throughput_per_s: f64,
    pub latency_ms: Percentiles,
    /// Per second of the run (by completion time).
    pub timeline: Vec<Point>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    pub t_s: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn records_and_summarizes() {
        let start = Instant::now();
        let st = Stats::new(start);
        for i in 1..=100u64 {
            st.record("get", Duration::from_millis(i), Outcome::Ok);
        }
        st.record("get", Duration::from_millis(1), Outcome::Status(404));
        st.record("get", Duration::from_millis(1), Outcome::Failed("timeout"));
        tokio::time::advance(Duration::from_secs(2)).await;
        st.record("put", Duration::from_millis(3), Outcome::Ok);
        let sum = st.summarize(start + Duration::from_secs(4));
        let get = &sum[0];
        assert_eq!(get.name, "get");
        assert_eq!((get.requests, get.ok), (102, 100));
        assert_eq!(get.errors["404"], 1);
        assert_eq!(get.errors["timeout"], 1);
        assert!((get.throughput_per_s - 25.0).abs() < 1e-9);
        let l = &get.latency_ms;
        assert!(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99);
        assert!(l.p99 <= l.p999 && l.p999 <= l.max);
        assert!((l.p50 - 50.0).abs() < 0.1, "{l:?}");
        assert!((l.max - 100.0).abs() < 0.1, "{l:?}");
        assert_eq!(sum[1].timeline.len(), 3);
        assert_eq!(sum[1].timeline[2].ok, 1);
    }
}
