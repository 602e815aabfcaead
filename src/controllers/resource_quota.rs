//! kube-controller-manager's `resourcequota` controller: every
//! ResourceQuota's status carries its hard limits and what its namespace
//! uses of them, computed from the objects themselves — when the quota is
//! created or its limits change, when objects it counts go away or stop
//! counting (a pod that finished, a service that changed type), and every
//! five minutes (which also takes back charges for writes that admission
//! charged but storage then refused).

use super::informer::Change;
use super::queue::WorkQueue;
use super::Env;
use crate::registry;
use kubeshard_cache::EventType;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::meta;
use kubeshard_core::quota;
use kubeshard_core::status::ApiError;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const RESOURCE_QUOTA: &str = "resourcequota";

/// kube's `--resource-quota-sync-period`.
const RESYNC: Duration = Duration::from_secs(300);

pub struct ResourceQuotaController {
    quotas: Arc<str>,
    pods: Arc<str>,
    services: Arc<str>,
    /// Namespace → its quotas' names.
    namespaces: HashMap<Arc<str>, HashSet<Arc<str>>>,
    last_resync: Instant,
    pub(super) queue: WorkQueue<Arc<str>>,
}

/// Whether the quota's status lags its spec (new, or limits changed).
fn needs_sync(q: &Value) -> bool {
    let hard = q.pointer("/spec/hard");
    if q.pointer("/status/hard") != hard {
        return true;
    }
    let used = q.pointer("/status/used").and_then(Value::as_object);
    hard.and_then(Value::as_object).is_some_and(|h| {
        h.keys()
            .any(|k| quota::counted_kind(k).is_some() && used.is_none_or(|u| !u.contains_key(k)))
    })
}

impl ResourceQuotaController {
    pub fn new(keys: &KeyLayout) -> Self {
        Self {
            quotas: keys.builtin("", "resourcequotas"),
            pods: keys.builtin("", "pods"),
            services: keys.builtin("", "services"),
            namespaces: HashMap::new(),
            last_resync: Instant::now(),
            queue: WorkQueue::default(),
        }
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.namespaces.clear();
        self.queue.clear();
        for c in items {
            self.observe(c);
        }
        for ns in self.namespaces.keys() {
            self.queue.add(ns.clone());
        }
    }

    pub fn observe(&mut self, c: &Change) {
        let ns = &c.object.namespace;
        if c.resource == self.quotas {
            if c.kind == EventType::Deleted {
                if let Some(names) = self.namespaces.get_mut(ns) {
                    names.remove(&c.object.name);
                    if names.is_empty() {
                        self.namespaces.remove(ns);
                    }
                }
                return;
            }
            self.namespaces
                .entry(ns.clone())
                .or_default()
                .insert(c.object.name.clone());
            if needs_sync(&c.object.to_value()) {
                self.queue.add(ns.clone());
            }
            return;
        }
        if ns.is_empty() || !self.namespaces.contains_key(ns) {
            return;
        }
        let stops_counting = match (c.kind, &c.prev) {
            (EventType::Deleted, _) => true,
            (EventType::Modified, Some(prev)) if c.resource == self.pods => {
                let phase = |o: &Value| meta::str_at(o, "/status/phase").to_string();
                let now = phase(&c.object.to_value());
                matches!(now.as_str(), "Succeeded" | "Failed") && phase(&prev.to_value()) != now
            }
            (EventType::Modified, Some(prev)) if c.resource == self.services => {
                let ty = |o: &Value| meta::str_at(o, "/spec/type").to_string();
                ty(&c.object.to_value()) != ty(&prev.to_value())
            }
            _ => false,
        };
        if stops_counting {
            self.queue.add(ns.clone());
        }
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        if self.last_resync.elapsed() >= RESYNC {
            self.last_resync = Instant::now();
            for ns in self.namespaces.keys() {
                self.queue.add(ns.clone());
            }
        }
        for _ in 0..budget {
            let Some(ns) = self.queue.pop() else {
                return;
            };
            match sync(env, &ns).await {
                Ok(()) => self.queue.forget(&ns),
                Err(e) => {
                    tracing::debug!(namespace = %ns, error = %e.message, "resource quota controller retries");
                    self.queue.retry(ns);
                }
            }
        }
    }
}

/// Recomputes every quota of `ns` from the objects it counts.
async fn sync(env: &Env<'_>, ns: &str) -> Result<(), ApiError> {
    let Some(info) = env.catalog.lookup("", "v1", "resourcequotas").cloned() else {
        return Ok(());
    };
    let quotas = crate::storage::list_in(env.storage, &info, ns).await?;
    // Each counted kind's objects, listed once for all quotas.
    let mut objects: HashMap<(String, String), Vec<Value>> = HashMap::new();
    for q in quotas.iter().map(|q| q.to_value()) {
        let hard = q
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut used = Map::new();
        for (key, limit) in &hard {
            let Some(kind) = quota::counted_kind(key) else {
                continue;
            };
            if !objects.contains_key(&kind) {
                let listed = match kind_info(env, &kind.0, &kind.1) {
                    Some(kind_info) => crate::storage::list_in(env.storage, &kind_info, ns)
                        .await?
                        .iter()
                        .map(|o| o.to_value())
                        .collect(),
                    None => Vec::new(),
                };
                objects.insert(kind.clone(), listed);
            }
            let total: i128 = objects[&kind]
                .iter()
                .filter(|o| quota::scopes_match(&q, &kind.0, &kind.1, o))
                .map(|o| {
                    quota::usage(&kind.0, &kind.1, o)
                        .get(key)
                        .copied()
                        .unwrap_or(0)
                })
                .sum();
            let like = limit.as_str().unwrap_or("");
            used.insert(key.clone(), json!(quota::render(total, like)));
        }
        let status = json!({"hard": hard, "used": sorted(used)});
        if q.get("status") == Some(&status) {
            continue;
        }
        let name = meta::name(&q).to_string();
        let at = registry::Addressed::status(&info, ns, &name);
        let mutation = Box::new(move |new: &mut Value| {
            if new.get("status") == Some(&status) {
                return Ok(false);
            }
            new["status"] = status.clone();
            Ok(true)
        });
        match env.update(at, mutation).await {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn sorted(m: Map<String, Value>) -> Map<String, Value> {
    m.into_iter()
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

/// The served resource a quota's `count/<resource>.<group>` names.
fn kind_info(
    env: &Env<'_>,
    group: &str,
    plural: &str,
) -> Option<Arc<kubeshard_core::catalog::ResourceInfo>> {
    env.catalog
        .resources()
        .find(|r| r.group == group && r.plural == plural && r.namespaced)
        .cloned()
}
