//! The results of a run: the JSON document and the terminal summary.

use crate::procfs::ServerStats;
use crate::stats::OpSummary;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// One run of one workload against one target (the `--output` document).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// "kubeshard-bench <version>".
    pub tool: String,
    pub workload: String,
    pub target: String,
    /// "http/1.1" or "h2".
    pub protocol: String,
    pub config: RunConfig,
    pub started_unix_s: u64,
    pub elapsed_s: f64,
    /// The operation that stands for the workload (its throughput is the
    /// workload's); the others are sub-steps, phases or background load.
    pub primary: String,
    pub operations: Vec<OpSummary>,
    /// Workload-specific figures (events delivered, items per list, …).
    pub extra: Map<String, Value>,
    /// Given --server-pid: the server's CPU and memory.
    pub server: Option<ServerStats>,
    /// The load generator's own CPU and memory: when it nears the cores it
    /// may use, it (not the server) is the bottleneck.
    #[serde(default)]
    pub client: Option<ServerStats>,
}

/// The flags that shaped the load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    pub object_size: usize,
    pub connections: usize,
    pub concurrency: usize,
    pub duration_s: Option<f64>,
    pub count: Option<u64>,
    /// Open loop at this rate; null: closed loop.
    pub rate: Option<f64>,
    pub resource: String,
    pub prefix: String,
    /// The workload's own flags.
    pub args: Value,
}

impl RunConfig {
    /// The load shape every workload shares, plus what is its own.
    pub fn new(
        load: &crate::cli::LoadArgs,
        connections: usize,
        resource: String,
        prefix: String,
        args: Value,
    ) -> Self {
        Self {
            object_size: load.object_size,
            connections,
            concurrency: load.concurrency,
            duration_s: load.duration.map(|d| d.as_secs_f64()),
            count: load.count,
            rate: load.rate,
            resource,
            prefix,
            args,
        }
    }
}

impl RunResult {
    pub fn op(&self, name: &str) -> Option<&OpSummary> {
        self.operations.iter().find(|o| o.name == name)
    }

    /// The primary operation (an empty one if it never ran).
    pub fn primary(&self) -> OpSummary {
        self.op(&self.primary)
            .cloned()
            .unwrap_or_else(|| OpSummary {
                name: self.primary.clone(),
                requests: 0,
                ok: 0,
                errors: Default::default(),
                seconds: self.elapsed_s,
                throughput_per_s: 0.0,
                latency_ms: Default::default(),
                timeline: Vec::new(),
            })
    }

    /// The terminal summary.
    pub fn table(&self) -> String {
        let c = &self.config;
        let mut s = String::new();
        let mode = match c.rate {
            Some(r) => format!("open loop at {r}/s"),
            // Leases and pod churn run at their own rates.
            None if self.workload == "cluster" => "open loop".into(),
            None => "closed loop".into(),
        };
        let _ = writeln!(
            s,
            "{} against {} ({}, {} connections, {} in flight, {mode}, {} B objects) in {:.2} s",
            self.workload,
            self.target,
            self.protocol,
            c.connections,
            c.concurrency,
            c.object_size,
            self.elapsed_s
        );
        let _ = writeln!(
            s,
            "{:<28} {:>9} {:>7} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "operation",
            "ok",
            "errors",
            "ops/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        for o in &self.operations {
            let l = &o.latency_ms;
            let mark = if o.name == self.primary { "*" } else { " " };
            let _ = writeln!(
                s,
                "{mark}{:<27} {:>9} {:>7} {:>11.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                o.name,
                o.ok,
                o.requests - o.ok,
                o.throughput_per_s,
                l.p50,
                l.p90,
                l.p99,
                l.p999,
                l.max
            );
        }
        for o in self.operations.iter().filter(|o| !o.errors.is_empty()) {
            let errs: Vec<String> = o.errors.iter().map(|(k, v)| format!("{k}×{v}")).collect();
            let _ = writeln!(s, "errors in {}: {}", o.name, errs.join(", "));
        }
        if !self.extra.is_empty() {
            let figs: Vec<String> = self
                .extra
                .iter()
                .map(|(k, v)| match v.as_f64() {
                    Some(f) if f.fract() != 0.0 && f.abs() < 10.0 => format!("{k}={f:.3}"),
                    Some(f) if f.fract() != 0.0 => format!("{k}={f:.1}"),
                    _ => format!("{k}={v}"),
                })
                .collect();
            let _ = writeln!(s, "{}", figs.join("  "));
        }
        if let Some(sv) = &self.server {
            let _ = writeln!(
                s,
                "server pid {}: {:.2} CPU s ({:.2} cores), peak RSS {:.1} MiB, RSS {:.1} MiB",
                sv.pid,
                sv.cpu_seconds,
                sv.cpu_cores,
                sv.peak_rss_bytes as f64 / 1048576.0,
                sv.rss_bytes as f64 / 1048576.0
            );
        }
        if let Some(c) = &self.client {
            let _ = writeln!(
                s,
                "load generator: {:.2} CPU s ({:.2} cores), peak RSS {:.1} MiB",
                c.cpu_seconds,
                c.cpu_cores,
                c.peak_rss_bytes as f64 / 1048576.0
            );
        }
        s
    }
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json<T: Serialize>(path: &std::path::Path, value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}
