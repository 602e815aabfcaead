//! What the aggregator's controller publishes for every executor: the
//! service-backed group versions ([`Routes`]), each with where its
//! backend is, whether it is available, and its discovery and OpenAPI
//! documents. Kept apart from the aggregator itself so the configuration,
//! discovery and OpenAPI can read it from below.

use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The label kube marks APIServices it manages with: `onstart` (built-in
/// groups, written at start) or `true` (CRD groups, kept in sync).
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The Service an APIService names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

impl ServiceRef {
    /// The name its certificate must carry (kube's `<svc>.<ns>.svc`).
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }

    /// A service reference as webhooks and APIServices write one
    /// (`namespace`, `name`, `port` defaulting to 443).
    pub fn parse(svc: &Value) -> Self {
        let text = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Self {
            namespace: text("namespace"),
            name: text("name"),
            port: svc
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        }
    }
}

/// A service-backed group version, as the controller last saw it.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The APIService's name (`<version>.<group>`).
    pub name: String,
    pub group: String,
    pub version: String,
    pub service: ServiceRef,
    /// PEM roots; empty with `insecureSkipTLSVerify`.
    pub ca_bundle: Vec<u8>,
    pub insecure: bool,
    /// A hash of how the backend is trusted (`ca_bundle`, `insecure`),
    /// which tells its kept connections apart.
    pub trust_hash: u64,
    pub group_priority: i64,
    pub version_priority: i64,
    /// Its `Available` condition is True.
    pub available: bool,
    /// Its ready endpoints when last checked, each with the key its kept
    /// connections go under (built once here, not per request).
    pub targets: Vec<Target>,
    /// Its aggregated discovery (v2) version entry, converted once from
    /// the APIResourceList of the last successful check.
    pub discovery: Option<Value>,
    /// Its swagger document's paths under `/apis/<group>/<version>/` and
    /// definitions: `{"paths": …, "definitions": …}` (shared, not copied,
    /// each time the routes are published).
    pub openapi_v2: Option<Arc<Value>>,
    /// Its OpenAPI v3 document for the group version.
    pub openapi_v3: Option<Arc<Vec<u8>>>,
}

/// An endpoint of a remote.
#[derive(Debug, Clone)]
pub struct Target {
    pub endpoint: crate::proxy::dial::Endpoint,
    pub key: crate::proxy::pool::Key,
}

/// The published picture: service-backed group versions by group, then
/// version (nested so a request's `&str`s look them up as they are).
#[derive(Debug, Default)]
pub struct Routes {
    pub generation: u64,
    pub by_group: BTreeMap<String, BTreeMap<String, Arc<Remote>>>,
}

impl Routes {
    pub fn get(&self, group: &str, version: &str) -> Option<&Arc<Remote>> {
        self.by_group.get(group)?.get(version)
    }

    pub fn remotes(&self) -> impl Iterator<Item = &Arc<Remote>> {
        self.by_group.values().flat_map(|v| v.values())
    }
}

/// Shared between executors: what the controller publishes and what
/// executors ask it to look at again.
#[derive(Debug, Default)]
pub struct Aggregator {
    generation: AtomicU64,
    any: AtomicBool,
    routes: RwLock<Arc<Routes>>,
    /// APIServices whose backend a proxied request could not reach: the
    /// controller checks them again at once.
    recheck: Mutex<BTreeSet<String>>,
    pub wake: event_listener::Event,
}

thread_local! {
    /// This executor's copy of the published routes and its generation
    /// (behind an `Rc` so handing it out bumps a local count, not the
    /// shared atomic one).
    #[allow(clippy::redundant_allocation)]
    static LOCAL: RefCell<(u64, Rc<Arc<Routes>>)> = RefCell::default();
}

impl Aggregator {
    /// Whether any service-backed APIService exists (one relaxed load).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// The current routes, through this executor's copy.
    #[allow(clippy::redundant_allocation)] // see LOCAL
    pub fn routes(&self) -> Rc<Arc<Routes>> {
        let generation = self.generation.load(Ordering::Acquire);
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            if l.0 != generation || l.1.generation != generation {
                *l = (generation, Rc::new(self.routes.read().clone()));
            }
            l.1.clone()
        })
    }

    /// The remote serving `group/version`, if one does.
    pub fn route(&self, group: &str, version: &str) -> Option<Arc<Remote>> {
        if !self.any() {
            return None;
        }
        self.routes().get(group, version).cloned()
    }

    pub(crate) fn publish(&self, remotes: Vec<Remote>) {
        let mut by_group: BTreeMap<String, BTreeMap<String, Arc<Remote>>> = BTreeMap::new();
        for r in remotes {
            by_group
                .entry(r.group.clone())
                .or_default()
                .insert(r.version.clone(), Arc::new(r));
        }
        let mut routes = self.routes.write();
        let generation = routes.generation + 1;
        self.any.store(!by_group.is_empty(), Ordering::Relaxed);
        *routes = Arc::new(Routes {
            generation,
            by_group,
        });
        self.generation.store(generation, Ordering::Release);
    }

    /// Asks the controller to check `apiservice` again now.
    pub fn recheck(&self, apiservice: &str) {
        self.recheck.lock().insert(apiservice.to_string());
        self.wake.notify(usize::MAX);
    }

    pub(crate) fn take_rechecks(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.recheck.lock())
    }
}
