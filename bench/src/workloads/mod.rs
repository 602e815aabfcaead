//! The workloads, and what they share: the run context, object naming and
//! pre-creating the objects a workload reads or changes.

pub mod cluster;
pub mod crud;
pub mod list;
pub mod watch;

use crate::cli::{LoadArgs, Workload};
use crate::client::Client;
use crate::objects::{self, Resource, RUN_LABEL};
use crate::progress::Progress;
use crate::scheduler::{self, Done, Plan};
use crate::stats::{Outcome, Stats};
use anyhow::{bail, Result};
use http::Method;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Extra figures a workload reports besides per-operation stats.
pub type Extra = Map<String, Value>;

/// Everything a workload runs with. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    pub client: Client,
    /// With defaults resolved: a duration or a count is always set.
    pub load: LoadArgs,
    pub resource: Resource,
    /// Names of this run's objects start with it.
    pub prefix: String,
    pub stats: Stats,
    pub quiet: bool,
}

impl Ctx {
    /// The load flags as a scheduler plan for operation `name`.
    pub fn plan(&self, name: &'static str) -> Plan {
        Plan {
            name,
            workers: self.load.concurrency.max(1),
            count: self.load.count,
            duration: self.load.duration,
            rate: self.load.rate,
            grace: self.load.timeout,
        }
    }

    pub fn progress(&self, plan: &Plan) -> Progress {
        Progress::new(plan.name, plan.count, plan.duration, self.quiet)
    }

    /// Runs `plan` with a progress bar.
    pub async fn drive<F, Fut>(&self, plan: &Plan, op: F) -> scheduler::Finished
    where
        F: Fn(scheduler::Ticket) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Done> + Send + 'static,
    {
        let p = self.progress(plan);
        let f = scheduler::run(plan, &self.stats, &p, op).await;
        p.finish();
        f
    }

    /// Name of pre-created object `i`.
    pub fn name(&self, i: usize) -> String {
        format!("{}-{i}", self.prefix)
    }

    /// Labels of pre-created object `i`: the run label and one of ten groups.
    pub fn labels(&self, i: usize) -> [(&'static str, String); 2] {
        [
            (RUN_LABEL, self.prefix.clone()),
            ("group", format!("g{}", i % 10)),
        ]
    }

    /// The run's label selector, query-escaped.
    pub fn run_selector(&self) -> String {
        objects::query_escape(&format!("{RUN_LABEL}={}", self.prefix))
    }
}

/// Borrowed form of [`Ctx::labels`] for [`Resource::body`].
pub fn label_refs<'a>(l: &'a [(&'static str, String); 2]) -> [(&'static str, &'a str); 2] {
    [(l[0].0, l[0].1.as_str()), (l[1].0, l[1].1.as_str())]
}

/// Runs workload `w`.
pub async fn run(ctx: &Ctx, w: &Workload) -> Result<Extra> {
    ensure_namespace_of(&ctx.client, &ctx.resource.collection).await;
    match w {
        Workload::Create => crud::create(ctx).await,
        Workload::Get(a) => crud::get(ctx, a).await,
        Workload::Update(a) => crud::update(ctx, a).await,
        Workload::Delete(a) => crud::delete(ctx, a).await,
        Workload::List(a) => list::run(ctx, a).await,
        Workload::Watch(a) => watch::run(ctx, a).await,
        Workload::Cluster(a) => cluster::run(ctx, a).await,
    }
}

/// Creates the namespace a collection path lives in, if it has one and it
/// is missing (best effort: a server may not let us, and it may exist).
pub async fn ensure_namespace_of(client: &Client, collection: &str) {
    let parts: Vec<&str> = collection.split('/').collect();
    if let Some(i) = parts.iter().position(|p| *p == "namespaces") {
        if let Some(ns) = parts.get(i + 1).filter(|_| i + 2 < parts.len()) {
            ensure_namespace(client, ns).await;
        }
    }
}

pub async fn ensure_namespace(client: &Client, ns: &str) {
    let path = format!("/api/v1/namespaces/{ns}");
    if let Ok(r) = client.request(0, Method::GET, &path, None).await {
        if r.status != 404 {
            return;
        }
    }
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    let _ = client
        .request(
            0,
            Method::POST,
            "/api/v1/namespaces",
            Some(body.to_string().into()),
        )
        .await;
}

/// Creates objects `0..n` (as [`Ctx::name`], [`Ctx::labels`]) and returns
/// their resourceVersions. Not measured as part of the workload; its rate
/// goes into the extra figures. Fails unless every object exists after.
pub async fn precreate(ctx: &Ctx, n: usize, extra: &mut Extra) -> Result<Arc<Vec<AtomicU64>>> {
    let rvs: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    if n == 0 {
        return Ok(rvs);
    }
    let setup = Stats::new(tokio::time::Instant::now());
    let plan = Plan {
        name: "setup-create",
        workers: ctx.load.concurrency.max(1),
        count: Some(n as u64),
        duration: None,
        rate: None,
        grace: ctx.load.timeout,
    };
    let progress = Progress::new("setup", Some(n as u64), None, ctx.quiet);
    let (c, rv_out) = (ctx.clone(), rvs.clone());
    let f = scheduler::run(&plan, &setup, &progress, move |t| {
        let (c, rv_out) = (c.clone(), rv_out.clone());
        async move {
            let i = t.seq as usize;
            let name = c.name(i);
            let labels = c.labels(i);
            let body = c.resource.body(&name, &label_refs(&labels));
            let coll = &c.resource.collection;
            let mut r = c
                .client
                .request(t.worker, Method::POST, coll, Some(body))
                .await;
            if matches!(&r, Ok(resp) if resp.status == 409) {
                // Left by an earlier run with the same --prefix: reuse it.
                r = c
                    .client
                    .request(t.worker, Method::GET, &c.resource.item(&name), None)
                    .await;
            }
            if let Ok(resp) = &r {
                if let Some(rv) = objects::resource_version(&resp.body) {
                    rv_out[i].store(rv, Ordering::Relaxed);
                }
            }
            Done::from(Outcome::of(&r))
        }
    })
    .await;
    progress.finish();
    let sum = setup.summarize(f.ended).remove(0);
    extra.insert("setup_objects".into(), json!(n));
    extra.insert("setup_seconds".into(), json!(sum.seconds));
    extra.insert("setup_per_s".into(), json!(sum.throughput_per_s));
    if sum.ok < n as u64 {
        bail!(
            "pre-creating {n} objects in {}: only {} succeeded, errors {:?}",
            ctx.resource.collection,
            sum.ok,
            sum.errors
        );
    }
    Ok(rvs)
}

/// The objects worker `w` of `workers` owns among `n`: disjoint sets, so
/// concurrent writers never conflict, unless there are fewer objects than
/// workers. Returns object `k`-th of its set, cycling.
pub fn owned_object(n: usize, workers: usize, w: usize, k: u64) -> usize {
    if n <= workers {
        return w % n;
    }
    let owned = (n - w).div_ceil(workers);
    w + workers * (k % owned as u64) as usize
}

/// A short unique prefix for object names.
pub fn default_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos();
    format!(
        "kb{:x}{:x}",
        (nanos / 1_000_000) % 0xffffff,
        std::process::id() % 0xfff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_objects_are_disjoint_and_cover_all() {
        let (n, workers) = (10, 4);
        let mut seen = vec![None; n];
        for w in 0..workers {
            for k in 0..20 {
                let o = owned_object(n, workers, w, k);
                assert!(o < n);
                assert!(seen[o].is_none_or(|x| x == w), "object {o} shared");
                seen[o] = Some(w);
            }
        }
        assert!(seen.iter().all(Option::is_some));
        assert_eq!(owned_object(3, 8, 5, 0), 2);
    }

    #[test]
    fn prefixes_are_valid_names() {
        let p = default_prefix();
        assert!(
            p.len() < 20 && p.chars().all(|c| c.is_ascii_alphanumeric()),
            "{p}"
        );
    }
}
