//! `compare`: one workload against two targets, alternating A B A B.
//!
//! On a shared, noisy machine two back-to-back runs can differ by more than
//! the servers do; alternating and taking the median of the per-round
//! ratios cancels slow drifts (another job starting, thermal limits).

use crate::cli::{Cli, CompareArgs};
use crate::report::RunResult;
use crate::runner;
use crate::target::Target;
use anyhow::Result;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Round {
    pub a: RunResult,
    pub b: RunResult,
    /// Primary throughput of B over A (above 1: B is faster).
    pub throughput_ratio: f64,
    /// Primary p99 latency of B over A (below 1: B is faster).
    pub p99_ratio: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompareResult {
    pub workload: String,
    pub a: String,
    pub b: String,
    pub rounds: Vec<Round>,
    pub median_throughput_ratio: f64,
    pub median_p99_ratio: f64,
}

pub async fn run(cli: &Cli, args: &CompareArgs) -> Result<CompareResult> {
    let ta = Target::from_args(&cli.target, Some(&args.a))?;
    let tb = Target::from_args(&cli.target, Some(&args.b))?;
    let base = cli
        .load
        .prefix
        .clone()
        .unwrap_or_else(crate::workloads::default_prefix);
    let mut rounds = Vec::new();
    for round in 1..=args.rounds.max(1) {
        let mut pair = Vec::with_capacity(2);
        for (label, target, pid) in [("A", &ta, args.a_pid), ("B", &tb, args.b_pid)] {
            let mut load = cli.load.clone();
            if label == "B" {
                load.resource = args.b_resource.clone().or(load.resource);
                load.kind = args.b_kind.clone().or(load.kind);
                load.template = args.b_template.clone().or(load.template);
                load.object_size = args.b_object_size.unwrap_or(load.object_size);
            }
            // Fresh object names every run that writes, so no run trips
            // on another's; a read-only run reads its first round's
            // objects again (its set-up finds them, by the 409).
            let tag = if args.workload.reads_only() { 1 } else { round };
            load.prefix = Some(format!("{base}-r{tag}{}", label.to_lowercase()));
            let r = runner::run(target, &load, &args.workload, pid, cli.output.quiet).await?;
            let p = r.primary();
            println!(
                "round {round} {label} {:<28} {:>11.1} ops/s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {}",
                target.url,
                p.throughput_per_s,
                p.latency_ms.p50,
                p.latency_ms.p99,
                p.requests - p.ok
            );
            pair.push(r);
        }
        let b = pair.pop().expect("two runs");
        let a = pair.pop().expect("two runs");
        let (pa, pb) = (a.primary(), b.primary());
        let throughput_ratio = ratio(pb.throughput_per_s, pa.throughput_per_s);
        let p99_ratio = ratio(pb.latency_ms.p99, pa.latency_ms.p99);
        println!("round {round} B/A: throughput ×{throughput_ratio:.3}, p99 ×{p99_ratio:.3}");
        rounds.push(Round {
            a,
            b,
            throughput_ratio,
            p99_ratio,
        });
    }
    let result = CompareResult {
        workload: args.workload.name().to_string(),
        a: args.a.clone(),
        b: args.b.clone(),
        median_throughput_ratio: median(rounds.iter().map(|r| r.throughput_ratio).collect()),
        median_p99_ratio: median(rounds.iter().map(|r| r.p99_ratio).collect()),
        rounds,
    };
    println!(
        "median B/A over {} rounds: throughput ×{:.3}, p99 ×{:.3}",
        result.rounds.len(),
        result.median_throughput_ratio,
        result.median_p99_ratio
    );
    Ok(result)
}

fn ratio(b: f64, a: f64) -> f64 {
    if a > 0.0 {
        b / a
    } else {
        f64::NAN
    }
}

/// Median ignoring NaNs (NaN if none is left).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![f64::NAN, 5.0]), 5.0);
        assert!(median(vec![]).is_nan());
    }
}
