//! The etcd target: the create/get/list/watch workloads expressed the way
//! kube-apiserver's storage layer talks to etcd, so kubeshard can be
//! measured against the store kube-apiserver sits on, with the same object
//! size, concurrency and scheduler.
//!
//! - create: a Txn "create_revision == 0 then put" (kube's create);
//! - get: a linearizable range of one key (kube's quorum read);
//! - list: a range over the run's key prefix, unpaged and paged by `limit`
//!   from the last key seen;
//! - watch: W watches on the prefix while a writer puts, delivery latency
//!   measured from the put's acknowledgement to each event.
//!
//! Keys are `/registry/configmaps/<namespace>/<prefix>-<i>`, values the
//! JSON ConfigMap the HTTP workloads send.

use crate::cli::{Cli, EtcdArgs, EtcdOp, ListArgs, LoadArgs, WatchArgs};
use crate::objects::Resource;
use crate::procfs::Sampler;
use crate::report::{RunConfig, RunResult};
use crate::scheduler::{self, timed, Done, Plan, Step};
use crate::stats::{Outcome, Stats};
use crate::target::Target;
use crate::watcher::{self, AckBook, DeliveryLog, Position};
use crate::workloads::watch::DELIVERY;
use crate::{progress::Progress, runner};
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, KvClient, Txn, TxnOp, WatchOptions,
};
use serde_json::{json, Map};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

#[derive(Clone)]
struct Ectx {
    /// One client per connection (each is one HTTP/2 channel).
    clients: Arc<Vec<Client>>,
    endpoint: String,
    /// Watchers share the load's connections instead of one each.
    multiplex: bool,
    load: LoadArgs,
    /// Key prefix of this run's objects.
    keys: String,
    value: Bytes,
    stats: Stats,
    quiet: bool,
}

impl Ectx {
    fn client(&self, worker: usize) -> Client {
        self.clients[worker % self.clients.len()].clone()
    }

    /// A KV client on the worker's connection, taking responses of any
    /// size (a big unpaged range exceeds gRPC's default 4 MiB).
    fn kv(&self, worker: usize) -> KvClient {
        self.client(worker)
            .kv_client()
            .max_decoding_message_size(usize::MAX)
    }

    fn key(&self, i: u64) -> String {
        format!("{}{i}", self.keys)
    }

    fn plan(&self, name: &'static str) -> Plan {
        Plan {
            name,
            workers: self.load.concurrency,
            count: self.load.count,
            duration: self.load.duration,
            rate: self.load.rate,
            grace: self.load.timeout,
        }
    }

    async fn drive<F, Fut>(&self, plan: &Plan, op: F) -> scheduler::Finished
    where
        F: Fn(scheduler::Ticket) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Done> + Send + 'static,
    {
        let p = Progress::new(plan.name, plan.count, plan.duration, self.quiet);
        let f = scheduler::run(plan, &self.stats, &p, op).await;
        p.finish();
        f
    }

    /// Runs an etcd call within the request timeout.
    async fn call<T>(
        &self,
        fut: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, Outcome> {
        match tokio::time::timeout(self.load.timeout, fut).await {
            Err(_) => Err(Outcome::Failed("timeout")),
            Ok(Err(e)) => Err(Outcome::Failed(kind(&e))),
            Ok(Ok(v)) => Ok(v),
        }
    }
}

fn kind(e: &etcd_client::Error) -> &'static str {
    use etcd_client::Error as E;
    // gRPC status codes (tonic is not re-exported: match the numbers).
    const CODES: [&str; 17] = [
        "ok",
        "cancelled",
        "unknown",
        "invalid-argument",
        "deadline-exceeded",
        "not-found",
        "already-exists",
        "permission-denied",
        "resource-exhausted",
        "failed-precondition",
        "aborted",
        "out-of-range",
        "unimplemented",
        "internal",
        "unavailable",
        "data-loss",
        "unauthenticated",
    ];
    match e {
        E::GRpcStatus(s) => CODES
            .get(i32::from(s.code()) as usize)
            .copied()
            .unwrap_or("grpc"),
        E::TransportError(_) | E::IoError(_) => "transport",
        _ => "etcd",
    }
}

async fn connect(endpoint: &str, timeout: Duration) -> Result<Client> {
    let opts = ConnectOptions::new()
        .with_connect_timeout(timeout)
        .with_timeout(timeout);
    Client::connect([endpoint], Some(opts))
        .await
        .with_context(|| format!("connecting to etcd at {endpoint}"))
}

pub async fn run(cli: &Cli, args: &EtcdArgs) -> Result<RunResult> {
    // etcd speaks gRPC: always HTTP/2, so connections default as for h2.
    let target = Target::parse(&args.endpoint, cli.target.allow_remote)?;
    if target.tls {
        bail!("the etcd target speaks plain http:// only");
    }
    let load = runner::resolve(&cli.load, true)?;
    let connections = load.connections.expect("resolved");
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(connect(&args.endpoint, load.timeout).await?);
    }
    let prefix = load.prefix.clone().expect("resolved");
    let resource = Resource::new(
        &format!("/api/v1/namespaces/{}/configmaps", load.namespace),
        None,
        None,
        load.object_size,
    )?;
    let start = Instant::now();
    let ctx = Ectx {
        clients: Arc::new(clients),
        endpoint: args.endpoint.clone(),
        multiplex: cli.target.http2,
        keys: format!("/registry/configmaps/{}/{prefix}-", load.namespace),
        value: resource.body(&format!("{prefix}-x"), &[]),
        load: load.clone(),
        stats: Stats::new(start),
        quiet: cli.output.quiet,
    };
    let sampler = cli.output.server_pid.and_then(Sampler::start);
    let me = Sampler::start(std::process::id());
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut extra = Map::new();
    let (name, primary) = match &args.op {
        EtcdOp::Create => {
            create(&ctx).await;
            ("create", "create")
        }
        EtcdOp::Get(a) => {
            get(&ctx, a.objects.max(1), &mut extra).await?;
            ("get", "get")
        }
        EtcdOp::List(a) => {
            list(&ctx, a, &mut extra).await?;
            ("list", if a.paged_only { "list-paged" } else { "list" })
        }
        EtcdOp::Watch(a) => {
            watch(&ctx, a, &mut extra).await?;
            ("watch", "watch-delivery")
        }
    };
    let end = Instant::now();
    Ok(RunResult {
        tool: format!("kubeshard-bench {}", env!("CARGO_PKG_VERSION")),
        workload: name.to_string(),
        target: format!("etcd {}", args.endpoint),
        protocol: "grpc".into(),
        config: RunConfig::new(
            &load,
            connections,
            ctx.keys.clone(),
            prefix,
            json!({ "op": name }),
        ),
        started_unix_s,
        elapsed_s: (end - start).as_secs_f64(),
        primary: primary.into(),
        operations: ctx.stats.summarize(end),
        extra,
        server: sampler.and_then(|s| s.finish(end - start)),
        client: me.and_then(|s| s.finish(end - start)),
    })
}

/// Txn put-if-absent of key `i`; the put's revision.
async fn create_key(c: &Ectx, worker: usize, i: u64) -> Result<i64, Outcome> {
    let key = c.key(i);
    let txn = Txn::new()
        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(key, c.value.to_vec(), None)]);
    let mut kv = c.kv(worker);
    let r = c.call(kv.txn(txn)).await?;
    if !r.succeeded() {
        return Err(Outcome::Failed("exists"));
    }
    Ok(r.header().map_or(0, |h| h.revision()))
}

async fn create(c: &Ectx) {
    let plan = c.plan("create");
    let c2 = c.clone();
    c.drive(&plan, move |t| {
        let c = c2.clone();
        async move {
            match create_key(&c, t.worker, t.seq).await {
                Ok(_) => Done::from(Outcome::Ok),
                Err(o) => Done::from(o),
            }
        }
    })
    .await;
}

/// Creates keys `0..n`, not measured as part of the workload.
async fn precreate(c: &Ectx, n: usize, extra: &mut Map<String, serde_json::Value>) -> Result<i64> {
    let setup = Stats::new(Instant::now());
    let plan = Plan {
        count: Some(n as u64),
        duration: None,
        rate: None,
        ..c.plan("setup-create")
    };
    let max_rev = Arc::new(AtomicU64::new(0));
    let (c2, mr) = (c.clone(), max_rev.clone());
    let p = Progress::new("setup", plan.count, None, c.quiet);
    let f = scheduler::run(&plan, &setup, &p, move |t| {
        let (c, mr) = (c2.clone(), mr.clone());
        async move {
            let mut kv = c.kv(t.worker);
            match c.call(kv.put(c.key(t.seq), c.value.to_vec(), None)).await {
                Ok(r) => {
                    mr.fetch_max(
                        r.header().map_or(0, |h| h.revision()) as u64,
                        Ordering::Relaxed,
                    );
                    Done::from(Outcome::Ok)
                }
                Err(o) => Done::from(o),
            }
        }
    })
    .await;
    p.finish();
    let sum = setup.summarize(f.ended).remove(0);
    extra.insert("setup_objects".into(), json!(n));
    extra.insert("setup_per_s".into(), json!(sum.throughput_per_s));
    if sum.ok < n as u64 {
        bail!(
            "pre-creating {n} keys: {} succeeded, errors {:?}",
            sum.ok,
            sum.errors
        );
    }
    Ok(max_rev.load(Ordering::Relaxed) as i64)
}

async fn get(c: &Ectx, n: usize, extra: &mut Map<String, serde_json::Value>) -> Result<()> {
    precreate(c, n, extra).await?;
    let plan = c.plan("get");
    let c2 = c.clone();
    c.drive(&plan, move |t| {
        let c = c2.clone();
        async move {
            let mut kv = c.kv(t.worker);
            match c.call(kv.get(c.key(t.seq % n as u64), None)).await {
                Ok(r) if r.kvs().len() == 1 => Done::from(Outcome::Ok),
                Ok(_) => Done::from(Outcome::Failed("missing")),
                Err(o) => Done::from(o),
            }
        }
    })
    .await;
    Ok(())
}

/// The first key after every key that starts with `prefix`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

async fn list(c: &Ectx, a: &ListArgs, extra: &mut Map<String, serde_json::Value>) -> Result<()> {
    precreate(c, a.objects, extra).await?;
    if a.label_selector.is_some() {
        extra.insert(
            "note".into(),
            json!("etcd has no label selectors: --label-selector ignored"),
        );
    }
    let items = Arc::new(AtomicU64::new(0));
    if !a.paged_only {
        let plan = c.plan("list");
        let (c2, it) = (c.clone(), items.clone());
        c.drive(&plan, move |t| {
            let (c, it) = (c2.clone(), it.clone());
            async move {
                let mut kv = c.kv(t.worker);
                let opts = GetOptions::new().with_prefix();
                match c.call(kv.get(c.keys.clone(), Some(opts))).await {
                    Ok(r) => {
                        it.store(r.kvs().len() as u64, Ordering::Relaxed);
                        Done::from(Outcome::Ok)
                    }
                    Err(o) => Done::from(o),
                }
            }
        })
        .await;
        extra.insert(
            "items_per_list".into(),
            json!(items.load(Ordering::Relaxed)),
        );
    }
    if a.page_size > 0 {
        let plan = c.plan("list-paged");
        let (c2, it, page) = (c.clone(), items.clone(), a.page_size as i64);
        c.drive(&plan, move |t| {
            let (c, it) = (c2.clone(), it.clone());
            async move { paged(&c, t.worker, page, &it).await }
        })
        .await;
        extra.insert("page_size".into(), json!(a.page_size));
        extra.insert(
            "items_per_paged_list".into(),
            json!(items.load(Ordering::Relaxed)),
        );
    }
    Ok(())
}

/// One full paged range, every page a step, all at the first page's
/// revision (as kube's paged lists are).
async fn paged(c: &Ectx, worker: usize, page: i64, items: &AtomicU64) -> Done {
    let mut kv = c.kv(worker);
    let end = prefix_end(&c.keys);
    let (mut from, mut rev, mut n) = (c.keys.as_bytes().to_vec(), 0i64, 0u64);
    let mut steps = Vec::new();
    loop {
        let mut opts = GetOptions::new().with_range(end.clone()).with_limit(page);
        if rev > 0 {
            opts = opts.with_revision(rev);
        }
        let (r, took) = timed(c.call(kv.get(from.clone(), Some(opts)))).await;
        let outcome = r.as_ref().map_or_else(|o| *o, |_| Outcome::Ok);
        steps.push(Step {
            op: "list-page",
            latency: took,
            outcome,
        });
        let r = match r {
            Ok(r) => r,
            Err(o) => return Done { outcome: o, steps },
        };
        rev = r.header().map_or(0, |h| h.revision());
        n += r.kvs().len() as u64;
        match (r.more(), r.kvs().last()) {
            (true, Some(last)) => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => break,
        }
    }
    items.store(n, Ordering::Relaxed);
    Done {
        outcome: Outcome::Ok,
        steps,
    }
}

async fn watch(c: &Ectx, a: &WatchArgs, extra: &mut Map<String, serde_json::Value>) -> Result<()> {
    let n = a.objects.max(1);
    let start_rev = precreate(c, n, extra).await?;
    let acks = Arc::new(AckBook::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut positions = Vec::new();
    let mut tasks = Vec::new();
    // Multiplexed watchers share connections of their own, so the writer
    // never queues behind them.
    let mut shared = Vec::new();
    if c.multiplex {
        for _ in 0..c.clients.len() {
            shared.push(connect(&c.endpoint, c.load.timeout).await?);
        }
    }
    for i in 0..a.watchers {
        // Each watcher on a connection of its own, unless multiplexing.
        let client = if c.multiplex {
            shared[i % shared.len()].clone()
        } else {
            connect(&c.endpoint, c.load.timeout).await?
        };
        let mut wc = client.watch_client();
        let opts = WatchOptions::new()
            .with_prefix()
            .with_start_revision(start_rev + 1);
        let mut stream = c
            .call(wc.watch(c.keys.clone(), Some(opts)))
            .await
            .map_err(|o| anyhow::anyhow!("opening watch {i}: {o:?}"))?;
        let pos = Position::default();
        positions.push(pos.clone());
        let mut log = DeliveryLog::new(acks.clone(), c.stats.clone(), DELIVERY);
        let mut stop = stop_rx.clone();
        tasks.push(tokio::spawn(async move {
            let _keep = client;
            let mut events = 0u64;
            loop {
                let msg = tokio::select! {
                    m = stream.message() => m,
                    _ = stop.changed() => break,
                };
                let Ok(Some(resp)) = msg else { break };
                let now = Instant::now();
                for ev in resp.events() {
                    let Some(kv) = ev.kv() else { continue };
                    let rev = kv.mod_revision() as u64;
                    events += 1;
                    pos.set(rev);
                    log.event(rev, now);
                }
            }
            log.finish();
            events
        }));
    }
    let mut plan = c.plan("write");
    plan.workers = plan.workers.min(n);
    let (c2, ak) = (c.clone(), acks.clone());
    let f = c
        .drive(&plan, move |t| {
            let (c, acks) = (c2.clone(), ak.clone());
            async move {
                let mut kv = c.kv(t.worker);
                let key = c.key(t.seq % n as u64);
                let sent = Instant::now();
                match c.call(kv.put(key, c.value.to_vec(), None)).await {
                    Ok(r) => {
                        let rev = r.header().map_or(0, |h| h.revision()) as u64;
                        acks.ack(rev, sent, Instant::now());
                        Done::from(Outcome::Ok)
                    }
                    Err(o) => Done::from(o),
                }
            }
        })
        .await;
    let behind = watcher::wait_for(&positions, acks.max(), Duration::from_secs(5)).await;
    let drained = Instant::now();
    let _ = stop_tx.send(true);
    let mut delivered = 0;
    for t in tasks {
        delivered += t.await.unwrap_or(0);
    }
    c.stats.set_window(DELIVERY.from_ack, f.started, drained);
    c.stats.set_window(DELIVERY.from_send, f.started, drained);
    let writes = c.stats.ok_count("write");
    let secs = (drained - f.started).as_secs_f64().max(1e-9);
    extra.insert("watchers".into(), json!(a.watchers));
    extra.insert("writes".into(), json!(writes));
    extra.insert("events_delivered".into(), json!(delivered));
    extra.insert("events_per_s".into(), json!(delivered as f64 / secs));
    extra.insert("events_expected".into(), json!(writes * a.watchers as u64));
    extra.insert("watchers_behind_at_end".into(), json!(behind));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end("/a/b-"), b"/a/b.".to_vec());
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
    }
}
