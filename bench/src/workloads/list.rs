//! LIST over N pre-created objects: unpaged, then paged (`limit` and
//! `continue` until the last page). Each phase runs for the full
//! `--duration`/`--count`.

use super::{precreate, Ctx, Extra};
use crate::cli::ListArgs;
use crate::objects::{self, ListHead};
use crate::scheduler::{timed, Done, Step};
use crate::stats::Outcome;
use anyhow::Result;
use http::Method;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Items and bytes of the last complete list, to report what a list was.
#[derive(Default)]
struct Shape {
    items: AtomicU64,
    bytes: AtomicU64,
    pages: AtomicU64,
}

pub async fn run(ctx: &Ctx, a: &ListArgs) -> Result<Extra> {
    let mut extra = Extra::new();
    if !seeded(ctx, a.objects).await {
        precreate(ctx, a.objects, &mut extra).await?;
    }
    let selector = a
        .label_selector
        .as_ref()
        .map(|s| format!("labelSelector={}", objects::query_escape(s)));

    if !a.paged_only {
        let shape = Arc::new(Shape::default());
        let path = match &selector {
            Some(s) => format!("{}?{s}", ctx.resource.collection),
            None => ctx.resource.collection.clone(),
        };
        let plan = ctx.plan("list");
        let (c, sh) = (ctx.clone(), shape.clone());
        ctx.drive(&plan, move |t| {
            let (c, sh, path) = (c.clone(), sh.clone(), path.clone());
            async move {
                let r = c.client.request(t.worker, Method::GET, &path, None).await;
                if let Ok(resp) = &r {
                    if resp.ok() {
                        match list_shape(&c, &resp.body) {
                            Some((items, _)) => {
                                sh.items.store(items as u64, Ordering::Relaxed);
                                sh.bytes.store(resp.body.len() as u64, Ordering::Relaxed);
                            }
                            None => return Done::from(Outcome::Failed("bad-response")),
                        }
                    }
                }
                Done::from(Outcome::of(&r))
            }
        })
        .await;
        extra.insert(
            "items_per_list".into(),
            json!(shape.items.load(Ordering::Relaxed)),
        );
        extra.insert(
            "bytes_per_list".into(),
            json!(shape.bytes.load(Ordering::Relaxed)),
        );
    }

    if a.page_size > 0 {
        let shape = Arc::new(Shape::default());
        let base = match &selector {
            Some(s) => format!("{}?{s}&limit={}", ctx.resource.collection, a.page_size),
            None => format!("{}?limit={}", ctx.resource.collection, a.page_size),
        };
        let plan = ctx.plan("list-paged");
        let (c, sh) = (ctx.clone(), shape.clone());
        ctx.drive(&plan, move |t| {
            let (c, sh, base) = (c.clone(), sh.clone(), base.clone());
            async move { paged(&c, t.worker, &base, &sh).await }
        })
        .await;
        extra.insert("page_size".into(), json!(a.page_size));
        extra.insert(
            "items_per_paged_list".into(),
            json!(shape.items.load(Ordering::Relaxed)),
        );
        extra.insert(
            "pages_per_list".into(),
            json!(shape.pages.load(Ordering::Relaxed)),
        );
    }
    Ok(extra)
}

/// Whether an earlier run with this prefix made the objects already (a
/// comparison's later rounds list the first round's objects): its last
/// object is there, and a set-up that fails stops its run. Re-creating
/// 100k objects one 409 at a time took longer than the round.
async fn seeded(ctx: &Ctx, n: usize) -> bool {
    if n == 0 {
        return true;
    }
    let last = ctx.resource.item(&ctx.name(n - 1));
    matches!(ctx.client.request(0, Method::GET, &last, None).await, Ok(r) if r.ok())
}

/// One full paged list; every page is a step.
async fn paged(c: &Ctx, slot: usize, base: &str, sh: &Shape) -> Done {
    let mut steps = Vec::new();
    let (mut items, mut bytes, mut token) = (0u64, 0u64, None::<String>);
    loop {
        let path = match &token {
            Some(t) => format!("{base}&continue={}", objects::query_escape(t)),
            None => base.to_string(),
        };
        let (r, took) = timed(c.client.request(slot, Method::GET, &path, None)).await;
        let outcome = Outcome::of(&r);
        steps.push(Step {
            op: "list-page",
            latency: took,
            outcome,
        });
        let resp = match r {
            Ok(resp) if resp.ok() => resp,
            _ => return Done { outcome, steps },
        };
        let Some((n, next)) = list_shape(c, &resp.body) else {
            return Done {
                outcome: Outcome::Failed("bad-response"),
                steps,
            };
        };
        items += n as u64;
        bytes += resp.body.len() as u64;
        match next.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => break,
        }
        if steps.len() > 1_000_000 {
            // A server handing out continue tokens forever.
            return Done {
                outcome: Outcome::Failed("endless-pagination"),
                steps,
            };
        }
    }
    sh.items.store(items, Ordering::Relaxed);
    sh.bytes.store(bytes, Ordering::Relaxed);
    sh.pages.store(steps.len() as u64, Ordering::Relaxed);
    Done {
        outcome: Outcome::Ok,
        steps,
    }
}

/// (items, continue token) of a list body, JSON or protobuf.
fn list_shape(c: &Ctx, body: &[u8]) -> Option<(usize, Option<String>)> {
    if c.client.target().protobuf {
        return crate::protowire::list_shape(body);
    }
    let head: ListHead = serde_json::from_slice(body).ok()?;
    Some((head.items.len(), head.metadata.continue_token))
}
