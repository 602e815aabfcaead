//! kubeshard: a Kubernetes-compatible API server, sharded thread-per-core.

mod admission;
mod config;
mod controllers;
mod discovery;
mod filters;
mod handlers;
mod metrics;
mod openapi;
mod openapi_pb;
mod registry;
mod serving;

use clap::Parser;
use config::{Flags, ServerConfig};
use handlers::Api;
use kubeshard_cache::ring::RingLimits;
use kubeshard_core::catalog::{Catalog, CatalogReader};
use kubeshard_shards::storage::recovery::{recover, RecoveryOptions};
use kubeshard_shards::storage::{FsyncPolicy, StorageMode, WalConfig};
use kubeshard_shards::{run, shutdown_pair, RuntimeConfig, Sequencer, StartState};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn main() {
    let flags = Flags::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = serve(flags) {
        tracing::error!("{e}");
        eprintln!("kubeshard: {e}");
        std::process::exit(1);
    }
}

fn serve(flags: Flags) -> Result<(), String> {
    let cpus = allowed_cpus();
    let shards = flags.shards.unwrap_or(cpus.len()).max(1);
    let (storage, start, start_revision, _lock) = open_storage(&flags, shards)?;
    // Reserve the port first so that every executor binds the same one,
    // including when the caller asked for any free port (0).
    let reservation = reserve_port(SocketAddr::new(
        flags.insecure_bind_address,
        flags.insecure_port,
    ))?;
    let bind = reservation
        .local_addr()
        .map_err(|e| e.to_string())?
        .as_socket()
        .ok_or("bound address is not IP")?;
    let config = Arc::new(ServerConfig {
        min_request_timeout: flags.min_request_timeout,
        bookmark_interval: flags.watch_bookmark_interval,
        watch_stall_timeout: flags.watch_stall_timeout,
        bind,
        advertise: flags.advertise_address,
        hello: flags.hello_bytes.map(|n| bytes::Bytes::from(vec![b'x'; n])),
        enable_garbage_collector: flags.enable_garbage_collector,
    });
    let limits = RingLimits {
        max_events: flags.watch_history_max_events,
        window: flags.watch_history_window,
    };
    let controllers = controllers::Enabled::from_flags(&flags.controllers)?;
    let catalog = Catalog::with_builtins();
    let seq = Arc::new(Sequencer::new(shards, start_revision));
    let (mut trigger, shutdown) = shutdown_pair();
    let ready = Arc::new(AtomicBool::new(false));
    let bound = Arc::new(std::sync::atomic::AtomicUsize::new(0));

    std::thread::spawn(move || {
        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGINT,
        ])
        .expect("signal handlers install");
        let mut seen = 0;
        for sig in signals.forever() {
            seen += 1;
            if seen > 1 {
                eprintln!("kubeshard: second signal, exiting now");
                std::process::exit(1);
            }
            tracing::info!(
                signal = sig,
                "shutting down: no new connections, finishing requests, ending watches"
            );
            trigger.trigger();
        }
    });

    tracing::info!(%bind, shards, storage = %flags.storage, "kubeshard starting");
    let port_file = flags.port_file.clone();
    let reservation = Arc::new(parking_lot::Mutex::new(Some(reservation)));
    let rt = RuntimeConfig {
        shards,
        cpus,
        limits,
        io_memory: flags.io_memory_kib * 1024,
        spin_before_park: (!flags.spin_before_park.is_zero()).then_some(flags.spin_before_park),
        storage,
    };
    run(rt, seq, shutdown, start, move |ctx| {
        let (catalog, config, ready, port_file, bound, reservation) = (
            catalog.clone(),
            config.clone(),
            ready.clone(),
            port_file.clone(),
            bound.clone(),
            reservation.clone(),
        );
        async move {
            let api = Rc::new(Api::new(
                ctx.clone(),
                CatalogReader::new(catalog.clone()),
                config.clone(),
                ready.clone(),
            ));
            let listener = match glommio::net::TcpListener::bind(config.bind) {
                Ok(l) => l,
                Err(e) => {
                    eprintln!(
                        "kubeshard: executor {} cannot bind {}: {e}",
                        ctx.id, config.bind
                    );
                    std::process::exit(1);
                }
            };
            if bound.fetch_add(1, Ordering::SeqCst) + 1 == ctx.shards.shard_count() {
                // Every executor listens now: release the reservation (it
                // is bound but not listening, so it never took connections).
                reservation.lock().take();
                if let Some(f) = &port_file {
                    let _ = std::fs::write(f, config.bind.port().to_string());
                }
            }
            glommio::spawn_local(api.stalls.clone().run(ctx.shutdown.clone())).detach();
            if ctx.id == 0 {
                let api = api.clone();
                let (ctx, catalog) = (ctx.clone(), catalog.clone());
                glommio::spawn_local(async move {
                    match handlers::bootstrap(&api).await {
                        Ok(()) => {
                            if controllers.any() {
                                let gc = config.enable_garbage_collector;
                                glommio::spawn_local(controllers::run(
                                    ctx,
                                    catalog,
                                    controllers,
                                    gc,
                                ))
                                .detach();
                            }
                            api.mark_ready();
                            tracing::info!("ready");
                        }
                        Err(e) => {
                            eprintln!("kubeshard: bootstrap failed: {e}");
                            std::process::exit(1);
                        }
                    }
                })
                .detach();
            }
            if let Err(e) = serving::listener::serve(listener, api).await {
                tracing::error!(error = %e, "listener failed");
            }
        }
    })
    .map_err(|e| e.to_string())?;
    tracing::info!("stopped");
    Ok(())
}

/// Picks the storage mode and, for the log, recovers the data directory:
/// the state to start from, the revision to count on from, and the lock
/// that keeps other servers out while this one runs.
fn open_storage(
    flags: &Flags,
    shards: usize,
) -> Result<
    (
        StorageMode,
        StartState,
        u64,
        Option<kubeshard_shards::storage::layout::DirLock>,
    ),
    String,
> {
    if flags.storage == "memory" {
        return Ok((StorageMode::Memory, StartState::default(), 0, None));
    }
    let fsync = FsyncPolicy::parse(&flags.fsync, config::parse_duration)
        .map_err(|e| format!("--fsync: {e}"))?;
    let recovered = recover(&RecoveryOptions {
        dir: flags.data_dir.clone(),
        shards,
        repair: flags.repair,
    })?;
    let r = &recovered.report;
    tracing::info!(
        data_dir = %flags.data_dir.display(),
        objects = r.objects,
        replayed_events = r.replayed,
        revision = recovered.revision,
        resharded_from = ?r.resharded_from,
        elapsed = ?r.elapsed,
        "recovered stored state"
    );
    let wal = WalConfig {
        fsync,
        segment_size: flags.wal_segment_kib.map(|k| k * 1024),
        snapshot_after_bytes: flags.snapshot_after,
        fault_file: flags.inject_disk_full_file.clone(),
    };
    let start = StartState {
        hub_start: recovered.hub_start,
        shards: recovered.shards,
    };
    Ok((
        StorageMode::Wal(wal),
        start,
        recovered.revision,
        Some(recovered.lock),
    ))
}

/// A bound (not listening) SO_REUSEPORT socket holding the port.
fn reserve_port(addr: SocketAddr) -> Result<socket2::Socket, String> {
    use socket2::{Domain, Socket, Type};
    let s =
        Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(|e| e.to_string())?;
    s.set_reuse_port(true).map_err(|e| e.to_string())?;
    s.bind(&addr.into())
        .map_err(|e| format!("cannot bind {addr}: {e}"))?;
    Ok(s)
}

/// The CPUs this process may run on (its affinity mask).
fn allowed_cpus() -> Vec<usize> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes
    // into the set we own.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect()
}
