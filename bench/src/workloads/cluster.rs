//! kwok-style cluster simulation: what a big, idle-ish cluster does to its
//! control plane.
//!
//! - N nodes, each renewing its Lease in kube-node-lease every
//!   `--lease-interval` (open loop at N/interval per second);
//! - pods arriving at `--churn` per second, each created, scheduled (an
//!   update setting spec.nodeName, or a binding) and marked Running through
//!   the status subresource; beyond `--pods` alive, each new pod deletes
//!   the oldest one;
//! - M informers listing pods, then watching them, measuring how long after
//!   a pod write's acknowledgement they receive it.

use super::crud::remember_rv;
use super::watch::Fleet;
use super::{ensure_namespace, Ctx, Extra};
use crate::cli::{BindMode, ClusterArgs};
use crate::client::{ClientError, Response};
use crate::objects::{self, ListHead, RUN_LABEL};
use crate::scheduler::{timed, Done, Plan, Step};
use crate::stats::{Outcome, Stats};
use crate::watcher::DeliveryOps;
use anyhow::{bail, Result};
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

const LEASE_NS: &str = "kube-node-lease";
/// Operation names of informer delivery latencies.
pub const DELIVERY: DeliveryOps = DeliveryOps {
    from_ack: "informer-delivery",
    from_send: "informer-delivery-from-send",
};

pub async fn run(ctx: &Ctx, a: &ClusterArgs) -> Result<Extra> {
    let mut extra = Extra::new();
    let ns = ctx.load.namespace.clone();
    ensure_namespace(&ctx.client, LEASE_NS).await;
    ensure_namespace(&ctx.client, &ns).await;
    let nodes = a.nodes.max(1);
    let lease_rvs = setup_nodes(ctx, nodes, &mut extra).await?;

    // Informers: list, then watch from the list's resourceVersion.
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let selected = format!("{pods}?labelSelector={}", ctx.run_selector());
    let mut list_rv = 0;
    for _ in 0..a.informers {
        let (r, took) = timed(ctx.client.request(0, Method::GET, &selected, None)).await;
        ctx.stats.record("informer-list", took, Outcome::of(&r));
        match r
            .ok()
            .filter(Response::ok)
            .and_then(|r| serde_json::from_slice::<ListHead>(&r.body).ok())
        {
            Some(h) => list_rv = h.metadata.resource_version.parse().unwrap_or(0),
            None => bail!("informer list of {selected} failed"),
        }
    }
    let (fleet, tallies) = Fleet::start(ctx, a.informers, &selected, list_rv, DELIVERY).await?;
    let acks = fleet.acks.clone();

    // Lease renewals and pod churn, side by side for the run's duration.
    // A --count bounds the pods; the leases renew for as long as they run.
    let churn_secs = ctx
        .load
        .count
        .map(|n| Duration::from_secs_f64(n as f64 / a.churn.max(1e-3)));
    let lease_plan = Plan {
        rate: Some(nodes as f64 / a.lease_interval.as_secs_f64().max(1e-3)),
        count: None,
        duration: ctx.load.duration.or(churn_secs),
        ..ctx.plan("lease-renew")
    };
    let pod_plan = Plan {
        rate: Some(a.churn.max(1e-3)),
        ..ctx.plan("pod-lifecycle")
    };
    let c = ctx.clone();
    let leases = ctx.drive(&lease_plan, move |t| {
        let (c, lease_rvs) = (c.clone(), lease_rvs.clone());
        async move { renew(&c, t.worker, (t.seq % nodes as u64) as usize, &lease_rvs).await }
    });
    let (c, a2, ns2) = (ctx.clone(), a.clone(), ns.clone());
    let acks2 = acks.clone();
    let churn = ctx.drive(&pod_plan, move |t| {
        let (c, a, ns, acks) = (c.clone(), a2.clone(), ns2.clone(), acks2.clone());
        async move { pod_lifecycle(&c, &a, &ns, t.worker, t.seq, nodes, &acks).await }
    });
    let (_, pf) = tokio::join!(leases, churn);
    let summary = fleet.finish(tallies).await;
    let secs = summary.close_windows(&ctx.stats, &DELIVERY, pf.started);
    extra.insert("nodes".into(), json!(nodes));
    extra.insert("informers".into(), json!(a.informers));
    extra.insert("lease_renewals_per_s".into(), json!(lease_plan.rate));
    extra.insert("pod_churn_per_s".into(), json!(pod_plan.rate));
    extra.insert("pods_started".into(), json!(pf.issued));
    summary.report(&mut extra, 0, secs);
    // Informers see every pod write, not a fixed number per write.
    extra.remove("events_expected");
    extra.remove("writes");
    extra.remove("events_missing");
    Ok(extra)
}

/// Creates the nodes and their Leases (measured apart, as setup).
async fn setup_nodes(ctx: &Ctx, nodes: usize, extra: &mut Extra) -> Result<Arc<Vec<AtomicU64>>> {
    let rvs: Arc<Vec<AtomicU64>> = Arc::new((0..nodes).map(|_| AtomicU64::new(0)).collect());
    let setup = Stats::new(Instant::now());
    let plan = Plan {
        name: "setup-node",
        count: Some(nodes as u64),
        duration: None,
        rate: None,
        ..ctx.plan("setup-node")
    };
    let progress = crate::progress::Progress::new("nodes", plan.count, None, ctx.quiet);
    let (c, out) = (ctx.clone(), rvs.clone());
    let f = crate::scheduler::run(&plan, &setup, &progress, move |t| {
        let (c, out) = (c.clone(), out.clone());
        async move {
            let name = node_name(&c, t.seq as usize);
            let node = json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {RUN_LABEL: c.prefix, "type": "kwok"}},
                "status": {
                    "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                    "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}]
                }
            });
            let r = c
                .client
                .request(t.worker, Method::POST, "/api/v1/nodes", Some(bytes(&node)))
                .await;
            if !Outcome::of(&r).is_ok() && !matches!(&r, Ok(x) if x.status == 409) {
                return Done::from(Outcome::of(&r));
            }
            let lease = lease_body(&c, &name, None);
            let r = c
                .client
                .request(t.worker, Method::POST, &lease_path(None), Some(lease))
                .await;
            remember_rv(&r, &out[t.seq as usize]);
            Done::from(Outcome::of(&r))
        }
    })
    .await;
    progress.finish();
    let sum = setup.summarize(f.ended).remove(0);
    extra.insert("setup_nodes_seconds".into(), json!(sum.seconds));
    if sum.ok < nodes as u64 {
        bail!(
            "creating {nodes} nodes and leases: {} succeeded, errors {:?}",
            sum.ok,
            sum.errors
        );
    }
    Ok(rvs)
}

fn node_name(c: &Ctx, i: usize) -> String {
    format!("{}-node-{i}", c.prefix)
}

fn lease_path(name: Option<&str>) -> String {
    match name {
        Some(n) => format!("/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{n}"),
        None => format!("/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases"),
    }
}

fn lease_body(c: &Ctx, node: &str, rv: Option<u64>) -> Bytes {
    let mut l = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": node, "namespace": LEASE_NS, "labels": {RUN_LABEL: c.prefix}},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": micro_time()}
    });
    if let Some(rv) = rv {
        l["metadata"]["resourceVersion"] = json!(rv.to_string());
    }
    bytes(&l)
}

/// A node renews its Lease: PUT with the last resourceVersion, refreshed
/// by a GET after a conflict.
async fn renew(c: &Ctx, slot: usize, node: usize, rvs: &[AtomicU64]) -> Done {
    let name = node_name(c, node);
    let path = lease_path(Some(&name));
    let body = lease_body(c, &name, Some(rvs[node].load(Ordering::Relaxed)));
    let r = c.client.request(slot, Method::PUT, &path, Some(body)).await;
    remember_rv(&r, &rvs[node]);
    if matches!(&r, Ok(x) if x.status == 409) {
        let g = c.client.request(slot, Method::GET, &path, None).await;
        remember_rv(&g, &rvs[node]);
    }
    Done::from(Outcome::of(&r))
}

/// One pod's life: create, schedule, run; and the deletion of the pod
/// that fell out of the steady-state window.
async fn pod_lifecycle(
    c: &Ctx,
    a: &ClusterArgs,
    ns: &str,
    slot: usize,
    seq: u64,
    nodes: usize,
    acks: &crate::watcher::AckBook,
) -> Done {
    let name = format!("{}-pod-{seq}", c.prefix);
    let coll = format!("/api/v1/namespaces/{ns}/pods");
    let path = format!("{coll}/{name}");
    let node = node_name(c, (seq % nodes as u64) as usize);
    let mut steps = Vec::with_capacity(4);
    let mut step = |op: &'static str, r: &Result<Response, ClientError>, took| {
        let outcome = Outcome::of(r);
        steps.push(Step {
            op,
            latency: took,
            outcome,
        });
        if let Ok(resp) = r {
            if let (true, Some(rv)) = (resp.ok(), objects::resource_version(&resp.body)) {
                let now = Instant::now();
                acks.ack(rv, now - took, now);
            }
        }
        outcome
    };

    let pod = pod_body(c, ns, &name);
    let (r, t) = timed(c.client.request(slot, Method::POST, &coll, Some(pod))).await;
    if !step("pod-create", &r, t).is_ok() {
        return fail(r, steps);
    }
    let mut current = r.expect("checked").body;
    match a.bind {
        BindMode::Update => {
            let Some(b) = edit(&current, |p| p["spec"]["nodeName"] = json!(node)) else {
                return bad(steps);
            };
            let (r, t) = timed(c.client.request(slot, Method::PUT, &path, Some(b))).await;
            if !step("pod-schedule", &r, t).is_ok() {
                return fail(r, steps);
            }
            current = r.expect("checked").body;
        }
        BindMode::Binding => {
            let b = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
            let (r, t) = timed(c.client.request(
                slot,
                Method::POST,
                &format!("{path}/binding"),
                Some(bytes(&b)),
            ))
            .await;
            if !step("pod-schedule", &r, t).is_ok() {
                return fail(r, steps);
            }
            let (r, t) = timed(c.client.request(slot, Method::GET, &path, None)).await;
            if !step("pod-get", &r, t).is_ok() {
                return fail(r, steps);
            }
            current = r.expect("checked").body;
        }
    }
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let ip = format!(
        "10.{}.{}.{}",
        (seq >> 16) & 255,
        (seq >> 8) & 255,
        seq & 255
    );
    let Some(b) = edit(&current, |p| {
        p["status"] = json!({"phase": "Running", "podIP": ip, "hostIP": "10.255.0.1", "startTime": now,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]});
    }) else {
        return bad(steps);
    };
    let (r, t) = timed(
        c.client
            .request(slot, Method::PUT, &format!("{path}/status"), Some(b)),
    )
    .await;
    if !step("pod-status", &r, t).is_ok() {
        return fail(r, steps);
    }
    if seq >= a.pods {
        let old = format!(
            "{coll}/{}-pod-{}?gracePeriodSeconds=0",
            c.prefix,
            seq - a.pods
        );
        let (r, t) = timed(c.client.request(slot, Method::DELETE, &old, None)).await;
        if !step("pod-delete", &r, t).is_ok() {
            return fail(r, steps);
        }
    }
    Done {
        outcome: Outcome::Ok,
        steps,
    }
}

fn pod_body(c: &Ctx, ns: &str, name: &str) -> Bytes {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {RUN_LABEL: c.prefix, "app": "sim"}},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
        }
    });
    if c.load.object_size > 0 {
        objects::set_annotation(
            &mut p,
            "kubeshard-bench/payload",
            &"x".repeat(c.load.object_size),
        );
    }
    bytes(&p)
}

/// The object in `body`, changed by `f`, as bytes.
fn edit(body: &[u8], f: impl FnOnce(&mut Value)) -> Option<Bytes> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    f(&mut v);
    Some(bytes(&v))
}

fn bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).expect("serializable"))
}

fn fail(r: Result<Response, ClientError>, steps: Vec<Step>) -> Done {
    Done {
        outcome: Outcome::of(&r),
        steps,
    }
}

fn bad(steps: Vec<Step>) -> Done {
    Done {
        outcome: Outcome::Failed("bad-response"),
        steps,
    }
}

/// metav1.MicroTime, as Lease.spec.renewTime wants it.
fn micro_time() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}
