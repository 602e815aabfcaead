//! Command-line flags, named as kube-apiserver names them where one exists.

use clap::Parser;
use kubeshard_core::cidr::Cidr;
use kubeshard_core::keys::KeyLayout;
pub use kubeshard_core::units::{parse_duration, parse_size};
use std::net::IpAddr;
use std::time::Duration;

/// How to reach etcd with --storage=etcd (kube-apiserver's flags).
#[derive(Debug, Clone, clap::Args)]
pub struct EtcdFlags {
    /// etcd servers to connect to (scheme://ip:port), comma separated.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long)]
    pub etcd_cafile: Option<std::path::PathBuf>,

    /// SSL certification file used to secure etcd communication.
    #[arg(long)]
    pub etcd_certfile: Option<std::path::PathBuf>,

    /// SSL key file used to secure etcd communication.
    #[arg(long)]
    pub etcd_keyfile: Option<std::path::PathBuf>,

    /// The interval of compaction requests: history older than one to two
    /// intervals is dropped from etcd (0 disables; then someone else must
    /// compact).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub etcd_compaction_interval: Duration,

    /// kube's per-resource etcd servers (`group/resource#url;url`, comma
    /// separated). Accepted as kube writes it and refused at start:
    /// kubeshard orders every watch and list by one revision sequence, one
    /// etcd cluster's, so a resource cannot live in another cluster.
    #[arg(long, value_delimiter = ',', value_parser = parse_server_override)]
    pub etcd_servers_overrides: Vec<String>,
}

/// One `--etcd-servers-overrides` entry, checked as kube checks it.
fn parse_server_override(s: &str) -> Result<String, String> {
    let (resource, servers) = s
        .split_once('#')
        .ok_or_else(|| format!("{s:?}: expected group/resource#servers"))?;
    if !resource.contains('/') || servers.split(';').any(str::is_empty) {
        return Err(format!("{s:?}: expected group/resource#servers"));
    }
    Ok(s.to_string())
}

#[cfg(feature = "etcd")]
impl EtcdFlags {
    /// The etcd to store in, under `prefix`.
    /// Events expire after `event_ttl`, under etcd leases.
    pub fn config(
        &self,
        prefix: &KeyLayout,
        event_ttl: std::time::Duration,
    ) -> Result<kubeshard_shards::etcd::EtcdConfig, String> {
        if self.etcd_servers.is_empty() {
            return Err("--storage=etcd needs --etcd-servers".into());
        }
        if let Some(first) = self.etcd_servers_overrides.first() {
            return Err(format!(
                "--etcd-servers-overrides ({first}): every resource must be in the one etcd \
                 cluster of --etcd-servers; kubeshard serves all watches and lists in that \
                 cluster's revision order, which a resource in another cluster would not share"
            ));
        }
        let files = [&self.etcd_cafile, &self.etcd_certfile, &self.etcd_keyfile];
        let tls = files
            .iter()
            .any(|f| f.is_some())
            .then(|| kubeshard_shards::etcd::TlsFiles {
                ca_file: self.etcd_cafile.clone(),
                cert_file: self.etcd_certfile.clone(),
                key_file: self.etcd_keyfile.clone(),
            });
        Ok(kubeshard_shards::etcd::EtcdConfig {
            endpoints: self.etcd_servers.clone(),
            prefix: prefix.prefix().to_string(),
            tls,
            compaction: Some(self.etcd_compaction_interval).filter(|d| !d.is_zero()),
            expiring: vec![(prefix.builtin("", "events"), event_ttl)],
        })
    }
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "kubeshard",
    version,
    about = "A Kubernetes-compatible API server, sharded thread-per-core"
)]
pub struct Flags {
    /// Number of shards (one executor per shard). Default: the CPUs this
    /// process may run on.
    #[arg(long)]
    pub shards: Option<usize>,

    /// Address of the plain-HTTP port (loopback only).
    #[arg(long, default_value = "127.0.0.1")]
    pub insecure_bind_address: IpAddr,

    /// Plain-HTTP port, off unless given; 0 picks a free one (see
    /// --port-file). Requests on it are not authenticated: they act as a
    /// member of system:masters, like kube's old insecure port.
    #[arg(long)]
    pub insecure_port: Option<u16>,

    #[command(flatten)]
    pub security: crate::security::SecurityFlags,

    /// Storage backend: "wal" (durable: a write-ahead log and snapshots per
    /// shard in --data-dir), "memory" (nothing survives the process) or
    /// "etcd" (an etcd cluster, in kube-apiserver's layout: several
    /// servers share it; see --etcd-servers).
    #[arg(long, default_value = "wal", value_parser = ["wal", "memory", "etcd"])]
    pub storage: String,

    #[command(flatten)]
    pub etcd: EtcdFlags,

    /// When a write counts as durable with --storage=wal: "always" (on
    /// stable storage before it is acknowledged or visible), "interval:10ms"
    /// (written before it is acknowledged, synced within the interval: a
    /// power loss may take the last interval) or "none" (written, never
    /// synced: survives a crash of the process, not of the machine).
    #[arg(long, default_value = "always")]
    pub fsync: String,

    /// Start even when the log is damaged in the middle or does not reach
    /// back to a snapshot: keep what precedes the damage, drop the rest.
    #[arg(long)]
    pub repair: bool,

    /// A shard writes a snapshot (and trims its log) once this much was
    /// logged since the last one, or the size of that snapshot if larger
    /// (bytes, or with a Ki, Mi or Gi suffix).
    #[arg(long, default_value = "64Mi", value_parser = parse_size)]
    pub snapshot_after: u64,

    /// Log segment size in KiB (tests use small ones).
    #[arg(long, hide = true)]
    pub wal_segment_kib: Option<u64>,

    /// Test hook: log writes fail with ENOSPC while this file exists.
    #[arg(long, hide = true)]
    pub inject_disk_full_file: Option<std::path::PathBuf>,

    /// Where the server keeps its state: the write-ahead logs and
    /// snapshots, and the generated certificates and admin kubeconfig.
    #[arg(long, default_value = "kubeshard-data")]
    pub data_dir: std::path::PathBuf,

    /// The prefix of every storage key (kube's etcd layout:
    /// `<prefix>/<resource>/<namespace>/<name>`). Objects written under
    /// one prefix are not seen under another.
    #[arg(long, default_value = kubeshard_core::keys::DEFAULT_PREFIX, value_parser = KeyLayout::new)]
    pub etcd_prefix: KeyLayout,

    /// How long an Event lives after its last write.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: Duration,

    /// How long watch history is kept (resume and list snapshots).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub watch_history_window: Duration,

    /// Most events kept per resource in each history ring.
    #[arg(long, default_value_t = 100_000)]
    pub watch_history_max_events: usize,

    /// Watches without timeoutSeconds end at a random point in [this, 2×this].
    #[arg(long, default_value = "1800s", value_parser = parse_duration)]
    pub min_request_timeout: Duration,

    /// A watcher that has data to send but whose connection accepts none
    /// for this long is cut off (its connection closed).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub watch_stall_timeout: Duration,

    /// How long a CRD's conversion webhook may take to answer before the
    /// request that needed it fails.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub conversion_webhook_timeout: Duration,

    /// How often watchers that asked for bookmarks get one.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub watch_bookmark_interval: Duration,

    /// How long an idle executor spins before parking (0 disables).
    /// Spinning makes cross-shard messages cheaper when cores are
    /// otherwise idle; with the load generator on the same two cores it
    /// steals their time and measured slower (BENCHMARKS.md), so it is off
    /// by default.
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub spin_before_park: Duration,

    /// How often the Service repair loops run after the start-up pass:
    /// leaked IPAddresses and, over etcd, leaked node ports are given
    /// back (kube's fixed 3 minutes).
    #[arg(long, default_value = "3m", value_parser = parse_duration)]
    pub service_repair_interval: Duration,

    /// Most connections open at once (0: a tenth below the process's file
    /// descriptor limit, whose soft value is raised to the hard one). At
    /// the cap a new connection closes the oldest one that authenticated
    /// nobody and has nothing in flight, or is refused when there is none.
    #[arg(long, default_value_t = 0)]
    pub max_connections: usize,

    /// A connection with nothing in flight for this long is closed
    /// (kube-apiserver's IdleTimeout; tests shorten it).
    #[arg(long, hide = true, default_value = "90s", value_parser = parse_duration)]
    pub connection_idle_timeout: Duration,

    /// An HTTP/1.1 connection that started a request but has not sent its
    /// whole head for this long is closed (kube-apiserver's
    /// ReadHeaderTimeout; tests shorten it).
    #[arg(long, hide = true, default_value = "32s", value_parser = parse_duration)]
    pub request_header_timeout: Duration,

    /// Registered IO memory per executor, in KiB (must fit in `ulimit -l`).
    #[arg(long, default_value_t = 512)]
    pub io_memory_kib: usize,

    /// Write the plain-HTTP port actually bound to this file once serving
    /// (for tests and scripts that use --insecure-port=0).
    #[arg(long)]
    pub port_file: Option<std::path::PathBuf>,

    /// Built-in controllers to run, kube-controller-manager style: `*` for
    /// all that are on by default, `name` to enable one, `-name` to
    /// disable one. Known: garbagecollector, namespace, serviceaccount,
    /// root-ca-cert-publisher, csrsigning.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    #[command(flatten)]
    pub admission: crate::admission::config::AdmissionFlags,

    #[command(flatten)]
    pub features: crate::features::FeatureFlags,

    #[command(flatten)]
    pub kubelet: crate::proxy::flags::KubeletFlags,

    /// Set the garbage collector's finalizers (`orphan`,
    /// `foregroundDeletion`) on deletes that ask for them, as
    /// kube-apiserver's flag of the same name does. Turn off only when no
    /// garbage collector runs at all, built in or external.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_garbage_collector: bool,

    /// Address advertised in discovery and in the `kubernetes` Service's
    /// Endpoints.
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,

    /// The ranges Services' cluster IPs come from: one CIDR, or two of
    /// different families (comma-separated) for dual stack, the first
    /// primary. The primary's first address is the `kubernetes` Service's.
    #[arg(long, default_value = "10.0.0.0/24", value_parser = parse_service_cidrs)]
    pub service_cluster_ip_range: ServiceCidrs,

    /// The ports NodePort and LoadBalancer Services expose on every node
    /// come from this range (both ends included).
    #[arg(long, default_value = "30000-32767", value_parser = kubeshard_core::portpool::parse_range)]
    pub service_node_port_range: (u16, u16),

    /// Calibration mode: answer every request with a fixed body of this
    /// many bytes through the same serving stack, to measure this
    /// machine's HTTP ceiling (BENCHMARKS.md).
    #[arg(long, hide = true)]
    pub hello_bytes: Option<usize>,
}

/// What handlers read at request time.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub min_request_timeout: Duration,
    pub service_repair_interval: Duration,
    pub bookmark_interval: Duration,
    pub watch_stall_timeout: Duration,
    pub bind: std::net::SocketAddr,
    pub advertise: Option<IpAddr>,
    /// Set in calibration mode (`--hello-bytes`).
    pub hello: Option<bytes::Bytes>,
    /// Deletes set the garbage collector's finalizers.
    pub enable_garbage_collector: bool,
    /// The cap on open connections, shared by the executors.
    pub conn_limit: std::sync::Arc<crate::serving::connections::ConnLimit>,
    pub conn_timeouts: crate::serving::connections::Timeouts,
    /// `--service-cluster-ip-range`: where Services' cluster IPs come
    /// from (the `kubernetes` Service has the primary range's first).
    pub service_cidrs: ServiceCidrs,
    /// `--service-node-port-range`: the node ports Services hold, shared
    /// by every executor.
    pub node_ports: std::sync::Arc<kubeshard_core::portpool::PortPool>,
    /// `--event-ttl`: how long an Event lives after its last write.
    pub event_ttl: std::time::Duration,
    /// `--watch-history-window`: how long list snapshots live.
    pub history_window: std::time::Duration,
    /// The admission chain every executor builds.
    pub admission: crate::admission::config::AdmissionConfig,
    /// Where each kind is stored (`--etcd-prefix`).
    pub keys: KeyLayout,
    /// How kubelets and other backends are reached (`--kubelet-*`).
    pub backends: std::sync::Arc<crate::proxy::flags::Backends>,
    /// The service-backed group versions the aggregator proxies.
    pub aggregator: std::sync::Arc<crate::aggregated::Aggregator>,
    /// `--conversion-webhook-timeout`.
    pub conversion_webhook_timeout: Duration,
}

impl ServerConfig {
    pub fn advertise_address(&self) -> String {
        match self.advertise {
            Some(a) => std::net::SocketAddr::new(a, self.bind.port()).to_string(),
            None => self.bind.to_string(),
        }
    }
}

/// The first usable address of a CIDR (its network address plus one), as
/// kube-apiserver gives the `kubernetes` Service.
/// Service cluster-IP ranges: the primary first, at most one per family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceCidrs(pub Vec<Cidr>);

impl ServiceCidrs {
    /// The `kubernetes` Service's address: the primary range's first.
    pub fn first_ip(&self) -> IpAddr {
        self.0[0].nth(1)
    }
}

fn parse_service_cidrs(s: &str) -> Result<ServiceCidrs, String> {
    let cidrs = s
        .split(',')
        .map(|c| c.trim().parse::<Cidr>())
        .collect::<Result<Vec<_>, _>>()?;
    match cidrs.as_slice() {
        [] => Err("no range given".into()),
        [a, b] if a.family() == b.family() => {
            Err(format!("{s:?}: two ranges must be of different families"))
        }
        [_, _, _, ..] => Err(format!("{s:?}: at most two ranges (one per family)")),
        _ if cidrs.iter().any(|c| c.usable().is_empty()) => {
            Err(format!("{s:?}: the range is too small for a service"))
        }
        _ => Ok(ServiceCidrs(cidrs)),
    }
}

#[cfg(test)]
mod cidr_tests {
    use super::parse_service_cidrs;

    fn first(s: &str) -> String {
        parse_service_cidrs(s).unwrap().first_ip().to_string()
    }

    #[test]
    fn first_address_of_a_range() {
        assert_eq!(first("10.0.0.0/24"), "10.0.0.1");
        assert_eq!(first("10.96.0.0/12"), "10.96.0.1");
        assert_eq!(first("10.96.3.7/12"), "10.96.0.1");
        assert_eq!(first("fd00::/108"), "fd00::1");
        assert_eq!(first("fd00::/108,10.0.0.0/24"), "fd00::1");
        assert!(parse_service_cidrs("10.0.0.0").is_err());
        assert!(parse_service_cidrs("10.0.0.0/32").is_err());
        assert!(parse_service_cidrs("10.0.0.0/24,10.1.0.0/24").is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_overrides_parse_as_kube_writes_them() {
        assert!(parse_server_override("/events#http://127.0.0.1:4002").is_ok());
        assert!(parse_server_override("apps/deployments#https://a:1;https://b:1").is_ok());
        for bad in ["events#http://a:1", "/events", "/events#", "/events#a;;b"] {
            assert!(parse_server_override(bad).is_err(), "{bad}");
        }
    }
}
