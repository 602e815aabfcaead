//! The cleanup finalizer: a CRD marked for deletion first has every
//! instance deleted (their own finalizers honoured: the CRD waits for
//! them), then loses its finalizer, and the store removes it. Its
//! `Terminating` condition tells how far it got, in kube's words.

use crate::context::Api;
use crate::registry::{self, Addressed, APISERVER};
use kubeshard_core::catalog::{Catalog, ResourceInfo};
use kubeshard_core::crd::{self, CLEANUP_FINALIZER};
use kubeshard_core::registry::deletion::{DeleteOptions, Propagation};
use kubeshard_core::registry::lifecycle;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

/// Works on a CRD being deleted. Ok(false) while instances remain.
pub async fn run(
    api: &Api,
    catalog: &Arc<Catalog>,
    info: &Arc<ResourceInfo>,
    crd: &Value,
) -> Result<bool, ApiError> {
    if !lifecycle::finalizers(crd)
        .iter()
        .any(|f| f == CLEANUP_FINALIZER)
    {
        return Ok(true);
    }
    let name = kubeshard_core::meta::name(crd).to_string();
    let storage = instances_info(catalog, crd);
    let Some(storage) = storage.filter(|_| crd::is_established(crd)) else {
        finish(
            api,
            info,
            &name,
            "NeverEstablished",
            "resource was never established",
        )
        .await?;
        return Ok(true);
    };
    set_terminating(
        api,
        info,
        &name,
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
    )
    .await?;
    let mut failures = Vec::new();
    for obj in crate::storage::list_all(api.storage(), &storage).await? {
        if crate::controllers::objmeta::Meta::of(&obj).being_deleted() {
            continue;
        }
        let mut opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        opts.preconditions.uid = Some(obj.uid().to_string());
        match registry::delete_as(api, &APISERVER, &storage, &obj.namespace, &obj.name, &opts).await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => failures.push(e.message),
        }
    }
    if !failures.is_empty() {
        set_terminating(
            api,
            info,
            &name,
            "True",
            "InstanceDeletionFailed",
            &format!("could not issue all deletes: [{}]", failures.join(", ")),
        )
        .await?;
        return Ok(false);
    }
    if !crate::storage::list_all(api.storage(), &storage)
        .await?
        .is_empty()
    {
        return Ok(false);
    }
    finish(
        api,
        info,
        &name,
        "InstanceDeletionCompleted",
        "removed all instances",
    )
    .await?;
    Ok(true)
}

/// The catalog entry the CRD's instances are stored through.
fn instances_info(catalog: &Arc<Catalog>, crd: &Value) -> Option<Arc<ResourceInfo>> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str)?;
    let plural = crd
        .pointer("/status/acceptedNames/plural")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())?;
    let version = crd::storage_version(crd)?;
    catalog
        .snapshot()
        .lookup(group, version, plural)
        .filter(|i| i.custom.is_some())
        .cloned()
}

async fn set_terminating(
    api: &Api,
    info: &Arc<ResourceInfo>,
    name: &str,
    status: &'static str,
    reason: &'static str,
    message: &str,
) -> Result<(), ApiError> {
    let message = message.to_string();
    write_status(api, info, name, move |obj| {
        let now = crate::registry::strategy::now_rfc3339();
        crd::set_condition(obj, "Terminating", status, reason, &message, &now)
    })
    .await
}

/// The last step: the outcome in the condition and the finalizer gone
/// (one status write, as kube's finalizer controller makes it).
async fn finish(
    api: &Api,
    info: &Arc<ResourceInfo>,
    name: &str,
    reason: &'static str,
    message: &'static str,
) -> Result<(), ApiError> {
    write_status(api, info, name, move |obj| {
        let now = crate::registry::strategy::now_rfc3339();
        crd::set_condition(obj, "Terminating", "False", reason, message, &now);
        let mut list = lifecycle::finalizers(obj);
        list.retain(|f| f != CLEANUP_FINALIZER);
        lifecycle::set_finalizers(obj, &list);
        true
    })
    .await
}

async fn write_status(
    api: &Api,
    info: &Arc<ResourceInfo>,
    name: &str,
    mut change: impl FnMut(&mut Value) -> bool + Send + 'static,
) -> Result<(), ApiError> {
    let at = Addressed::status(info, "", name);
    match registry::update_with(
        api,
        &APISERVER,
        at,
        Box::new(move |obj: &mut Value| Ok(change(obj))),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
