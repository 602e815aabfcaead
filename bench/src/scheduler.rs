//! Closed-loop and open-loop drivers.
//!
//! Closed loop: `workers` tasks each send the next operation as soon as the
//! previous one completes; latency runs from the actual send.
//!
//! Open loop at rate R: operation `i` is *intended* to start at
//! `start + i/R`, whatever happened before. A worker takes the next ticket,
//! waits for its intended time, sends it, and latency is measured from the
//! intended time. When the server stalls, every worker is stuck, tickets
//! pile up, and once the server answers again they go out late and carry
//! that delay in their latency: the stall shows up as latency, not as a
//! smaller request count ("coordinated omission" is avoided).
//!
//! Every run is bounded: by a count, by a duration, or both; operations
//! still in flight `grace` after the scheduled end are cut off and counted
//! as timeouts.

use crate::progress::Progress;
use crate::stats::{Outcome, Stats};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// How much load, for how long.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The operation name the whole ticket is recorded under.
    pub name: &'static str,
    /// Concurrent workers (operations in flight at most).
    pub workers: usize,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    /// Open loop at this many operations per second; None: closed loop.
    pub rate: Option<f64>,
    /// How long after the scheduled end in-flight operations may finish.
    pub grace: Duration,
}

impl Plan {
    /// When the last ticket may be issued, if the plan says.
    fn scheduled_end(&self, start: Instant) -> Option<Instant> {
        let by_duration = self.duration.map(|d| start + d);
        let by_count = match (self.rate, self.count) {
            (Some(r), Some(c)) if r > 0.0 => Some(start + Duration::from_secs_f64(c as f64 / r)),
            _ => None,
        };
        match (by_duration, by_count) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// One operation to perform.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    /// 0, 1, 2, … in intended order.
    pub seq: u64,
    /// Which worker runs it (stable per worker: use it to pick a
    /// connection or a disjoint set of objects).
    pub worker: usize,
    /// When it was meant to start (open loop) or started (closed loop).
    pub intended: Instant,
}

/// A sub-step of an operation, recorded under its own name (e.g. the GET
/// and the PUT of a read-modify-write).
#[derive(Debug, Clone)]
pub struct Step {
    pub op: &'static str,
    pub latency: Duration,
    pub outcome: Outcome,
}

/// The result of one ticket.
#[derive(Debug, Clone)]
pub struct Done {
    pub outcome: Outcome,
    pub steps: Vec<Step>,
}

impl From<Outcome> for Done {
    fn from(outcome: Outcome) -> Self {
        Done {
            outcome,
            steps: Vec::new(),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    pub issued: u64,
    pub started: Instant,
    pub ended: Instant,
}

/// Runs `op` for every ticket of `plan`, recording into `stats`.
pub async fn run<F, Fut>(plan: &Plan, stats: &Stats, progress: &Progress, op: F) -> Finished
where
    F: Fn(Ticket) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Done> + Send + 'static,
{
    assert!(
        plan.count.is_some() || plan.duration.is_some(),
        "a run needs a count or a duration"
    );
    let start = Instant::now();
    let sched_end = plan.scheduled_end(start);
    let hard_stop = sched_end.map(|e| e + plan.grace);
    let next = Arc::new(AtomicU64::new(0));
    let issued = Arc::new(AtomicU64::new(0));
    let op = Arc::new(op);
    let mut tasks = Vec::with_capacity(plan.workers);
    for worker in 0..plan.workers.max(1) {
        let (next, issued, op) = (next.clone(), issued.clone(), op.clone());
        let (stats, progress) = (stats.clone(), progress.clone());
        let (name, count, rate) = (plan.name, plan.count, plan.rate);
        tasks.push(tokio::spawn(async move {
            // Names of the sub-steps seen, to give them the run's window.
            let mut step_ops: Vec<&'static str> = Vec::new();
            loop {
                let seq = next.fetch_add(1, Ordering::Relaxed);
                if count.is_some_and(|c| seq >= c) {
                    break;
                }
                let intended = match rate {
                    Some(r) => {
                        let t = start + Duration::from_secs_f64(seq as f64 / r);
                        if sched_end.is_some_and(|e| t >= e) {
                            break;
                        }
                        sleep_until(t).await;
                        t
                    }
                    None => {
                        let now = Instant::now();
                        if sched_end.is_some_and(|e| now >= e) {
                            break;
                        }
                        now
                    }
                };
                if hard_stop.is_some_and(|h| Instant::now() >= h) {
                    break;
                }
                issued.fetch_add(1, Ordering::Relaxed);
                let fut = op(Ticket {
                    seq,
                    worker,
                    intended,
                });
                let done = match hard_stop {
                    Some(h) => tokio::select! {
                        d = fut => d,
                        _ = sleep_until(h) => Done::from(Outcome::Failed("timeout")),
                    },
                    None => fut.await,
                };
                stats.record(name, intended.elapsed(), done.outcome);
                for s in done.steps {
                    if !step_ops.contains(&s.op) {
                        step_ops.push(s.op);
                    }
                    stats.record(s.op, s.latency, s.outcome);
                }
                progress.inc();
            }
            step_ops
        }));
    }
    let ticker = {
        let progress = progress.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                progress.tick(start.elapsed());
            }
        })
    };
    let mut step_ops: Vec<&'static str> = Vec::new();
    for t in tasks {
        step_ops.extend(t.await.expect("worker panicked"));
    }
    ticker.abort();
    let ended = Instant::now();
    stats.set_window(plan.name, start, ended);
    step_ops.sort_unstable();
    step_ops.dedup();
    for op in step_ops {
        stats.set_window(op, start, ended);
    }
    Finished {
        issued: issued.load(Ordering::Relaxed),
        started: start,
        ended,
    }
}

/// Times an async step for [`Done::steps`].
pub async fn timed<T>(fut: impl Future<Output = T>) -> (T, Duration) {
    let t0 = Instant::now();
    let v = fut.await;
    (v, t0.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    /// A fake server: answers in 1 ms, except that from `stall_at` on it
    /// stops answering for `stall` (every request in flight or arriving
    /// then completes only when the stall ends).
    #[derive(Clone)]
    struct FakeServer {
        stall: Arc<Mutex<Option<(Instant, Instant)>>>,
    }

    impl FakeServer {
        fn new(stall_at: Instant, stall: Duration) -> Self {
            Self {
                stall: Arc::new(Mutex::new(Some((stall_at, stall_at + stall)))),
            }
        }

        async fn call(&self) -> Outcome {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let window = *self.stall.lock();
            if let Some((from, to)) = window {
                let now = Instant::now();
                if now >= from && now < to {
                    sleep_until(to).await;
                }
            }
            Outcome::Ok
        }
    }

    fn plan(rate: Option<f64>) -> Plan {
        Plan {
            name: "op",
            workers: 4,
            count: None,
            duration: Some(Duration::from_secs(2)),
            rate,
            grace: Duration::from_secs(30),
        }
    }

    async fn drive(rate: Option<f64>, stall: Duration) -> (u64, crate::stats::OpSummary) {
        let start = Instant::now();
        let server = FakeServer::new(start + Duration::from_millis(500), stall);
        let stats = Stats::new(start);
        let f = run(&plan(rate), &stats, &Progress::hidden(), move |_t| {
            let s = server.clone();
            async move { Done::from(s.call().await) }
        })
        .await;
        let sum = stats.summarize(f.ended).remove(0);
        (f.issued, sum)
    }

    #[tokio::test(start_paused = true)]
    async fn open_loop_stall_shows_as_latency_not_fewer_requests() {
        let (_, steady) = drive(Some(200.0), Duration::ZERO).await;
        let (_, stalled) = drive(Some(200.0), Duration::from_millis(500)).await;
        // 2 s at 200/s: 400 operations either way.
        assert_eq!(steady.ok, 400);
        assert_eq!(stalled.ok, 400, "a stall must not reduce the request count");
        assert!(steady.latency_ms.max < 5.0, "{:?}", steady.latency_ms);
        // The operation intended right when the stall began waited ~500 ms.
        assert!(stalled.latency_ms.max >= 495.0, "{:?}", stalled.latency_ms);
        // ~100 operations were intended during the stall: a quarter of
        // them, so the p90 carries the stall too.
        assert!(stalled.latency_ms.p90 >= 50.0, "{:?}", stalled.latency_ms);
        assert!(stalled.latency_ms.p50 < 5.0, "{:?}", stalled.latency_ms);
    }

    #[tokio::test(start_paused = true)]
    async fn closed_loop_stall_hides_in_the_count() {
        // The contrast that motivates the open loop: the closed loop sends
        // fewer requests and only 4 of them see the stall.
        let (_, steady) = drive(None, Duration::ZERO).await;
        let (_, stalled) = drive(None, Duration::from_millis(500)).await;
        assert!(
            stalled.ok < steady.ok * 9 / 10,
            "{} vs {}",
            stalled.ok,
            steady.ok
        );
        assert!(stalled.latency_ms.p99 < 5.0, "{:?}", stalled.latency_ms);
    }

    #[tokio::test(start_paused = true)]
    async fn count_bounds_the_run() {
        let stats = Stats::new(Instant::now());
        let p = Plan {
            count: Some(37),
            duration: None,
            ..plan(None)
        };
        let f = run(&p, &stats, &Progress::hidden(), |_t| async {
            tokio::time::sleep(Duration::from_millis(3)).await;
            Done::from(Outcome::Ok)
        })
        .await;
        assert_eq!(f.issued, 37);
        assert_eq!(stats.ok_count("op"), 37);
    }

    #[tokio::test(start_paused = true)]
    async fn open_loop_count_and_rate_set_the_length() {
        let stats = Stats::new(Instant::now());
        let p = Plan {
            count: Some(50),
            duration: Some(Duration::from_secs(100)),
            ..plan(Some(100.0))
        };
        let f = run(&p, &stats, &Progress::hidden(), |_t| async {
            Done::from(Outcome::Ok)
        })
        .await;
        assert_eq!(stats.ok_count("op"), 50);
        let took = f.ended - f.started;
        assert!(
            took >= Duration::from_millis(490) && took < Duration::from_millis(600),
            "{took:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn hung_operations_are_cut_off_after_grace() {
        let stats = Stats::new(Instant::now());
        let p = Plan {
            duration: Some(Duration::from_secs(1)),
            grace: Duration::from_secs(2),
            ..plan(None)
        };
        let f = run(&p, &stats, &Progress::hidden(), |_t| async {
            std::future::pending::<()>().await;
            Done::from(Outcome::Ok)
        })
        .await;
        assert_eq!(f.ended - f.started, Duration::from_secs(3));
        let sum = stats.summarize(f.ended).remove(0);
        assert_eq!(sum.errors["timeout"], 4);
    }
}
