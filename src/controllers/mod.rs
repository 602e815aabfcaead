//! Built-in controllers: the garbage collector, the namespace controller
//! and the service-account controller that kube-controller-manager would
//! otherwise run, since many
//! kubeshard deployments run no controller manager. They run as one task
//! on executor 0, reading the executor's merged event stream through an
//! in-process [`informer`] and writing through the registry, the same way
//! requests do. `--controllers` switches them, in kube's flag style.

mod garbagecollector;
mod informer;
pub mod kubernetes_service;
mod namespace;
pub(crate) mod objmeta;
mod queue;
pub mod security;
mod serviceaccount;
pub mod system_objects;

use crate::context::Api;
use crate::registry::{self, Store};
use garbagecollector::GarbageCollector;
use informer::{Batch, Informer};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::catalog::{Catalog, CatalogReader, CatalogSnapshot};
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::DeleteOutcome;
use namespace::NamespaceController;
use serde_json::Value;
use serviceaccount::ServiceAccountController;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub const GARBAGE_COLLECTOR: &str = "garbagecollector";
pub const NAMESPACE: &str = "namespace";
pub const SERVICE_ACCOUNT: &str = "serviceaccount";
const KNOWN: &[&str] = &[GARBAGE_COLLECTOR, NAMESPACE, SERVICE_ACCOUNT];

/// Work items a controller handles before it reads new events again, so a
/// long queue never lets its cursors fall too far behind.
const BUDGET: usize = 256;

/// What the controllers need from the server to do their work. Their
/// writes go through the registry Store as kube-controller-manager's
/// would: admission, strategy and field ownership included.
pub struct Env<'a> {
    pub api: &'a Api,
    pub storage: &'a crate::storage::Backend,
    pub catalog: &'a CatalogSnapshot,
}

impl Env<'_> {
    pub async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        obj: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        registry::create_as(self.api, &registry::CONTROLLER_MANAGER, info, obj).await
    }

    pub async fn update(
        &self,
        at: registry::Addressed<'_>,
        mutate: registry::Mutation,
    ) -> Result<registry::Written, ApiError> {
        registry::update_with(self.api, &registry::CONTROLLER_MANAGER, at, mutate).await
    }

    pub async fn update_requested(
        &self,
        target: registry::Target<'_>,
        requested: registry::Requested,
    ) -> Result<registry::Written, ApiError> {
        registry::update_as(self.api, &registry::CONTROLLER_MANAGER, target, requested).await
    }

    pub async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let writer = registry::Writer {
            user: registry::CONTROLLER_MANAGER.user(),
            dry_run: false,
        };
        Store::new(self.api)
            .delete(writer, info, namespace, name, opts)
            .await
    }
}

/// Which built-in controllers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enabled {
    pub garbage_collector: bool,
    pub namespace: bool,
    pub service_account: bool,
}

impl Enabled {
    /// kube-controller-manager's `--controllers` rules: a name enables a
    /// controller, `-name` disables it, `*` enables those on by default
    /// (both are) and an explicit choice wins over `*`.
    pub fn from_flags(list: &[String]) -> Result<Self, String> {
        for item in list {
            let name = item.strip_prefix('-').unwrap_or(item);
            if name != "*" && !KNOWN.contains(&name) {
                return Err(format!(
                    "{item:?} is not in the list of known controllers ({})",
                    KNOWN.join(", ")
                ));
            }
        }
        let enabled = |name: &str| {
            let mut star = false;
            for item in list {
                if item == name {
                    return true;
                }
                if item.strip_prefix('-') == Some(name) {
                    return false;
                }
                star |= item == "*";
            }
            star
        };
        Ok(Self {
            garbage_collector: enabled(GARBAGE_COLLECTOR),
            namespace: enabled(NAMESPACE),
            service_account: enabled(SERVICE_ACCOUNT),
        })
    }

    pub fn any(&self) -> bool {
        self.garbage_collector || self.namespace || self.service_account
    }
}

/// Runs the enabled controllers until shutdown.
pub async fn run(api: Rc<Api>, catalog: Arc<Catalog>, enabled: Enabled) {
    let exec = api.exec.clone();
    let mut informer = Informer::new(exec.clone(), CatalogReader::new(catalog.clone()));
    let mut gc = GarbageCollector::default();
    let mut ns = NamespaceController::new(&api.config.keys);
    let mut sa = ServiceAccountController::new(&api.config.keys);
    let shutdown = exec.shutdown.clone();
    let catalog = CatalogReader::new(catalog);
    while !shutdown.is_triggered() {
        let busy = (enabled.garbage_collector && !gc.queue_idle())
            || (enabled.namespace && !ns.queue_idle())
            || (enabled.service_account && !sa.queue_idle());
        let wait = if busy {
            Duration::ZERO
        } else {
            [gc.next_due(), ns.next_due(), sa.next_due()]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1))
        };
        let batch = futures_lite::future::or(async { Some(informer.next(wait).await) }, async {
            shutdown.wait().await;
            None
        })
        .await;
        match batch {
            None => return,
            Some(Err(e)) => {
                tracing::warn!(error = %e.message, "controllers could not list; retrying");
                glommio::timer::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Some(Ok(None)) => {}
            Some(Ok(Some(Batch::Relisted(items)))) => {
                gc.reset(&items);
                ns.reset(&items);
                sa.reset(&items);
            }
            Some(Ok(Some(Batch::Changes(changes)))) => {
                for c in &changes {
                    gc.observe(c);
                    ns.observe(c);
                    sa.observe(c);
                }
            }
        }
        let snapshot = catalog.current();
        let env = Env {
            api: &api,
            storage: &exec.shards,
            catalog: &snapshot,
        };
        if enabled.garbage_collector {
            gc.process(&env, BUDGET).await;
        }
        if enabled.namespace {
            ns.process(&env, BUDGET).await;
        }
        if enabled.service_account {
            sa.process(&env, BUDGET).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Enabled, String> {
        Enabled::from_flags(&s.split(',').map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn controllers_flag_follows_kube() {
        let all = Enabled {
            garbage_collector: true,
            namespace: true,
            service_account: true,
        };
        assert_eq!(parse("*").unwrap(), all);
        assert_eq!(
            parse("-garbagecollector,-namespace").unwrap(),
            Enabled {
                garbage_collector: false,
                namespace: false,
                service_account: false,
            }
        );
        assert_eq!(
            parse("*,-garbagecollector").unwrap(),
            Enabled {
                garbage_collector: false,
                namespace: true,
                service_account: true,
            }
        );
        assert_eq!(
            parse("namespace").unwrap(),
            Enabled {
                garbage_collector: false,
                namespace: true,
                service_account: false,
            }
        );
        assert!(parse("*,-replicaset")
            .unwrap_err()
            .contains("not in the list of known controllers"));
    }
}
