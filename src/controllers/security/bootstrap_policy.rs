//! Creates the bootstrap roles and bindings (cluster-wide and in
//! kube-system / kube-public) at start
//! (whichever are missing) and adds back what auto-updated ones lost, as
//! kube-apiserver's RBAC post-start hook does.

use crate::context::Api;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_core::rbac::bootstrap;
use kubeshard_core::status::ApiError;
use serde_json::Value;

pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let group = kubeshard_core::rbac::GROUP;
    let of = |plural, objects: Vec<Value>| {
        let info = api.builtin(group, plural);
        objects.into_iter().map(move |o| (info.clone(), o))
    };
    let wanted = of("clusterroles", bootstrap::cluster_roles())
        .chain(of(
            "clusterrolebindings",
            bootstrap::cluster_role_bindings(),
        ))
        .chain(of("roles", bootstrap::roles()))
        .chain(of("rolebindings", bootstrap::role_bindings()));
    for (info, obj) in wanted {
        let info = info?;
        let name = kubeshard_core::meta::name(&obj).to_string();
        let namespace = kubeshard_core::meta::namespace(&obj).to_string();
        match api
            .storage()
            .get(&info.storage_key, &namespace, &name)
            .await
            .or_status()?
        {
            None => match registry::create_as(api, &registry::APISERVER, &info, obj).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            },
            Some(existing) => {
                let Some(fixed) = bootstrap::reconcile(&obj, &existing.to_value()) else {
                    continue;
                };
                tracing::info!(%name, kind = %info.kind, "reconciling bootstrap RBAC object");
                let at = registry::Addressed::object(&info, &namespace, &name);
                let mutation = Box::new(move |new: &mut Value| {
                    *new = fixed.clone();
                    Ok(true)
                });
                registry::update_with(api, &registry::APISERVER, at, mutation).await?;
            }
        }
    }
    Ok(())
}
