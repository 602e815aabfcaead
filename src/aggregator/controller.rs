//! The aggregator's controller, on executor 0: registers the local
//! APIServices, checks each service-backed one (kube's availability
//! controller: every 30 s while available; while not, again after 1 s,
//! doubling to 30 s; at once when its APIService changes or a proxied
//! request could not reach it), writes their `Available` conditions,
//! fetches their OpenAPI documents, and publishes the routes every
//! executor proxies by.

use super::available::{self, Verdict};
use super::{autoregister, documents, Remote, ServiceRef};
use crate::context::Api;
use crate::informer::{mirror, Change};
use crate::registry::{self, Addressed, APISERVER};
use kubeshard_cache::Filter;
use kubeshard_core::catalog::{Catalog, ResourceInfo};
use kubeshard_core::meta;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often an available APIService is checked again.
const RECHECK: Duration = Duration::from_secs(30);
/// The first retry of an unavailable one; doubles up to [`RECHECK`].
const RETRY: Duration = Duration::from_secs(1);
/// How often an available backend's OpenAPI documents are fetched again.
const OPENAPI_REFRESH: Duration = Duration::from_secs(60);

/// What the controller knows of one service-backed APIService.
struct Tracked {
    /// The spec it was last checked with (a new spec is checked at once).
    spec: Value,
    due: Instant,
    backoff: Duration,
    verdict: Option<Verdict>,
    openapi_at: Option<Instant>,
    openapi_v2: Option<Arc<Value>>,
    openapi_v3: Option<Arc<Vec<u8>>>,
}

/// Set when the informer changed the APIServices it mirrors.
#[derive(Default)]
struct Changed {
    dirty: std::cell::Cell<bool>,
    event: event_listener::Event,
}

/// Starts the controller on this executor (executor 0).
pub fn start(api: Rc<Api>, catalog: Arc<Catalog>) {
    let Ok(info) = api.builtin("apiregistration.k8s.io", "apiservices") else {
        return;
    };
    let seen: Rc<RefCell<HashMap<String, Value>>> = Rc::default();
    let changed = Rc::new(Changed::default());
    let sink = {
        let (mut inner, changed) = (
            mirror(seen.clone(), |o| Some(o.name.to_string()), |o| o.to_value()),
            changed.clone(),
        );
        Box::new(move |c: Change<'_>| {
            inner(c);
            changed.dirty.set(true);
            changed.event.notify(usize::MAX);
        })
    };
    api.security
        .informers
        .start(&api.exec, info.storage_key.clone(), Filter::default(), sink);
    glommio::spawn_local(run(api, catalog, info, seen, changed)).detach();
}

async fn run(
    api: Rc<Api>,
    catalog: Arc<Catalog>,
    info: Arc<ResourceInfo>,
    seen: Rc<RefCell<HashMap<String, Value>>>,
    changed: Rc<Changed>,
) {
    let shutdown = api.exec.shutdown.clone();
    let mut tracked: BTreeMap<String, Tracked> = BTreeMap::new();
    let mut catalog_seen = None;
    let mut published = None;
    let mut have: BTreeMap<String, Value> = BTreeMap::new();
    while !shutdown.is_triggered() {
        let local_changes = changed.event.listen();
        let remote_asks = api.config.aggregator.wake.listen();
        if !api.security.informers.synced() {
            glommio::timer::sleep(Duration::from_millis(50)).await;
            continue;
        }
        // A copy, taken only when it changed: the informer's sink writes
        // the mirror while this loop awaits.
        let refreshed = changed.dirty.replace(false) || catalog_seen.is_none();
        if refreshed {
            have = seen
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        let generation = catalog.generation();
        if catalog_seen != Some(generation) {
            let at_start = catalog_seen.is_none();
            autoregister::sync(&api, &info, &catalog.snapshot(), &have, at_start).await;
            catalog_seen = Some(generation);
        }
        let rechecks = api.config.aggregator.take_rechecks();
        let now = Instant::now();
        tracked.retain(|name, _| have.get(name).is_some_and(|o| service(o).is_some()));
        let mut due = Vec::new();
        for (name, obj) in &have {
            let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
            if service(obj).is_none() {
                if refreshed {
                    mark_local(&api, &info, name, obj).await;
                }
                continue;
            }
            let t = tracked.entry(name.clone()).or_insert_with(|| Tracked {
                spec: Value::Null,
                due: now,
                backoff: RETRY,
                verdict: None,
                openapi_at: None,
                openapi_v2: None,
                openapi_v3: None,
            });
            if t.spec != spec || t.due <= now || rechecks.contains(name) {
                t.spec = spec;
                due.push(name.clone());
            }
        }
        // Checks run side by side: one unreachable backend's timeout
        // does not hold up the others.
        let checks = due.iter().filter_map(|name| {
            let remote = remote_of(have.get(name)?, None)?;
            let api = &api;
            Some(async move { (name.clone(), available::check(api, &remote).await) })
        });
        let results = futures_util::future::join_all(checks).await;
        let checked: Vec<String> = results.iter().map(|(n, _)| n.clone()).collect();
        for (name, verdict) in results {
            let Some(t) = tracked.get_mut(&name) else {
                continue;
            };
            let obj = &have[&name];
            if verdict.available {
                t.backoff = RETRY;
                t.due = Instant::now() + RECHECK;
                let stale = t
                    .openapi_at
                    .is_none_or(|at| at.elapsed() >= OPENAPI_REFRESH);
                if let (true, Some(remote)) = (stale, remote_of(obj, Some(&verdict))) {
                    let (v2, v3) = documents::fetch(&api, &remote).await;
                    (t.openapi_v2, t.openapi_v3) = (v2, v3);
                    t.openapi_at = Some(Instant::now());
                }
            } else {
                t.due = Instant::now() + t.backoff;
                t.backoff = (t.backoff * 2).min(RECHECK);
            }
            t.verdict = Some(verdict);
        }
        // Published again when an APIService or a check changed anything.
        let fingerprint: Vec<(String, String)> = tracked
            .keys()
            .filter_map(|n| {
                Some((
                    n.clone(),
                    meta::meta_str(have.get(n)?, "resourceVersion")?.to_string(),
                ))
            })
            .collect();
        if !checked.is_empty() || published.as_ref() != Some(&fingerprint) {
            let remotes = tracked
                .iter()
                .filter_map(|(name, t)| {
                    let mut r = remote_of(have.get(name)?, t.verdict.as_ref())?;
                    r.openapi_v2 = t.openapi_v2.clone();
                    r.openapi_v3 = t.openapi_v3.clone();
                    Some(r)
                })
                .collect();
            api.config.aggregator.publish(remotes);
            published = Some(fingerprint);
        }
        // Conditions are written after the routes carry the verdicts, so
        // a client that reads `Available=True` is never answered 503.
        for name in &checked {
            if let (Some(obj), Some(verdict)) = (
                have.get(name),
                tracked.get(name).and_then(|t| t.verdict.as_ref()),
            ) {
                write_condition(&api, &info, name, obj, verdict).await;
            }
        }
        let next = tracked
            .values()
            .map(|t| t.due.saturating_duration_since(Instant::now()))
            .min()
            .unwrap_or(RECHECK)
            .min(Duration::from_secs(1));
        futures_lite::future::or(
            futures_lite::future::or(local_changes, remote_asks),
            async {
                glommio::timer::sleep(next).await;
            },
        )
        .await;
    }
}

/// The Service an APIService names, if any.
fn service(obj: &Value) -> Option<ServiceRef> {
    let svc = obj.pointer("/spec/service").filter(|s| s.is_object())?;
    Some(ServiceRef::parse(svc))
}

/// The remote a service-backed APIService describes, with the endpoints,
/// discovery and availability of `verdict`; without one, available as
/// its stored condition says.
fn remote_of(obj: &Value, verdict: Option<&Verdict>) -> Option<Remote> {
    let service = service(obj)?;
    let spec = obj.get("spec")?;
    // Validated on write, so what does not decode is no bundle.
    let ca_bundle =
        kubeshard_core::registry::apiservice::decode_ca_bundle(meta::str_at(spec, "/caBundle"))
            .unwrap_or_default();
    let int = |p: &str| spec.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let available = verdict.map_or_else(
        || {
            meta::array_at(obj, "/status/conditions").iter().any(|c| {
                meta::str_at(c, "/type") == "Available" && meta::str_at(c, "/status") == "True"
            })
        },
        |v| v.available,
    );
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
    let trust_hash = xxhash_rust::xxh3::xxh3_64(&ca_bundle) ^ u64::from(insecure);
    let server_name = service.server_name();
    let targets = verdict
        .map(|v| super::transport::targets(&v.endpoints, &server_name, trust_hash))
        .unwrap_or_default();
    Some(Remote {
        name: meta::name(obj).to_string(),
        group: meta::str_at(spec, "/group").to_string(),
        version: meta::str_at(spec, "/version").to_string(),
        service,
        ca_bundle,
        insecure,
        trust_hash,
        group_priority: int("/groupPriorityMinimum"),
        version_priority: int("/versionPriority"),
        available,
        targets,
        discovery: verdict.and_then(|v| v.discovery.clone()),
        openapi_v2: None,
        openapi_v3: None,
    })
}

/// Writes the `Available` condition `verdict` calls for, when it differs.
async fn write_condition(
    api: &Api,
    info: &Arc<ResourceInfo>,
    name: &str,
    obj: &Value,
    verdict: &Verdict,
) {
    let status = if verdict.available { "True" } else { "False" };
    set_available(
        api,
        info,
        name,
        obj,
        status,
        verdict.reason,
        &verdict.message,
    )
    .await;
}

/// Local APIServices are always available.
pub(super) async fn mark_local(api: &Api, info: &Arc<ResourceInfo>, name: &str, obj: &Value) {
    let local = meta::array_at(obj, "/status/conditions").iter().any(|c| {
        meta::str_at(c, "/type") == "Available"
            && meta::str_at(c, "/status") == "True"
            && meta::str_at(c, "/reason") == "Local"
    });
    if local {
        return;
    }
    set_available(
        api,
        info,
        name,
        obj,
        "True",
        "Local",
        "Local APIServices are always available",
    )
    .await;
}

async fn set_available(
    api: &Api,
    info: &Arc<ResourceInfo>,
    name: &str,
    obj: &Value,
    status: &str,
    reason: &str,
    message: &str,
) {
    let now = crate::registry::strategy::now_rfc3339();
    let mut wanted = obj.clone();
    if !kubeshard_core::crd::set_condition(&mut wanted, "Available", status, reason, message, &now)
    {
        return;
    }
    let uid = meta::meta_str(obj, "uid").unwrap_or("").to_string();
    let at = Addressed {
        uid: Some(&uid),
        ..Addressed::status(info, "", name)
    };
    let (status, reason, message) = (status.to_string(), reason.to_string(), message.to_string());
    let written = registry::update_with(
        api,
        &APISERVER,
        at,
        Box::new(move |o: &mut Value| {
            let now = crate::registry::strategy::now_rfc3339();
            Ok(kubeshard_core::crd::set_condition(
                o,
                "Available",
                &status,
                &reason,
                &message,
                &now,
            ))
        }),
    )
    .await;
    if let Err(e) = written {
        if e.code != 404 && e.code != 409 {
            tracing::warn!(apiservice = %name, error = %e.message, "could not write the Available condition");
        }
    }
}
