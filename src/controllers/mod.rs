//! Built-in controllers: the garbage collector, the namespace controller,
//! the service-account and root-CA publishers and the CSR signer that
//! kube-controller-manager would otherwise run, since many
//! kubeshard deployments run no controller manager. They run as one task
//! on executor 0, reading the executor's merged event stream through an
//! in-process [`informer`] and writing through the registry, the same way
//! requests do. `--controllers` switches them, in kube's flag style.

mod csrsigning;
mod eventttl;
mod garbagecollector;
mod informer;
pub mod kubernetes_service;
pub mod leaderelection;
mod namespace;
mod namespace_object;
pub(crate) mod objmeta;
mod policy_status;
mod queue;
mod resource_quota;
pub mod security;
mod storage_protection;
pub mod system_objects;

use crate::context::Api;
use crate::registry;
use csrsigning::CsrSigningController;
use eventttl::EventTtl;
use garbagecollector::GarbageCollector;
use informer::{Batch, Informer};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::catalog::{Catalog, CatalogReader, CatalogSnapshot};
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::DeleteOutcome;
use namespace::NamespaceController;
use namespace_object::{NamespaceObjectController, Wanted};
use policy_status::{PolicyStatusController, VALIDATING_ADMISSION_POLICY_STATUS};
use resource_quota::{ResourceQuotaController, RESOURCE_QUOTA};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use storage_protection::{StorageProtectionController, PVC_PROTECTION, PV_PROTECTION};

pub const GARBAGE_COLLECTOR: &str = "garbagecollector";
pub const NAMESPACE: &str = "namespace";
pub const SERVICE_ACCOUNT: &str = "serviceaccount";
pub const ROOT_CA_PUBLISHER: &str = "root-ca-cert-publisher";
pub const CSR_SIGNING: &str = "csrsigning";
/// kube-controller-manager's names, all on by default.
const KNOWN: &[&str] = &[
    GARBAGE_COLLECTOR,
    NAMESPACE,
    SERVICE_ACCOUNT,
    ROOT_CA_PUBLISHER,
    CSR_SIGNING,
    PVC_PROTECTION,
    PV_PROTECTION,
    RESOURCE_QUOTA,
    VALIDATING_ADMISSION_POLICY_STATUS,
];

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
        registry::delete_as(
            self.api,
            &registry::CONTROLLER_MANAGER,
            info,
            namespace,
            name,
            opts,
        )
        .await
    }
}

/// Which built-in controllers run (by kube-controller-manager's names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enabled(Vec<&'static str>);

impl Enabled {
    /// kube-controller-manager's `--controllers` rules: a name enables a
    /// controller, `-name` disables it, `*` enables those on by default
    /// (all are) and an explicit choice wins over `*`.
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
        Ok(Self(KNOWN.iter().copied().filter(|n| enabled(n)).collect()))
    }
}

/// What the run loop asks of every built-in controller: its queue's
/// state, the informer's events, and a bounded round of work.
trait Controller {
    fn queue_idle(&self) -> bool;
    fn next_due(&self) -> Option<Duration>;
    fn reset(&mut self, items: &[informer::Change]);
    fn observe(&mut self, c: &informer::Change);
    fn process<'a>(
        &'a mut self,
        env: &'a Env<'a>,
        budget: usize,
    ) -> Pin<Box<dyn Future<Output = ()> + 'a>>;
}

/// Each controller's work queue (its `queue`) and own methods serve as
/// its [`Controller`] ones.
macro_rules! controller {
    ($($t:ty),*) => {$(
        impl Controller for $t {
            fn queue_idle(&self) -> bool {
                self.queue.is_idle()
            }
            fn next_due(&self) -> Option<Duration> {
                self.queue.next_due()
            }
            fn reset(&mut self, items: &[informer::Change]) {
                <$t>::reset(self, items)
            }
            fn observe(&mut self, c: &informer::Change) {
                <$t>::observe(self, c)
            }
            fn process<'a>(
                &'a mut self,
                env: &'a Env<'a>,
                budget: usize,
            ) -> Pin<Box<dyn Future<Output = ()> + 'a>> {
                Box::pin(<$t>::process(self, env, budget))
            }
        }
    )*};
}

controller!(
    GarbageCollector,
    NamespaceController,
    NamespaceObjectController,
    CsrSigningController,
    StorageProtectionController,
    ResourceQuotaController,
    PolicyStatusController,
    EventTtl
);

/// The enabled controllers, built, and the API server's own event expiry
/// (which etcd does itself, by leases, when it is the store).
fn build(api: &Api, enabled: &Enabled) -> Vec<Box<dyn Controller>> {
    let keys = &api.config.keys;
    let security = &api.security.config;
    let mut out: Vec<Box<dyn Controller>> = Vec::new();
    if !api.storage().sequencer().is_mirrored() {
        out.push(Box::new(EventTtl::new(keys, api.config.event_ttl)));
    }
    for name in &enabled.0 {
        out.push(match *name {
            GARBAGE_COLLECTOR => Box::new(GarbageCollector::default()),
            NAMESPACE => Box::new(NamespaceController::new(keys)),
            SERVICE_ACCOUNT => Box::new(NamespaceObjectController::new(
                keys,
                Wanted {
                    plural: "serviceaccounts",
                    name: "default",
                    object: Box::new(|ns| {
                        json!({"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": "default", "namespace": ns}})
                    }),
                    owned: &[],
                },
            )),
            ROOT_CA_PUBLISHER => {
                let ca = security.trust_pem.clone();
                Box::new(NamespaceObjectController::new(
                    keys,
                    Wanted {
                        plural: "configmaps",
                        name: ROOT_CA_CONFIG_MAP,
                        object: Box::new(move |ns| root_ca_config_map(ns, &ca)),
                        owned: &["data"],
                    },
                ))
            }
            CSR_SIGNING => Box::new(CsrSigningController::new(
                keys,
                security.csr_signer.clone(),
                security.csr_signing_duration,
            )),
            PVC_PROTECTION => Box::new(StorageProtectionController::new(keys, true)),
            PV_PROTECTION => Box::new(StorageProtectionController::new(keys, false)),
            RESOURCE_QUOTA => Box::new(ResourceQuotaController::new(keys)),
            VALIDATING_ADMISSION_POLICY_STATUS => Box::new(PolicyStatusController::new(keys)),
            other => unreachable!("{other} is not a known controller"),
        });
    }
    out
}

/// The ConfigMap every namespace gets with the CA that signed the API
/// server's certificate, so pods can trust `kubernetes.default.svc`.
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

fn root_ca_config_map(ns: &str, ca: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": ns, "annotations": {
            "kubernetes.io/description": "The CA bundle that signed the API server's serving certificate: \
                pods verify kubernetes.default.svc with it."}},
        "data": {"ca.crt": ca}})
}

/// Runs the enabled controllers until shutdown; over a store other
/// servers share, only while this one leads (see [`leaderelection`]).
pub async fn run(api: Rc<Api>, catalog: Arc<Catalog>, enabled: Enabled) {
    if !api.storage().sequencer().is_mirrored() {
        return run_while(api, catalog, &enabled, || true).await;
    }
    let election = Rc::new(leaderelection::Election::default());
    glommio::spawn_local(leaderelection::run(
        api.clone(),
        election.clone(),
        leaderelection::identity(),
    ))
    .detach();
    let shutdown = api.exec.shutdown.clone();
    while !shutdown.is_triggered() {
        futures_lite::future::or(election.until_leading(), shutdown.wait()).await;
        let lead = election.clone();
        run_while(api.clone(), catalog.clone(), &enabled, move || {
            lead.leading()
        })
        .await;
    }
}

/// Runs the enabled controllers until shutdown or until `go_on` says no.
async fn run_while(
    api: Rc<Api>,
    catalog: Arc<Catalog>,
    enabled: &Enabled,
    go_on: impl Fn() -> bool,
) {
    let exec = api.exec.clone();
    let mut informer = Informer::new(exec.clone(), CatalogReader::new(catalog.clone()));
    let mut controllers = build(&api, enabled);
    let shutdown = exec.shutdown.clone();
    let catalog = CatalogReader::new(catalog);
    while !shutdown.is_triggered() && go_on() {
        let busy = controllers.iter().any(|c| !c.queue_idle());
        let wait = if busy {
            Duration::ZERO
        } else {
            controllers
                .iter()
                .filter_map(|c| c.next_due())
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
                for c in &mut controllers {
                    c.reset(&items);
                }
            }
            Some(Ok(Some(Batch::Changes(changes)))) => {
                for change in &changes {
                    for c in &mut controllers {
                        c.observe(change);
                    }
                }
            }
        }
        let snapshot = catalog.current();
        let env = Env {
            api: &api,
            storage: &exec.shards,
            catalog: &snapshot,
        };
        for c in &mut controllers {
            c.process(&env, BUDGET).await;
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
        assert_eq!(parse("*").unwrap(), Enabled(KNOWN.to_vec()));
        assert_eq!(
            parse("-garbagecollector,-namespace").unwrap(),
            Enabled(vec![])
        );
        assert_eq!(
            parse("*,-garbagecollector").unwrap(),
            Enabled(vec![
                NAMESPACE,
                SERVICE_ACCOUNT,
                ROOT_CA_PUBLISHER,
                CSR_SIGNING,
                PVC_PROTECTION,
                PV_PROTECTION,
                RESOURCE_QUOTA,
                VALIDATING_ADMISSION_POLICY_STATUS,
            ])
        );
        assert_eq!(
            parse("csrsigning,namespace").unwrap(),
            Enabled(vec![NAMESPACE, CSR_SIGNING])
        );
        assert!(parse("nope").is_err());
    }
}
