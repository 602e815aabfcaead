//! One executor's security state: the RBAC index and the caches the
//! authenticators consult, each kept current by an informer on this
//! executor's hub.

use super::SecurityConfig;
use crate::informer::{mirror, Change, Informers};
use crate::serving::timer::CoarseTimer;
use kubeshard_cache::{Filter, StoredObject};
use kubeshard_core::authn::bootstrap_token;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::nodeauthz::graph::{NodeGraph, Vertex};
use kubeshard_core::rbac::{RbacIndex, RbacKind};
use kubeshard_core::selector::fields::FieldSelector;
use kubeshard_shards::ExecutorContext;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// A service account as the token authenticator checks it.
#[derive(Debug, Clone)]
pub struct AccountRecord {
    pub uid: String,
    pub terminating: bool,
}

pub struct Security {
    pub config: Arc<SecurityConfig>,
    /// Where the kinds the authenticators and authorizers read are stored.
    pub keys: KeyLayout,
    pub rbac: Rc<RefCell<RbacIndex>>,
    /// (namespace, name) → the account's uid.
    pub accounts: Rc<RefCell<HashMap<(String, String), AccountRecord>>>,
    /// Bootstrap-token Secrets in kube-system by token id.
    pub bootstrap_secrets: Rc<RefCell<HashMap<String, Value>>>,
    pub informers: Rc<Informers>,
    pub timer: Rc<CoarseTimer>,
    /// Recently verified tokens (service-account JWTs cost a signature
    /// check), keyed by the token.
    pub token_cache: RefCell<crate::security::authn::TokenCache>,
    /// Woken when a ClusterRole changes (the aggregation controller).
    pub cluster_roles_changed: Rc<event_listener::Event>,
    /// What each node may reach, for the Node authorizer (kept only when
    /// that authorizer is on).
    pub node_graph: Rc<RefCell<NodeGraph>>,
}

impl Security {
    pub fn new(config: Arc<SecurityConfig>, keys: KeyLayout) -> Self {
        Self {
            config,
            keys,
            rbac: Rc::default(),
            accounts: Rc::default(),
            bootstrap_secrets: Rc::default(),
            informers: Rc::default(),
            timer: Rc::new(CoarseTimer::default()),
            token_cache: RefCell::default(),
            cluster_roles_changed: Rc::new(event_listener::Event::new()),
            node_graph: Rc::default(),
        }
    }

    /// Starts the informers (RBAC kinds, service accounts, bootstrap-token
    /// Secrets) and the request timer on this executor.
    pub fn start(&self, ctx: &Rc<ExecutorContext>) {
        glommio::spawn_local(self.timer.clone().run(ctx.shutdown.clone())).detach();
        for kind in [
            RbacKind::Role,
            RbacKind::ClusterRole,
            RbacKind::RoleBinding,
            RbacKind::ClusterRoleBinding,
        ] {
            let (index, changed) = (self.rbac.clone(), self.cluster_roles_changed.clone());
            let key = self
                .keys
                .builtin(kubeshard_core::rbac::GROUP, kind.plural());
            self.informers.start(
                ctx,
                key,
                Filter::default(),
                Box::new(move |change| {
                    let mut idx = index.borrow_mut();
                    match change {
                        Change::Reset => idx.clear(kind),
                        Change::Upsert(o) => {
                            idx.upsert(kind, &o.to_value());
                            idx.set_revision(o.revision);
                        }
                        Change::Delete(o) => {
                            idx.remove(kind, &o.namespace, &o.name);
                            idx.set_revision(o.revision);
                        }
                    }
                    if kind == RbacKind::ClusterRole {
                        changed.notify(usize::MAX);
                    }
                }),
            );
        }
        self.informers.start(
            ctx,
            self.keys.builtin("", "serviceaccounts"),
            Filter::default(),
            mirror(self.accounts.clone(), |o| Some(key_of(o)), record_of),
        );
        if self.config.modes.contains(&super::authz::Mode::Node) {
            self.start_node_graph(ctx);
        }
        if self.config.bootstrap_tokens {
            let filter = Filter {
                namespace: Some(bootstrap_token::NAMESPACE.into()),
                fields: FieldSelector::parse(&format!("type={}", bootstrap_token::SECRET_TYPE))
                    .expect("a valid field selector"),
                ..Filter::default()
            };
            self.informers.start(
                ctx,
                self.keys.builtin("", "secrets"),
                filter,
                mirror(
                    self.bootstrap_secrets.clone(),
                    |o| {
                        o.name
                            .strip_prefix(bootstrap_token::SECRET_PREFIX)
                            .map(str::to_string)
                    },
                    StoredObject::to_value,
                ),
            );
        }
    }
}

impl Security {
    /// Feeds the node graph from pods, PersistentVolumes,
    /// VolumeAttachments and ResourceSlices, as kube's graph populator.
    fn start_node_graph(&self, ctx: &Rc<ExecutorContext>) {
        let kinds = [
            ("", "pods", Vertex::Pod),
            ("", "persistentvolumes", Vertex::Volume),
            (
                "storage.k8s.io",
                "volumeattachments",
                Vertex::VolumeAttachment,
            ),
            ("resource.k8s.io", "resourceslices", Vertex::ResourceSlice),
        ];
        for (group, plural, kind) in kinds {
            let graph = self.node_graph.clone();
            self.informers.start(
                ctx,
                self.keys.builtin(group, plural),
                Filter::default(),
                Box::new(move |change| {
                    let mut g = graph.borrow_mut();
                    match change {
                        Change::Reset => g.clear(kind),
                        Change::Upsert(o) => {
                            let v = o.to_value();
                            match kind {
                                Vertex::Pod => g.upsert_pod(&v),
                                Vertex::Volume => g.upsert_volume(&v),
                                _ => {
                                    let node = kubeshard_core::meta::str_at(&v, "/spec/nodeName");
                                    g.set_node_of(kind, &o.name, node);
                                }
                            }
                        }
                        Change::Delete(o) => match kind {
                            Vertex::Pod => g.remove_pod(&o.namespace, &o.name),
                            Vertex::Volume => g.remove_volume(&o.name),
                            _ => g.set_node_of(kind, &o.name, ""),
                        },
                    }
                }),
            );
        }
    }
}

fn key_of(o: &StoredObject) -> (String, String) {
    (o.namespace.to_string(), o.name.to_string())
}

fn record_of(o: &StoredObject) -> AccountRecord {
    let v = o.to_value();
    AccountRecord {
        uid: o.uid().to_string(),
        terminating: kubeshard_core::meta::meta_str(&v, "deletionTimestamp").is_some(),
    }
}
