//! The server half of the generic registry (kube's
//! `registry/generic/registry`): the [`store::Store`] every write goes
//! through, the strategies it shapes objects with, and the lifecycle
//! deletes it carries out against the shards. Handlers, the built-in
//! controllers and the bootstrap writers all write through here, so a
//! write means the same thing whoever makes it.

mod delete;
pub mod node_ports;
pub mod ownership;
mod rbac_escalation;
pub mod service_alloc;
pub mod service_ips;
pub mod service_repair;
pub mod store;
pub mod strategy;

pub use delete::delete;
pub use store::{Creates, Old, Requested, Store, Target, Writer, Written};
pub use strategy::{spec_finalizers, Ownership};

use crate::context::Api;
use kubeshard_core::authn::{UserInfo, AUTHENTICATED, MASTERS};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use ownership::Tracking;
use serde_json::Value;
use std::sync::{Arc, LazyLock};

/// One of the server's own writers: the field manager its writes are
/// recorded under and the user admission and audit see, kube's names for
/// both.
pub struct Component {
    pub manager: &'static str,
    user: LazyLock<Arc<UserInfo>>,
}

impl Component {
    /// A member of system:masters, as the code is the server's own (built
    /// once: every server-side write uses it).
    pub fn user(&self) -> &Arc<UserInfo> {
        &self.user
    }
}

/// The server's own bootstrap writes (kube's loopback client).
pub static APISERVER: Component = Component {
    manager: "kube-apiserver",
    user: LazyLock::new(|| system_user("system:apiserver")),
};

/// The built-in controllers' writes (kube-controller-manager's in kube).
pub static CONTROLLER_MANAGER: Component = Component {
    manager: "kube-controller-manager",
    user: LazyLock::new(|| system_user("system:kube-controller-manager")),
};

/// kube-apiserver's APF bootstrap writer (the config producer) and its
/// status writer (the config consumer), by their field-manager names.
pub static APF_PRODUCER: Component = Component {
    manager: "api-priority-and-fairness-config-producer-v1",
    user: LazyLock::new(|| system_user("system:apiserver")),
};

pub static APF_CONSUMER: Component = Component {
    manager: "api-priority-and-fairness-config-consumer-v1",
    user: LazyLock::new(|| system_user("system:apiserver")),
};

fn system_user(name: &str) -> Arc<UserInfo> {
    Arc::new(UserInfo::new(name, &[MASTERS, AUTHENTICATED]))
}

/// A change a server-side writer makes to the stored object, in place;
/// false when there is nothing to change. May run more than once (again
/// after a conflicting write).
pub type Mutation = Box<dyn FnMut(&mut Value) -> Result<bool, ApiError> + Send>;

/// The object a server-side writer addresses, and the one it saw: with a
/// uid, a recreated object of the same name is a conflict, so a writer
/// never touches an object thinking it is the one it saw.
pub struct Addressed<'a> {
    pub info: &'a Arc<ResourceInfo>,
    pub namespace: &'a str,
    pub name: &'a str,
    pub subresource: &'a str,
    pub uid: Option<&'a str>,
}

impl<'a> Addressed<'a> {
    /// The object itself (no subresource), whichever uid it has.
    pub fn object(info: &'a Arc<ResourceInfo>, namespace: &'a str, name: &'a str) -> Self {
        Self {
            info,
            namespace,
            name,
            subresource: "",
            uid: None,
        }
    }

    /// The object's status subresource, whichever uid it has.
    pub fn status(info: &'a Arc<ResourceInfo>, namespace: &'a str, name: &'a str) -> Self {
        Self {
            subresource: "status",
            ..Self::object(info, namespace, name)
        }
    }
}

/// A server-side delete, as `who`, through the Store (admission and the
/// deletion lifecycle included).
pub async fn delete_as(
    api: &Api,
    who: &Component,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    opts: &kubeshard_core::registry::deletion::DeleteOptions,
) -> Result<kubeshard_shards::store::DeleteOutcome, ApiError> {
    let writer = Writer {
        user: who.user(),
        dry_run: false,
        notes: None,
    };
    Store::new(api)
        .delete(writer, info, namespace, name, opts)
        .await
}

/// A server-side read-modify-write (controllers, bootstrap) through the
/// Store, as `who`: the same strategy, admission, field ownership and
/// conflict retries as a client's update.
pub async fn update_with(
    api: &Api,
    who: &Component,
    at: Addressed<'_>,
    mut mutate: Mutation,
) -> Result<Written, ApiError> {
    let (info, name) = (at.info.clone(), at.name.to_string());
    let expected = at.uid.map(str::to_string);
    let requested: Requested = Box::new(move |old: Option<Old<'_>>| {
        let old = old.ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &name))?;
        if let Some(uid) = expected.as_deref().filter(|u| *u != old.stored.uid()) {
            return Err(ApiError::conflict(
                &info.group,
                &info.plural,
                &name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    old.stored.uid()
                ),
            ));
        }
        let mut new = old.value.clone();
        mutate(&mut new)?;
        Ok(new)
    });
    let target = Target {
        info: at.info,
        namespace: at.namespace,
        name: at.name,
        subresource: at.subresource,
    };
    update_as(api, who, target, requested).await
}

/// A server-side update of what `requested` asks for, as `who`.
pub async fn update_as(
    api: &Api,
    who: &Component,
    target: Target<'_>,
    requested: Requested,
) -> Result<Written, ApiError> {
    Store::new(api)
        .update(
            Writer {
                user: who.user(),
                dry_run: false,
                notes: None,
            },
            target,
            requested,
            Ownership::Tracked(Tracking::server(who.manager, target.subresource)),
            Creates::Never,
        )
        .await
}

/// A server-side create through the Store, as `who`.
pub async fn create_as(
    api: &Api,
    who: &Component,
    info: &Arc<ResourceInfo>,
    obj: Value,
) -> Result<Arc<kubeshard_cache::StoredObject>, ApiError> {
    Store::new(api)
        .create(
            Writer {
                user: who.user(),
                dry_run: false,
                notes: None,
            },
            info,
            obj,
            Ownership::Tracked(Tracking::server(who.manager, "")),
        )
        .await
}
