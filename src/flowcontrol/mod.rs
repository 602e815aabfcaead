//! API Priority and Fairness (`flowcontrol.apiserver.k8s.io/v1`): every
//! request is classified by the FlowSchemas into a flow and a priority
//! level; each level owns a share of the server's seats
//! (`--max-requests-inflight` + `--max-mutating-requests-inflight`),
//! lends what it does not use and borrows what others do not, and queues
//! what it cannot run at once, fairly between flows. So a tenant flooding
//! expensive LISTs fills its own queues while leader-election renewals,
//! nodes and the control plane keep their seats.
//!
//! - [`config`]: schemas and levels as classification reads them;
//! - [`estimate`]: seats per request;
//! - [`queueset`] and [`shuffle`]: fair queuing within a level;
//! - [`borrowing`]: the periodic limit adjustment;
//! - [`dispatcher`]: one executor's whole APF;
//! - [`bootstrap`]: kube's configuration objects, kept in place;
//! - [`retry`], [`metrics`]: what rejections say and what is counted.
//!
//! `--enable-priority-and-fairness=false` falls back to the max-in-flight
//! limiter.

pub mod bootstrap;
mod borrowing;
pub mod config;
pub mod dispatcher;
pub mod estimate;
pub mod metrics;
pub mod queueset;
mod remembered;
mod retry;
mod shuffle;

use crate::context::Api;
use crate::informer::Change;
use crate::request::{Query, RequestInfo};
use crate::security::maxinflight;
use dispatcher::{Compiled, Dispatcher, Ids, Raw, Seats};
use http::{HeaderName, Response};
use kubeshard_cache::Filter;
use kubeshard_core::authn::UserInfo;
use kubeshard_core::status::ApiError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

const SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
const LEVEL_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

/// How often each executor refreshes its object counts (LIST sizes).
const STATS_PERIOD: Duration = Duration::from_secs(30);
/// The ensurer's period when nothing changes (kube's).
const ENSURE_PERIOD: Duration = Duration::from_secs(60);

thread_local! {
    /// This executor's dispatcher (one executor per thread).
    static DISPATCHER: RefCell<Option<Rc<Dispatcher>>> = const { RefCell::new(None) };
}

fn current() -> Option<Rc<Dispatcher>> {
    DISPATCHER.with(|d| d.borrow().clone())
}

/// What a request holds while it executes: its seats (APF), or its
/// max-in-flight slot.
pub enum Permit {
    Seats { _held: Seats },
    Inflight { _held: maxinflight::Permit },
}

/// A request let through, and the identity its response reports.
pub struct Admitted {
    pub permit: Option<Permit>,
    pub ids: Option<Ids>,
}

/// A request turned away.
pub struct Refused {
    pub error: ApiError,
    pub ids: Option<Ids>,
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Self {
        Self { error, ids: None }
    }
}

/// Starts this executor's APF (when enabled): informers on the schemas
/// and levels, the object counts, the borrowing adjustment.
pub fn start(api: &Rc<Api>) {
    let security = &api.security;
    if !security.config.priority_and_fairness {
        return;
    }
    let ctx = &api.exec;
    let (max_read, max_mut) = security.config.inflight.limits();
    let d = Rc::new(Dispatcher {
        executor: ctx.id,
        executors: ctx.shards.shard_count(),
        server_limit: (max_read + max_mut).max(1),
        raw: Rc::new(RefCell::new(Raw {
            dirty: true,
            ..Raw::default()
        })),
        state: RefCell::new(Compiled {
            schemas: Vec::new(),
            remembered: Default::default(),
            levels: HashMap::new(),
            stats: estimate::ObjectStats::default(),
        }),
        tally: metrics::register(),
        changed: Rc::new(event_listener::Event::new()),
    });
    for (plural, schemas) in [
        ("flowschemas", true),
        ("prioritylevelconfigurations", false),
    ] {
        let (raw, changed) = (d.raw.clone(), d.changed.clone());
        security.informers.start(
            ctx,
            api.config.keys.builtin(bootstrap::GROUP, plural),
            Filter::default(),
            Box::new(move |change| {
                let mut r = raw.borrow_mut();
                let map = if schemas {
                    &mut r.schemas
                } else {
                    &mut r.levels
                };
                match change {
                    Change::Reset => map.clear(),
                    Change::Upsert(o) => {
                        map.insert(o.name.to_string(), o.to_value());
                    }
                    Change::Delete(o) => {
                        map.remove(&*o.name);
                    }
                }
                r.dirty = true;
                changed.notify(usize::MAX);
            }),
        );
    }
    DISPATCHER.with(|slot| *slot.borrow_mut() = Some(d.clone()));
    let shutdown = ctx.shutdown.clone();
    let adjusting = d.clone();
    glommio::spawn_local(async move {
        while !shutdown.is_triggered() {
            glommio::timer::sleep(borrowing::PERIOD).await;
            adjusting.adjust();
        }
    })
    .detach();
    let (api, d) = (api.clone(), d);
    glommio::spawn_local(async move {
        while !api.exec.shutdown.is_triggered() {
            if let Ok(shards) = api.exec.shards.resources().await {
                let mut by: HashMap<Arc<str>, (u64, u64)> = HashMap::new();
                for counts in &shards {
                    for (key, n, mean) in counts {
                        let e = by.entry(key.clone()).or_default();
                        // Means weighted by the shards' counts.
                        let total = e.0 + *n as u64;
                        e.1 = (e.1 * e.0 + *mean as u64 * *n as u64) / total.max(1);
                        e.0 = total;
                    }
                }
                d.set_stats(estimate::ObjectStats { by_resource: by });
            }
            glommio::timer::sleep(STATS_PERIOD).await;
        }
    })
    .detach();
}

/// The first pass over kube's bootstrap configuration, part of the
/// server's start (kube's post-start hook gates readiness the same way),
/// so the objects exist before the first request is served.
pub async fn bootstrap(api: &Api) -> Result<(), ApiError> {
    match current() {
        Some(_) => bootstrap::ensure(api).await,
        None => Ok(()),
    }
}

/// Keeps kube's bootstrap configuration in place (executor 0, after the
/// first pass): again on every change of a schema or level, and every
/// minute.
pub async fn keep_bootstrap(api: Rc<Api>) {
    let Some(d) = current() else { return };
    loop {
        let listener = d.changed.listen();
        let stop = api.exec.shutdown.clone();
        let woke = futures_lite::future::or(
            async {
                listener.await;
                true
            },
            async {
                glommio::timer::sleep(ENSURE_PERIOD).await;
                true
            },
        );
        let stopped = async {
            stop.wait().await;
            false
        };
        if !futures_lite::future::or(woke, stopped).await {
            return;
        }
        // Let a burst of changes settle into one pass.
        glommio::timer::sleep(Duration::from_millis(50)).await;
        if let Err(e) = bootstrap::ensure(&api).await {
            tracing::warn!(error = %e.message, "APF bootstrap configuration not ensured; retrying");
        }
    }
}

/// Flow control for one request: APF when on, max-in-flight otherwise.
/// `budget` is the request's time, a quarter of which it may wait.
pub async fn admit(
    api: &Api,
    user: &UserInfo,
    info: &RequestInfo,
    query: &Query,
    budget: Duration,
) -> Result<Admitted, Refused> {
    let Some(d) = current() else {
        let permit = maxinflight::admit(&api.security.config.inflight, user, info)?;
        return Ok(Admitted {
            permit: permit.map(|p| Permit::Inflight { _held: p }),
            ids: None,
        });
    };
    // Long-running requests other than watches (exec, attach, proxy,
    // port-forward) are not flow-controlled.
    if info.is_long_running() && info.verb != "watch" {
        return Ok(Admitted {
            permit: None,
            ids: None,
        });
    }
    let Some(c) = d.classify(user, info) else {
        return Err(ApiError::internal("no priority level for the request").into());
    };
    let key = if matches!(info.verb.as_str(), "list" | "watch") {
        api.catalog
            .current()
            .lookup(&info.group, &info.version, &info.resource)
            .map(|r| r.storage_key.clone())
    } else {
        None
    };
    let wait = dispatcher::wait_limit(budget);
    match d.admit(c, user, info, query, key.as_deref(), wait).await {
        Ok(seats) => {
            let ids = seats.ids.clone();
            Ok(Admitted {
                permit: Some(Permit::Seats { _held: seats }),
                ids: Some(ids),
            })
        }
        Err(r) => Err(Refused {
            error: ApiError::too_many_requests(
                "Too many requests, please try again later.",
                r.retry_after.min(u64::from(u32::MAX)) as u32,
            ),
            ids: Some(r.ids),
        }),
    }
}

/// kube's response headers naming the schema and level (by uid).
pub fn set_headers<B>(resp: &mut Response<B>, ids: &Ids) {
    let headers = resp.headers_mut();
    headers.insert(SCHEMA_UID, ids.schema_uid.clone());
    headers.insert(LEVEL_UID, ids.level_uid.clone());
}
