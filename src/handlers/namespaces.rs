//! Namespace lifecycle, in the simple synchronous form: objects may only be
//! created in a namespace that exists and is not terminating, and deleting
//! a namespace deletes its contents across all shards first. (Finalizers
//! and the asynchronous namespace controller replace this later.)

use super::delete::deleted_response;
use super::{Api, HandlerResult, ResourceRequest};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::DeleteCheck;
use serde_json::json;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Namespaces the server creates at start; all but kube-node-lease are
/// protected from deletion, as kube's NamespaceLifecycle admission does.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
const PROTECTED: &[&str] = &["default", "kube-system", "kube-public"];

const NAMESPACES_KEY: &str = "/namespaces";

fn namespaces_key() -> Arc<str> {
    Arc::from(NAMESPACES_KEY)
}

/// 404 when the namespace does not exist, 403 when it is terminating.
pub async fn require_active(
    api: &Api,
    info: &ResourceInfo,
    name: &str,
    namespace: &str,
) -> Result<(), ApiError> {
    let ns = api.shards().get(&namespaces_key(), "", namespace).await?;
    let Some(ns) = ns else {
        return Err(ApiError::not_found("", "namespaces", namespace));
    };
    let v = ns.to_value();
    if meta::meta_str(&v, "deletionTimestamp").is_some() {
        return Err(ApiError::forbidden(
            &info.group,
            &info.plural,
            name,
            &format!("unable to create new content in namespace {namespace} because it is being terminated"),
        ));
    }
    Ok(())
}

pub async fn delete_namespace(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    check: DeleteCheck,
    dry_run: bool,
) -> HandlerResult {
    let info = rr.resource.clone();
    let name = rr.info.name.clone();
    if PROTECTED.contains(&name.as_str()) {
        return Err(ApiError::forbidden(
            "",
            "namespaces",
            &name,
            "this namespace may not be deleted",
        ));
    }
    let current = api
        .shards()
        .get(&info.storage_key, "", &name)
        .await?
        .ok_or_else(|| ApiError::not_found("", "namespaces", &name))?;
    check(&current)?;
    if dry_run {
        return Ok(deleted_response(&info, &current, rr));
    }
    // Terminating first, so creates in it are refused while it empties.
    let now = super::create::now_rfc3339();
    let marked = api
        .shards()
        .update(
            &info,
            "",
            &name,
            Box::new(move |old| {
                let old = old.ok_or_else(|| ApiError::not_found("", "namespaces", "namespace"))?;
                let mut v = old.to_value();
                if meta::meta_str(&v, "deletionTimestamp").is_none() {
                    meta::set_meta(&mut v, "deletionTimestamp", json!(now));
                    meta::set_meta(&mut v, "deletionGracePeriodSeconds", json!(0));
                }
                v["status"] = json!({"phase": "Terminating"});
                meta::remove_meta(&mut v, "resourceVersion");
                Ok(v)
            }),
        )
        .await?;
    let namespaced = api.catalog.current().namespaced_resources();
    api.shards()
        .delete_namespace_contents(namespaced, &name)
        .await?;
    let gone = api
        .shards()
        .delete(&info, "", &name, Box::new(|_| Ok(())))
        .await?;
    api.shards()
        .wait_closed(gone.revision, Duration::from_secs(5))
        .await;
    Ok(deleted_response(&info, marked.object(), rr))
}

/// Creates the system namespaces at start (idempotent).
pub async fn bootstrap(api: &Api) -> Result<(), ApiError> {
    let catalog = api.catalog.current();
    let info = catalog
        .lookup("", "v1", "namespaces")
        .cloned()
        .ok_or_else(|| ApiError::internal("namespaces missing from the catalog"))?;
    for ns in SYSTEM_NAMESPACES {
        if api.shards().get(&info.storage_key, "", ns).await?.is_some() {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let prepared = super::create::prepare(&info, obj)?;
        match api.shards().create(&info, prepared).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
