//! Creates the bootstrap ClusterRoles and ClusterRoleBindings at start
//! (whichever are missing) and adds back what auto-updated ones lost, as
//! kube-apiserver's RBAC post-start hook does.

use super::resource;
use crate::context::Api;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_core::rbac::bootstrap;
use kubeshard_core::status::ApiError;
use serde_json::Value;

pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let roles = resource(api, kubeshard_core::rbac::GROUP, "clusterroles")?;
    let bindings = resource(api, kubeshard_core::rbac::GROUP, "clusterrolebindings")?;
    let wanted = bootstrap::cluster_roles()
        .into_iter()
        .map(|o| (roles.clone(), o))
        .chain(
            bootstrap::cluster_role_bindings()
                .into_iter()
                .map(|o| (bindings.clone(), o)),
        );
    for (info, obj) in wanted {
        let name = kubeshard_core::meta::name(&obj).to_string();
        match api
            .storage()
            .get(&info.storage_key, "", &name)
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
                let at = registry::Addressed::object(&info, "", &name);
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
