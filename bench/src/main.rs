//! The `kubeshard-bench` command.

use anyhow::{Context, Result};
use clap::Parser;
use kubeshard_bench::cli::{Cli, Command};
use kubeshard_bench::report::{self, RunResult};
use kubeshard_bench::target::Target;
use kubeshard_bench::{charts, compare, runner};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let cli = Cli::parse();
    raise_fd_limit();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = cli.threads {
        rt.worker_threads(t.max(1));
    }
    let rt = rt.build().expect("tokio runtime");
    if let Err(e) = rt.block_on(run(&cli)) {
        eprintln!("kubeshard-bench: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Workload(w) => {
            let target = Target::from_args(&cli.target, None)?;
            let r = runner::run(
                &target,
                &cli.load,
                w,
                cli.output.server_pid,
                cli.output.quiet,
            )
            .await?;
            print!("{}", r.table());
            outputs(cli, &r.workload, &r)?;
        }
        Command::Compare(args) => {
            let c = compare::run(cli, args).await?;
            if let Some(p) = &cli.output.output {
                report::write_json(p, &c)?;
            }
            if let Some(dir) = &cli.output.charts {
                for (i, round) in c.rounds.iter().enumerate() {
                    let n = i + 1;
                    charts::write(dir, &format!("{}-r{n}-a", c.workload), &round.a)?;
                    charts::write(dir, &format!("{}-r{n}-b", c.workload), &round.b)?;
                }
            }
        }
        Command::Webhook(args) => kubeshard_bench::webhook::serve(args).await?,
        Command::MetricsServer(args) => kubeshard_bench::metrics_server::serve(args).await?,
        #[cfg(feature = "etcd")]
        Command::Etcd(args) => {
            let r = kubeshard_bench::etcd::run(cli, args).await?;
            print!("{}", r.table());
            outputs(cli, &format!("etcd-{}", r.workload), &r)?;
        }
    }
    Ok(())
}

/// Writes --output and --charts.
fn outputs(cli: &Cli, name: &str, r: &RunResult) -> Result<()> {
    if let Some(p) = &cli.output.output {
        report::write_json(p, r)?;
    }
    if let Some(dir) = &cli.output.charts {
        let files = charts::write(dir, name, r).context("writing charts")?;
        for f in files {
            eprintln!("chart: {}", f.display());
        }
    }
    Ok(())
}

/// Thousands of watchers need thousands of sockets: lift the soft limit on
/// open files to the hard one.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit with a valid, initialized struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
