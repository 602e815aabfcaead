//! The server half of the generic registry (kube's
//! `registry/generic/registry`): the [`store::Store`] every write goes
//! through, the strategies it shapes objects with, and the lifecycle
//! deletes it carries out against the shards. Handlers, the built-in
//! controllers and the bootstrap writers all write through here, so a
//! write means the same thing whoever makes it.

mod delete;
pub mod storage;
pub mod store;
pub mod strategy;

pub use delete::delete;
pub use store::{Creates, Old, Requested, Store, Target, Writer, Written};
pub use strategy::{spec_finalizers, Ownership};

use crate::handlers::managers::Tracking;
use crate::handlers::Api;
use kubeshard_core::authn::{UserInfo, AUTHENTICATED, MASTERS};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

/// The field manager and user of the server's own bootstrap writes.
pub const APISERVER: &str = "kube-apiserver";
/// The field manager and user of the built-in controllers' writes (the
/// ones kube-controller-manager makes in kube).
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// The identity the server's own writers act as (the built-in
/// controllers, the bootstrap): a member of system:masters, as the code
/// is the server's own.
pub fn system_user(name: &str) -> Arc<UserInfo> {
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
}

/// A server-side read-modify-write (controllers, bootstrap) through the
/// Store, as `manager`: the same strategy, admission, field ownership and
/// conflict retries as a client's update.
pub async fn update_with(
    api: &Api,
    manager: &str,
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
    update_as(api, manager, target, requested).await
}

/// A server-side update of what `requested` asks for, as `manager`.
pub async fn update_as(
    api: &Api,
    manager: &str,
    target: Target<'_>,
    requested: Requested,
) -> Result<Written, ApiError> {
    let user = system_user(manager);
    Store::new(api)
        .update(
            Writer {
                user: &user,
                dry_run: false,
            },
            target,
            requested,
            Ownership::Tracked(Tracking::server(manager, target.subresource)),
            Creates::Never,
        )
        .await
}

/// A server-side create through the Store, as `manager`.
pub async fn create_as(
    api: &Api,
    manager: &str,
    info: &Arc<ResourceInfo>,
    obj: Value,
) -> Result<Arc<kubeshard_cache::StoredObject>, ApiError> {
    let user = system_user(manager);
    Store::new(api)
        .create(
            Writer {
                user: &user,
                dry_run: false,
            },
            info,
            obj,
            Ownership::Tracked(Tracking::server(manager, "")),
        )
        .await
}
