//! Watch fan-out: W watchers on the run's objects (each on its own
//! connection, or multiplexed over `--connections` HTTP/2 connections)
//! while a writer updates those objects (open loop at `--rate`, else
//! closed loop). Reports events delivered per second and the latency from
//! a write's acknowledgement to its delivery to each watcher.

use super::crud::put_last;
use super::{precreate, Ctx, Extra};
use crate::cli::WatchArgs;
use crate::client::Client;
use crate::scheduler::Done;
use crate::watcher::{self, AckBook, DeliveryOps, Position, WatchShared};
use anyhow::{bail, Result};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Operation names of the delivery latencies.
pub const DELIVERY: DeliveryOps = DeliveryOps {
    from_ack: "watch-delivery",
    from_send: "watch-delivery-from-send",
};

pub async fn run(ctx: &Ctx, a: &WatchArgs) -> Result<Extra> {
    let mut extra = Extra::new();
    let n = a.objects.max(1);
    let rvs = precreate(ctx, n, &mut extra).await?;
    let start_rv = rvs
        .iter()
        .map(|r| r.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    let path = format!(
        "{}?labelSelector={}",
        ctx.resource.collection,
        ctx.run_selector()
    );
    let (fleet, tallies) = Fleet::start(ctx, a.watchers, &path, start_rv, DELIVERY).await?;

    // One writer per object at most, so writes never conflict.
    let mut plan = ctx.plan("write");
    plan.workers = plan.workers.min(n);
    let acks = fleet.acks.clone();
    let (c, workers) = (ctx.clone(), plan.workers);
    let f = ctx
        .drive(&plan, move |t| {
            let (c, rvs, acks) = (c.clone(), rvs.clone(), acks.clone());
            async move {
                let i = super::owned_object(n, workers, t.worker, t.seq / workers as u64);
                let sent = Instant::now();
                let done: Done = put_last(&c, t.worker, i, t.seq, &rvs).await;
                if done.outcome.is_ok() {
                    acks.ack(rvs[i].load(Ordering::Relaxed), sent, Instant::now());
                }
                done
            }
        })
        .await;
    let summary = fleet.finish(tallies).await;
    let secs = summary.close_windows(&ctx.stats, &DELIVERY, f.started);
    summary.report(&mut extra, ctx.stats.ok_count("write"), secs);
    extra.insert("writers".into(), serde_json::json!(workers));
    Ok(extra)
}

/// A set of running watchers.
pub struct Fleet {
    pub acks: Arc<AckBook>,
    positions: Vec<Position>,
    stop: tokio::sync::watch::Sender<bool>,
    established: usize,
}

type Tallies = Vec<tokio::task::JoinHandle<watcher::Tally>>;

impl Fleet {
    /// Starts `count` watchers of `path` from `rv` and waits (up to 30 s)
    /// for their streams to open.
    pub async fn start(
        ctx: &Ctx,
        count: usize,
        path: &str,
        rv: u64,
        ops: DeliveryOps,
    ) -> Result<(Fleet, Tallies)> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let acks = Arc::new(AckBook::default());
        let settled = Arc::new(AtomicUsize::new(0));
        let http2 = ctx.client.target().http2;
        // With HTTP/2 the watchers multiplex over connections of their own,
        // so the writer never waits for stream capacity behind them.
        let client = if http2 {
            Client::new(
                ctx.client.target(),
                ctx.client.connections(),
                ctx.load.timeout,
            )?
        } else {
            ctx.client.clone()
        };
        let shared = WatchShared {
            client,
            acks: acks.clone(),
            stats: ctx.stats.clone(),
            ops,
            stop: stop_rx,
            established: settled.clone(),
        };
        let mut positions = Vec::with_capacity(count);
        let mut tasks = Vec::with_capacity(count);
        for i in 0..count {
            let pos = Position::default();
            positions.push(pos.clone());
            let slot = http2.then_some(i);
            tasks.push(tokio::spawn(watcher::run(
                shared.clone(),
                slot,
                path.to_string(),
                rv,
                pos,
            )));
        }
        let settled_in_time =
            watcher::wait_established(&settled, count, ctx.load.timeout + Duration::from_secs(5))
                .await;
        let established = ctx.stats.ok_count("watch-open") as usize;
        if !settled_in_time || established < count {
            let _ = stop_tx.send(true);
            let hint = if http2 {
                " (with --http2, the server's limit of concurrent streams per connection \
                 may be the cause: use more --connections)"
            } else {
                ""
            };
            bail!("only {established} of {count} watches opened{hint}");
        }
        Ok((
            Fleet {
                acks,
                positions,
                stop: stop_tx,
                established,
            },
            tasks,
        ))
    }

    /// Waits (up to 5 s) for every watcher to see the last acknowledged
    /// write, then stops them all.
    pub async fn finish(self, tallies: Tallies) -> FleetSummary {
        let last = self.acks.max();
        let behind = watcher::wait_for(&self.positions, last, Duration::from_secs(5)).await;
        let drained_at = Instant::now();
        let _ = self.stop.send(true);
        let mut s = FleetSummary {
            watchers: self.positions.len(),
            established: self.established,
            behind,
            drained_at,
            ..Default::default()
        };
        for t in tallies {
            if let Ok(t) = t.await {
                s.events += t.events;
                s.bookmarks += t.bookmarks;
                s.rewatches += t.rewatches;
                if let Some(f) = t.failure {
                    s.failed += 1;
                    s.first_failure.get_or_insert(f);
                }
            }
        }
        s
    }
}

/// What a fleet of watchers saw.
#[derive(Debug)]
pub struct FleetSummary {
    pub watchers: usize,
    pub established: usize,
    /// Watchers that had not seen the last write when they were stopped.
    pub behind: usize,
    pub events: u64,
    pub bookmarks: u64,
    pub rewatches: u64,
    pub failed: usize,
    pub first_failure: Option<String>,
    pub drained_at: Instant,
}

impl Default for FleetSummary {
    fn default() -> Self {
        Self {
            watchers: 0,
            established: 0,
            behind: 0,
            events: 0,
            bookmarks: 0,
            rewatches: 0,
            failed: 0,
            first_failure: None,
            drained_at: Instant::now(),
        }
    }
}

impl FleetSummary {
    /// Limits the delivery operations' throughput windows to the span the
    /// events were delivered over (from `started` until the fleet drained)
    /// and returns that span in seconds.
    pub fn close_windows(
        &self,
        stats: &crate::stats::Stats,
        ops: &DeliveryOps,
        started: Instant,
    ) -> f64 {
        stats.set_window(ops.from_ack, started, self.drained_at);
        stats.set_window(ops.from_send, started, self.drained_at);
        (self.drained_at - started).as_secs_f64()
    }

    /// Adds the figures to `extra`; `writes` is the successful writes that
    /// every watcher should have received.
    /// `secs` is the span the events were delivered over.
    pub fn report(&self, extra: &mut Extra, writes: u64, secs: f64) {
        let expected = writes * self.established as u64;
        extra.insert("watchers".into(), json!(self.watchers));
        extra.insert("watchers_established".into(), json!(self.established));
        extra.insert("writes".into(), json!(writes));
        extra.insert("events_delivered".into(), json!(self.events));
        extra.insert(
            "events_per_s".into(),
            json!(self.events as f64 / secs.max(1e-9)),
        );
        extra.insert("events_expected".into(), json!(expected));
        extra.insert(
            "events_missing".into(),
            json!(expected.saturating_sub(self.events)),
        );
        extra.insert("watchers_behind_at_end".into(), json!(self.behind));
        extra.insert("rewatches".into(), json!(self.rewatches));
        extra.insert("watchers_failed".into(), json!(self.failed));
        if let Some(f) = &self.first_failure {
            extra.insert("first_watch_failure".into(), json!(f));
        }
    }
}
