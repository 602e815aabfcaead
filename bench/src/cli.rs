//! Command-line flags.
//!
//! Target, load and output flags are global so they can follow the
//! subcommand (`kubeshard-bench get --url … --count 1000`); each workload
//! only adds the flags that are its own.

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "kubeshard-bench",
    version,
    about = "Load generator for any Kubernetes API server (loopback only unless --allow-remote)"
)]
pub struct Cli {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Tokio worker threads of the load generator (default: one per CPU).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    #[command(flatten)]
    Workload(Workload),
    /// Runs one workload against two targets, alternating A B A B, and
    /// prints the B/A ratios run by run and their median.
    Compare(CompareArgs),
    /// The same workloads against etcd directly (puts, ranges, watches).
    #[cfg(feature = "etcd")]
    Etcd(EtcdArgs),
    /// Serves an admission webhook that admits everything (HTTPS on
    /// loopback), for benchmarks of the webhook path.
    Webhook(crate::webhook::WebhookArgs),
    /// Serves metrics.k8s.io/v1beta1 as an extension API server behind
    /// the aggregator (HTTPS on loopback), for tests and benchmarks of
    /// the aggregation layer.
    MetricsServer(crate::metrics_server::MetricsServerArgs),
}

#[derive(Debug, Clone, Subcommand, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// POST new objects.
    Create,
    /// GET pre-created objects.
    Get(GetArgs),
    /// Update pre-created objects (GET then PUT, or PUT with the last known
    /// resourceVersion).
    Update(UpdateArgs),
    /// DELETE pre-created objects.
    Delete(ObjectsArgs),
    /// LIST N pre-created objects, unpaged and paged.
    List(ListArgs),
    /// W watchers receiving the changes of a writer.
    Watch(WatchArgs),
    /// kwok-style cluster: node leases, pod churn, informers.
    Cluster(ClusterArgs),
}

impl Workload {
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Create => "create",
            Workload::Get(_) => "get",
            Workload::Update(_) => "update",
            Workload::Delete(_) => "delete",
            Workload::List(_) => "list",
            Workload::Watch(_) => "watch",
            Workload::Cluster(_) => "cluster",
        }
    }

    /// Whether the workload only reads what it pre-creates: then every
    /// round of a comparison reads the same objects. (Fresh names each
    /// round made a LIST of N objects list N more every round: 100k,
    /// 200k, ... 900k in a 9-round `ab.sh` run.)
    pub fn reads_only(&self) -> bool {
        matches!(self, Workload::Get(_) | Workload::List(_))
    }
}

#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// API server URL (http:// or https://). Overrides the kubeconfig's server.
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// kubeconfig to take the server, CA, bearer token or client cert from.
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context (default: its current-context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Bearer token (overrides the kubeconfig's credentials).
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// Act as this user (`Impersonate-User`): load from an ordinary
    /// tenant, classified and queued as one, over the privileged port.
    #[arg(long, global = true)]
    pub impersonate: Option<String>,
    /// Do not verify the server's certificate.
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,
    /// PEM bundle of CAs to verify the server with.
    #[arg(long, global = true)]
    pub ca_file: Option<PathBuf>,
    /// HTTP/2 (prior knowledge on http://, ALPN on https://).
    #[arg(long, global = true)]
    pub http2: bool,
    /// Ask for Kubernetes protobuf on reads (GET, LIST and WATCH), as
    /// client-go's typed clients do; writes stay JSON. For the get, list
    /// and watch workloads.
    #[arg(long, global = true)]
    pub protobuf: bool,
    /// Allow a target that is not on a loopback address. Off by default:
    /// load must never leave this machine by accident.
    #[arg(long, global = true)]
    pub allow_remote: bool,
}

#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Bytes of payload in each object (ConfigMap data, else an annotation).
    #[arg(long, global = true, default_value_t = 1024)]
    pub object_size: usize,
    /// Connections to open. Default: --concurrency with HTTP/1.1 (one
    /// request in flight per connection; extra workers queue in the client
    /// and that wait counts as latency), at most 4 with HTTP/2. With
    /// --http2, watchers multiplex over this many connections of their own.
    #[arg(long, global = true)]
    pub connections: Option<usize>,
    /// Requests in flight (workers).
    #[arg(long, global = true, default_value_t = 16)]
    pub concurrency: usize,
    /// How long to run ("500ms", "10s", "2m"). Default 10s without --count.
    #[arg(long, global = true, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// How many operations to run.
    #[arg(long, global = true)]
    pub count: Option<u64>,
    /// Open loop at this many operations per second (latency measured from
    /// the intended send time). Without it: closed loop.
    #[arg(long, global = true)]
    pub rate: Option<f64>,
    /// Per-request timeout.
    #[arg(long, global = true, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Namespace of the objects.
    #[arg(long, global = true, default_value = "default")]
    pub namespace: String,
    /// Collection path to use instead of the namespace's configmaps, e.g.
    /// /apis/coordination.k8s.io/v1/namespaces/default/leases.
    #[arg(long, global = true)]
    pub resource: Option<String>,
    /// Kind of the objects at --resource (default: guessed from the path).
    #[arg(long, global = true)]
    pub kind: Option<String>,
    /// JSON file with an object to use as the template of every object.
    #[arg(long, global = true)]
    pub template: Option<PathBuf>,
    /// Name prefix of the objects this run creates (default: unique per run).
    #[arg(long, global = true)]
    pub prefix: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the results as JSON to this file.
    #[arg(long, global = true)]
    pub output: Option<PathBuf>,
    /// Write SVG charts (latency percentiles, throughput over time) here.
    #[arg(long, global = true)]
    pub charts: Option<PathBuf>,
    /// pid of the server, to report its CPU seconds and peak RSS from /proc.
    #[arg(long, global = true)]
    pub server_pid: Option<u32>,
    /// No progress bar.
    #[arg(long, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct ObjectsArgs {
    /// Objects to pre-create.
    #[arg(long, default_value_t = 1000)]
    pub objects: usize,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct GetArgs {
    /// Objects to pre-create and read round-robin.
    #[arg(long, default_value_t = 100)]
    pub objects: usize,
    /// resourceVersion query parameter ("0": served from the watch cache).
    #[arg(long)]
    pub resource_version: Option<String>,
    /// Read objects that exist already (`<prefix>-<i>`, see --prefix)
    /// instead of creating them first: a read-only API, such as an
    /// extension server's.
    #[arg(long)]
    pub existing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpdateMode {
    /// GET the object, then PUT it back changed with its resourceVersion.
    GetPut,
    /// PUT with the resourceVersion of our last write (GET only on 409).
    Put,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct UpdateArgs {
    /// Objects to pre-create and update (each worker owns a disjoint subset).
    #[arg(long, default_value_t = 100)]
    pub objects: usize,
    #[arg(long, value_enum, default_value_t = UpdateMode::GetPut)]
    pub mode: UpdateMode,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct ListArgs {
    /// Objects to pre-create before listing.
    #[arg(long, default_value_t = 1000)]
    pub objects: usize,
    /// Page size of the paged lists (0: unpaged lists only).
    #[arg(long, default_value_t = 500)]
    pub page_size: usize,
    /// labelSelector of every list. Pre-created objects carry
    /// `group=g0`…`g9`, so `group=g1` selects a tenth of them.
    #[arg(long)]
    pub label_selector: Option<String>,
    /// Skip unpaged lists.
    #[arg(long)]
    pub paged_only: bool,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct WatchArgs {
    /// Watchers.
    #[arg(long, default_value_t = 10)]
    pub watchers: usize,
    /// Objects the writer mutates.
    #[arg(long, default_value_t = 10)]
    pub objects: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BindMode {
    /// PUT the pod with spec.nodeName set: what permissive stand-ins
    /// allow; kube-apiserver and kubeshard refuse it (a pod's spec is
    /// immutable but for images and a few more fields).
    Update,
    /// POST pods/NAME/binding, as the scheduler does with kube-apiserver.
    Binding,
}

#[derive(Debug, Clone, Args, Serialize)]
pub struct ClusterArgs {
    /// Nodes (each renews its Lease in kube-node-lease).
    #[arg(long, default_value_t = 100)]
    pub nodes: usize,
    /// Lease renewal interval of each node.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub lease_interval: Duration,
    /// New pods per second (each created, scheduled, then status-updated).
    #[arg(long, default_value_t = 20.0)]
    pub churn: f64,
    /// Pods kept alive: beyond it, each new pod deletes the oldest one.
    #[arg(long, default_value_t = 1000)]
    pub pods: u64,
    /// Informers doing list+watch on pods.
    #[arg(long, default_value_t = 5)]
    pub informers: usize,
    #[arg(long, value_enum, default_value_t = BindMode::Binding)]
    pub bind: BindMode,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// URL of target A.
    #[arg(long)]
    pub a: String,
    /// URL of target B.
    #[arg(long)]
    pub b: String,
    /// pid of server A (CPU and RSS in the results).
    #[arg(long)]
    pub a_pid: Option<u32>,
    /// pid of server B.
    #[arg(long)]
    pub b_pid: Option<u32>,
    /// Runs per target.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// B's collection instead of --resource (compare two kinds on one
    /// server, e.g. a custom resource against ConfigMaps).
    #[arg(long)]
    pub b_resource: Option<String>,
    /// Kind of the objects at --b-resource.
    #[arg(long)]
    pub b_kind: Option<String>,
    /// B's object template instead of --template.
    #[arg(long)]
    pub b_template: Option<PathBuf>,
    /// B's payload size instead of --object-size (to compare objects of
    /// the same total size when B's template carries fields of its own).
    #[arg(long)]
    pub b_object_size: Option<usize>,
    #[command(subcommand)]
    pub workload: Workload,
}

#[cfg(feature = "etcd")]
#[derive(Debug, Clone, Args)]
pub struct EtcdArgs {
    /// etcd endpoint (loopback unless --allow-remote).
    #[arg(long, default_value = "http://127.0.0.1:2379")]
    pub endpoint: String,
    #[command(subcommand)]
    pub op: EtcdOp,
}

#[cfg(feature = "etcd")]
#[derive(Debug, Clone, Subcommand)]
pub enum EtcdOp {
    /// Txn put-if-absent of new keys (what kube-apiserver does on create).
    Create,
    /// Linearizable range of one key.
    Get(ObjectsArgs),
    /// Range over a prefix of N keys, unpaged and paged.
    List(ListArgs),
    /// W watchers on a prefix while a writer puts.
    Watch(WatchArgs),
}

/// "300ms", "10s", "5m", "1h" or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("invalid duration: {s}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("invalid duration unit in {s}")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration: {s}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_follow_the_subcommand() {
        let cli = Cli::try_parse_from([
            "kubeshard-bench",
            "get",
            "--url",
            "http://127.0.0.1:1",
            "--count",
            "5",
            "--objects",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.load.count, Some(5));
        assert!(matches!(
            cli.command,
            Command::Workload(Workload::Get(GetArgs { objects: 3, .. }))
        ));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("1x").is_err());
    }
}
