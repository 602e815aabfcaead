//! Runs one workload against one target and assembles its [`RunResult`].

use crate::cli::{LoadArgs, Workload};
use crate::client::Client;
use crate::objects::Resource;
use crate::procfs::Sampler;
use crate::report::{RunConfig, RunResult};
use crate::stats::Stats;
use crate::target::Target;
use crate::workloads::{self, Ctx};
use anyhow::{bail, Result};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Without --duration and --count a run lasts this long.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The load flags with their defaults applied.
pub fn resolve(load: &LoadArgs, http2: bool) -> Result<LoadArgs> {
    let mut l = load.clone();
    if l.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if l.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
        bail!("--rate must be a positive number");
    }
    l.connections = Some(match l.connections {
        Some(0) => bail!("--connections must be at least 1"),
        Some(c) => c,
        None if http2 => l.concurrency.min(4),
        None => l.concurrency,
    });
    if l.duration.is_none() && l.count.is_none() {
        l.duration = Some(DEFAULT_DURATION);
    }
    if l.prefix.is_none() {
        l.prefix = Some(workloads::default_prefix());
    }
    Ok(l)
}

/// The operation that stands for workload `w`.
pub fn primary_op(w: &Workload) -> &'static str {
    match w {
        Workload::List(a) if a.paged_only => "list-paged",
        Workload::Watch(_) => workloads::watch::DELIVERY.from_ack,
        Workload::Cluster(_) => "pod-lifecycle",
        other => other.name(),
    }
}

/// Runs `w` against `target`.
pub async fn run(
    target: &Target,
    load: &LoadArgs,
    w: &Workload,
    server_pid: Option<u32>,
    quiet: bool,
) -> Result<RunResult> {
    let load = resolve(load, target.http2)?;
    let connections = load.connections.expect("resolved");
    let client = Client::new(target, connections, load.timeout)?;
    let resource = Resource::from_args(&load)?;
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let start = Instant::now();
    let ctx = Ctx {
        client,
        prefix: load.prefix.clone().expect("resolved"),
        load: load.clone(),
        resource: resource.clone(),
        stats: Stats::new(start),
        quiet,
    };
    let sampler = match server_pid {
        Some(pid) => match Sampler::start(pid) {
            Some(s) => Some(s),
            None => bail!("cannot read /proc/{pid}: is the server running on this machine?"),
        },
        None => None,
    };
    let me = Sampler::start(std::process::id());
    let extra = workloads::run(&ctx, w).await?;
    let end = Instant::now();
    let server = sampler.and_then(|s| s.finish(end - start));
    Ok(RunResult {
        tool: format!("kubeshard-bench {}", env!("CARGO_PKG_VERSION")),
        workload: w.name().to_string(),
        target: target.url.clone(),
        protocol: if target.http2 { "h2" } else { "http/1.1" }.to_string(),
        config: RunConfig::new(
            &load,
            connections,
            resource.collection,
            ctx.prefix.clone(),
            serde_json::to_value(w).unwrap_or_default(),
        ),
        started_unix_s,
        elapsed_s: (end - start).as_secs_f64(),
        primary: primary_op(w).to_string(),
        operations: ctx.stats.summarize(end),
        extra,
        server,
        client: me.and_then(|s| s.finish(end - start)),
    })
}
