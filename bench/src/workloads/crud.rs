//! create, get, update and delete of single objects.

use super::{label_refs, owned_object, precreate, Ctx, Extra};
use crate::cli::{GetArgs, ObjectsArgs, UpdateArgs, UpdateMode};
use crate::objects;
use crate::scheduler::{timed, Done, Step};
use crate::stats::Outcome;
use anyhow::Result;
use http::Method;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// POST new objects, named `<prefix>-c<seq>`.
pub async fn create(ctx: &Ctx) -> Result<Extra> {
    let plan = ctx.plan("create");
    let c = ctx.clone();
    ctx.drive(&plan, move |t| {
        let c = c.clone();
        async move {
            let name = format!("{}-c{}", c.prefix, t.seq);
            let labels = c.labels(t.seq as usize);
            let body = c.resource.body(&name, &label_refs(&labels));
            let r = c
                .client
                .request(t.worker, Method::POST, &c.resource.collection, Some(body))
                .await;
            Done::from(Outcome::of(&r))
        }
    })
    .await;
    Ok(Extra::new())
}

/// GET pre-created objects round-robin.
pub async fn get(ctx: &Ctx, a: &GetArgs) -> Result<Extra> {
    let mut extra = Extra::new();
    let n = a.objects.max(1);
    if !a.existing {
        precreate(ctx, n, &mut extra).await?;
    }
    let query = match &a.resource_version {
        Some(rv) => format!("?resourceVersion={}", objects::query_escape(rv)),
        None => String::new(),
    };
    let paths: Arc<Vec<String>> = Arc::new(
        (0..n)
            .map(|i| format!("{}{query}", ctx.resource.item(&ctx.name(i))))
            .collect(),
    );
    let plan = ctx.plan("get");
    let c = ctx.clone();
    ctx.drive(&plan, move |t| {
        let (c, paths) = (c.clone(), paths.clone());
        async move {
            let path = &paths[t.seq as usize % paths.len()];
            let r = c.client.request(t.worker, Method::GET, path, None).await;
            Done::from(Outcome::of(&r))
        }
    })
    .await;
    Ok(extra)
}

/// Update pre-created objects; each worker owns a disjoint subset.
pub async fn update(ctx: &Ctx, a: &UpdateArgs) -> Result<Extra> {
    let mut extra = Extra::new();
    let n = a.objects.max(1);
    let rvs = precreate(ctx, n, &mut extra).await?;
    let plan = ctx.plan("update");
    let (c, mode, workers) = (ctx.clone(), a.mode, plan.workers);
    ctx.drive(&plan, move |t| {
        let (c, rvs) = (c.clone(), rvs.clone());
        async move {
            let i = owned_object(n, workers, t.worker, t.seq / workers as u64);
            match mode {
                UpdateMode::GetPut => get_put(&c, t.worker, i, t.seq, &rvs).await,
                UpdateMode::Put => put_last(&c, t.worker, i, t.seq, &rvs).await,
            }
        }
    })
    .await;
    Ok(extra)
}

/// GET, change, PUT back with the resourceVersion just read.
async fn get_put(c: &Ctx, slot: usize, i: usize, seq: u64, rvs: &[AtomicU64]) -> Done {
    let path = c.resource.item(&c.name(i));
    let (r, took) = timed(c.client.request(slot, Method::GET, &path, None)).await;
    let mut steps = vec![Step {
        op: "update-get",
        latency: took,
        outcome: Outcome::of(&r),
    }];
    let body = match &r {
        Ok(resp) if resp.ok() => match objects::modified(&resp.body, seq) {
            Some(b) => b,
            None => return with_steps(Outcome::Failed("bad-response"), steps),
        },
        _ => return with_steps(Outcome::of(&r), steps),
    };
    let (r, took) = timed(c.client.request(slot, Method::PUT, &path, Some(body))).await;
    steps.push(Step {
        op: "update-put",
        latency: took,
        outcome: Outcome::of(&r),
    });
    remember_rv(&r, &rvs[i]);
    with_steps(Outcome::of(&r), steps)
}

/// PUT with the resourceVersion of our last write; on a conflict, refresh
/// it with a GET (the conflict still counts as a failed update).
pub async fn put_last(c: &Ctx, slot: usize, i: usize, seq: u64, rvs: &[AtomicU64]) -> Done {
    let name = c.name(i);
    let path = c.resource.item(&name);
    let labels = c.labels(i);
    let rv = rvs[i].load(Ordering::Relaxed);
    let body = c.resource.update_body(&name, &label_refs(&labels), rv, seq);
    let r = c.client.request(slot, Method::PUT, &path, Some(body)).await;
    remember_rv(&r, &rvs[i]);
    if matches!(&r, Ok(resp) if resp.status == 409) {
        let (g, took) = timed(c.client.request(slot, Method::GET, &path, None)).await;
        remember_rv(&g, &rvs[i]);
        return with_steps(
            Outcome::Status(409),
            vec![Step {
                op: "conflict-get",
                latency: took,
                outcome: Outcome::of(&g),
            }],
        );
    }
    Done::from(Outcome::of(&r))
}

/// Stores the resourceVersion of a successful response.
pub fn remember_rv(
    r: &Result<crate::client::Response, crate::client::ClientError>,
    to: &AtomicU64,
) {
    if let Ok(resp) = r {
        if resp.ok() {
            if let Some(rv) = objects::resource_version(&resp.body) {
                to.store(rv, Ordering::Relaxed);
            }
        }
    }
}

fn with_steps(outcome: Outcome, steps: Vec<Step>) -> Done {
    Done { outcome, steps }
}

/// DELETE pre-created objects, each once: the run ends after `objects`
/// deletions at most.
pub async fn delete(ctx: &Ctx, a: &ObjectsArgs) -> Result<Extra> {
    let mut extra = Extra::new();
    let n = a.objects.max(1);
    precreate(ctx, n, &mut extra).await?;
    let mut plan = ctx.plan("delete");
    plan.count = Some(plan.count.map_or(n as u64, |c| c.min(n as u64)));
    let c = ctx.clone();
    ctx.drive(&plan, move |t| {
        let c = c.clone();
        async move {
            let path = c.resource.item(&c.name(t.seq as usize));
            let r = c
                .client
                .request(t.worker, Method::DELETE, &path, None)
                .await;
            Done::from(Outcome::of(&r))
        }
    })
    .await;
    Ok(extra)
}
