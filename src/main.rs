//! kubeshard: a Kubernetes-compatible API server, sharded thread-per-core.

mod admission;
mod aggregated;
mod aggregator;
mod apiextensions;
mod config;
mod context;
mod controllers;
mod discovery;
mod features;
mod filters;
mod flowcontrol;
mod handlers;
mod host;
mod informer;
mod metrics;
mod openapi;
mod openapi_pb;
mod pki;
mod proxy;
mod registry;
mod render;
mod request;
mod security;
mod server;
mod serving;
mod storage;
mod webhook;

use clap::Parser;
use config::{Flags, ServerConfig};
use handlers::Api;
use kubeshard_cache::ring::RingLimits;
use kubeshard_core::catalog::{Catalog, CatalogReader};
use kubeshard_shards::storage::recovery::{recover, RecoveryOptions};
use kubeshard_shards::storage::{FsyncPolicy, StorageMode, WalConfig};
use kubeshard_shards::{run, shutdown_pair, ExecutorContext, RuntimeConfig, Sequencer, StartState};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// jemalloc rather than glibc's malloc: request handling is a storm of
/// small, short-lived allocations (JSON values, keys, strings) that its
/// per-thread caches serve far more cheaply — creates ran 1.3–1.6× faster
/// in A/B runs, for about 7% more resident memory per stored object
/// (BENCHMARKS.md, "Allocator").
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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

fn serve(mut flags: Flags) -> Result<(), String> {
    // glommio's io_uring opens do not resolve relative directories (the
    // log's files fail with EBADF), and the default data dir is relative.
    flags.data_dir = std::path::absolute(&flags.data_dir)
        .map_err(|e| format!("--data-dir {}: {e}", flags.data_dir.display()))?;
    let cpus = allowed_cpus();
    let shards = flags.shards.unwrap_or(cpus.len()).max(1);
    let catalog = Catalog::with_builtins_in(&flags.etcd_prefix);
    let (storage, start, seq, _lock) = open_storage(&flags, shards, &catalog)?;
    let security = Arc::new(security::SecurityConfig::build(
        &flags.security,
        &flags.data_dir,
        flags.advertise_address,
    )?);
    // Reserve the ports first so that every executor binds the same ones,
    // including when the caller asked for any free port (0).
    let secure = Listening::reserve(
        SocketAddr::new(flags.security.bind_address, flags.security.secure_port),
        flags.security.secure_port_file.clone(),
    )?;
    let insecure = match flags.insecure_port {
        None => None,
        Some(port) => {
            if !flags.insecure_bind_address.is_loopback() {
                return Err(format!(
                    "--insecure-bind-address {} is not a loopback address: the plain-HTTP port has no authentication and only binds loopback",
                    flags.insecure_bind_address
                ));
            }
            Some(Listening::reserve(
                SocketAddr::new(flags.insecure_bind_address, port),
                flags.port_file.clone(),
            )?)
        }
    };
    let kubeconfig = security::SecurityConfig::kubeconfig_path(&flags.security, &flags.data_dir);
    pki::kubeconfig::write_admin(
        &kubeconfig,
        &client_url(secure.addr),
        &security.trust_pem,
        &security.issuer,
    )?;
    let fd_limit = serving::connections::raise_fd_limit();
    let conn_limit = Arc::new(match flags.max_connections {
        0 => serving::connections::ConnLimit::from_fd_limit(fd_limit),
        n => serving::connections::ConnLimit::new(n),
    });
    tracing::info!(
        fd_limit,
        max_connections = conn_limit.max(),
        "connection limit"
    );
    let features = features::Features::from_flags(&flags.features)?;
    let config = Arc::new(ServerConfig {
        min_request_timeout: flags.min_request_timeout,
        // At least a second: a pass lists every Service.
        service_repair_interval: flags
            .service_repair_interval
            .max(std::time::Duration::from_secs(1)),
        conversion_webhook_timeout: flags.conversion_webhook_timeout,
        bookmark_interval: flags.watch_bookmark_interval,
        watch_stall_timeout: flags.watch_stall_timeout,
        bind: secure.addr,
        advertise: flags.advertise_address,
        hello: flags.hello_bytes.map(|n| bytes::Bytes::from(vec![b'x'; n])),
        enable_garbage_collector: flags.enable_garbage_collector,
        conn_limit,
        conn_timeouts: serving::connections::Timeouts {
            idle: flags.connection_idle_timeout,
            header: flags.request_header_timeout,
        },
        service_cidrs: flags.service_cluster_ip_range.clone(),
        node_ports: Arc::new(kubeshard_core::portpool::PortPool::new(
            flags.service_node_port_range.0,
            flags.service_node_port_range.1,
        )),
        history_window: flags.watch_history_window,
        event_ttl: flags.event_ttl,
        admission: admission::config::AdmissionConfig::from_flags(&flags.admission, &features)?,
        keys: flags.etcd_prefix.clone(),
        backends: flags
            .kubelet
            .backends(insecure.as_ref().map(|i| i.addr.port()))?,
        aggregator: Arc::default(),
    });
    let limits = RingLimits {
        max_events: flags.watch_history_max_events,
        window: flags.watch_history_window,
    };
    let controllers = controllers::Enabled::from_flags(&flags.controllers)?;
    if features.serve_admission_v1beta1 {
        catalog.add_gated_admission_kinds(&config.keys);
    }
    let (mut trigger, shutdown) = shutdown_pair();
    let ready = Arc::new(AtomicBool::new(false));

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

    tracing::info!(
        secure = %secure.addr,
        insecure = ?insecure.as_ref().map(|i| i.addr),
        kubeconfig = %kubeconfig.display(),
        shards,
        storage = %flags.storage,
        "kubeshard starting"
    );
    let (secure, insecure) = (Arc::new(secure), insecure.map(Arc::new));
    let rt = RuntimeConfig {
        shards,
        cpus,
        limits,
        io_memory: flags.io_memory_kib * 1024,
        spin_before_park: (!flags.spin_before_park.is_zero()).then_some(flags.spin_before_park),
        storage,
        inbox_capacity: kubeshard_shards::runtime::INBOX_CAPACITY,
    };
    run(rt, seq, shutdown, start, move |ctx| {
        let (catalog, config, ready, security, secure, insecure, controllers) = (
            catalog.clone(),
            config.clone(),
            ready.clone(),
            security.clone(),
            secure.clone(),
            insecure.clone(),
            controllers.clone(),
        );
        async move {
            let sec = Rc::new(security::Security::new(
                security.clone(),
                config.keys.clone(),
            ));
            sec.start(&ctx);
            let api = Rc::new(Api::new(
                ctx.clone(),
                CatalogReader::new(catalog.clone()),
                config.clone(),
                ready.clone(),
                sec,
            ));
            flowcontrol::start(&api);
            let executors = ctx.shards.shard_count();
            let secure_listener = secure.bind(ctx.id, executors);
            let insecure_listener = insecure.as_ref().map(|l| l.bind(ctx.id, executors));
            glommio::spawn_local(api.stalls.clone().run(ctx.shutdown.clone())).detach();
            glommio::spawn_local(api.connections.clone().run(ctx.shutdown.clone())).detach();
            let seq = ctx.shards.sequencer().clone();
            glommio::spawn_local(
                api.revisions
                    .clone()
                    .run(move || seq.closed(), ctx.shutdown.clone()),
            )
            .detach();
            if ctx.id == 0 {
                start_controllers(&ctx, &api, &catalog, controllers);
            }
            let tls = server::serve(
                secure_listener,
                api.clone(),
                server::Transport::tls(security.tls.clone()),
            );
            let result = match insecure_listener {
                Some(l) => {
                    let plain = server::serve(l, api.clone(), server::Transport::Plain);
                    let (a, b) = futures_lite::future::zip(tls, plain).await;
                    a.and(b)
                }
                None => tls.await,
            };
            if let Err(e) = result {
                tracing::error!(error = %e, "listener failed");
            }
        }
    })
    .map_err(|e| e.to_string())?;
    tracing::info!("stopped");
    Ok(())
}

/// Executor 0 creates what the server needs at start, then runs the
/// built-in controllers.
fn start_controllers(
    ctx: &ExecutorContext,
    api: &Rc<Api>,
    catalog: &Arc<Catalog>,
    enabled: controllers::Enabled,
) {
    let (api, catalog) = (api.clone(), catalog.clone());
    // The bootstrap, the controllers and everything they start run in the
    // background queue: requests go first.
    kubeshard_shards::runtime::spawn_background(ctx.background, async move {
        let boot = async {
            handlers::bootstrap(&api).await?;
            controllers::kubernetes_service::ensure(&api).await?;
            controllers::system_objects::ensure(&api).await?;
            flowcontrol::bootstrap(&api).await?;
            registry::service_ips::repair(&api).await?;
            registry::node_ports::repair(&api).await?;
            controllers::security::bootstrap_policy::ensure(&api).await?;
            controllers::security::aggregation::settle(&api).await?;
            apiextensions::restore(&api, &catalog).await?;
            aggregator::autoregister::bootstrap(&api, &catalog.snapshot()).await
        };
        match boot.await {
            Ok(()) => {
                apiextensions::start(api.clone(), catalog.clone());
                aggregator::controller::start(api.clone(), catalog.clone());
                glommio::spawn_local(controllers::run(api.clone(), catalog, enabled)).detach();
                glommio::spawn_local(flowcontrol::keep_bootstrap(api.clone())).detach();
                glommio::spawn_local(controllers::kubernetes_service::run(api.clone())).detach();
                glommio::spawn_local(registry::service_repair::run(
                    api.clone(),
                    api.config.service_repair_interval,
                ))
                .detach();
                api.mark_ready();
                tracing::info!("ready");
            }
            Err(e) => {
                eprintln!("kubeshard: bootstrap failed: {}", e.message);
                std::process::exit(1);
            }
        }
        controllers::security::legacy_tokens::start(&api);
        controllers::security::aggregation::run(api).await;
    });
}

/// The URL a local client (the admin kubeconfig) reaches the secure port at.
fn client_url(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() || ip.is_loopback() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        ip => ip.to_string(),
    };
    format!("https://{host}:{}", addr.port())
}

/// A port every executor listens on: reserved at start (so a free port
/// chosen by the kernel is the same for all), released once all have
/// bound it, then announced in its port file.
struct Listening {
    addr: SocketAddr,
    reservation: parking_lot::Mutex<Option<socket2::Socket>>,
    bound: std::sync::atomic::AtomicUsize,
    port_file: Option<std::path::PathBuf>,
}

impl Listening {
    fn reserve(addr: SocketAddr, port_file: Option<std::path::PathBuf>) -> Result<Self, String> {
        let socket = reserve_port(addr)?;
        let addr = socket
            .local_addr()
            .map_err(|e| e.to_string())?
            .as_socket()
            .ok_or("bound address is not IP")?;
        Ok(Self {
            addr,
            reservation: parking_lot::Mutex::new(Some(socket)),
            bound: Default::default(),
            port_file,
        })
    }

    fn bind(&self, executor: usize, executors: usize) -> glommio::net::TcpListener {
        let listener = match listen_socket(self.addr) {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "kubeshard: executor {executor} cannot bind {}: {e}",
                    self.addr
                );
                std::process::exit(1);
            }
        };
        if self.bound.fetch_add(1, Ordering::SeqCst) + 1 == executors {
            // Every executor listens now: release the reservation (it is
            // bound but not listening, so it never took connections).
            self.reservation.lock().take();
            if let Some(f) = &self.port_file {
                let _ = std::fs::write(f, self.addr.port().to_string());
            }
        }
        listener
    }
}

/// Picks the storage mode and, for the log, recovers the data directory:
/// the state to start from, the revision to count on from, and the lock
/// that keeps other servers out while this one runs.
fn open_storage(
    flags: &Flags,
    shards: usize,
    #[cfg_attr(not(feature = "etcd"), allow(unused_variables))] catalog: &Arc<Catalog>,
) -> Result<storage::StoreStart, String> {
    match flags.storage.as_str() {
        "memory" => {
            return Ok((
                StorageMode::Memory,
                StartState::default(),
                Arc::new(Sequencer::new(shards, 0)),
                None,
            ))
        }
        #[cfg(feature = "etcd")]
        "etcd" => {
            let cfg = flags.etcd.config(&flags.etcd_prefix, flags.event_ttl)?;
            return storage::etcd::open(&cfg, shards, catalog);
        }
        #[cfg(not(feature = "etcd"))]
        "etcd" => {
            return Err(
                "--storage=etcd: this build has no etcd backend (build with --features etcd)"
                    .into(),
            )
        }
        _ => {}
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
        loaded: Vec::new(),
    };
    Ok((
        StorageMode::Wal(wal),
        start,
        Arc::new(Sequencer::new(shards, recovered.revision)),
        Some(recovered.lock),
    ))
}

/// One executor's listening socket: SO_REUSEPORT, so every executor
/// accepts on the same port, and SO_REUSEADDR, which the connections it
/// accepts inherit, so that once they linger in TIME_WAIT after a stop
/// they do not keep the next server off the port.
fn listen_socket(addr: SocketAddr) -> std::io::Result<glommio::net::TcpListener> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    let s = shared_socket(addr)?;
    s.listen(1024)?;
    // SAFETY: the descriptor is a bound, listening TCP socket whose
    // ownership moves to the listener.
    Ok(unsafe { glommio::net::TcpListener::from_raw_fd(s.into_raw_fd()) })
}

/// A bound (not listening) SO_REUSEPORT socket holding the port.
///
/// SO_REUSEPORT would also let this server silently share a port another
/// server (also using it) already listens on, so a fixed port is first
/// probed with a bind that fails if anyone listens there. Both set
/// SO_REUSEADDR, as every server does: connections of a server that just
/// stopped linger in TIME_WAIT on the port for a minute, and a restart
/// must not be refused because of them.
///
/// A port found in use is probed again for a short while: a server that
/// was just killed can still hold its listener for a moment after it is
/// gone (the kernel tears its io_uring instance, and the files in flight
/// there, down asynchronously), and a restart must get the port back.
fn reserve_port(addr: SocketAddr) -> Result<socket2::Socket, String> {
    use socket2::{Domain, Socket, Type};
    const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
    let cannot_bind = |e: std::io::Error| format!("cannot bind {addr}: {e}");
    if addr.port() != 0 {
        let probe = || -> std::io::Result<()> {
            let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
            s.set_reuse_address(true)?;
            s.bind(&addr.into())
        };
        let give_up = std::time::Instant::now() + RELEASE_WAIT;
        loop {
            match probe() {
                Ok(()) => break,
                Err(e)
                    if e.kind() == std::io::ErrorKind::AddrInUse
                        && std::time::Instant::now() < give_up =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(cannot_bind(e)),
            }
        }
    }
    shared_socket(addr).map_err(cannot_bind)
}

/// A TCP socket bound to `addr` with SO_REUSEADDR and SO_REUSEPORT: the
/// port reservation and every executor's listener.
fn shared_socket(addr: SocketAddr) -> std::io::Result<socket2::Socket> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
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
