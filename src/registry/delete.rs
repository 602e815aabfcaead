//! DELETE of one object with kube's lifecycle: preconditions, graceful
//! deletion, finalizers and the collector's propagation finalizers, decided
//! atomically on the owning shard (or, for a dry run, on a snapshot read).

use crate::storage::{Backend, Storage, StorageResult};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::{plan_delete, DeleteContext, DeleteOptions, DeleteStep};
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::DeleteOutcome;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Deletes (or marks for deletion) one object. A dry run reads the object,
/// runs the same decision and answers what the deletion would have
/// returned, writing nothing.
pub async fn delete(
    storage: &Backend,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    opts: &DeleteOptions,
    gc_enabled: bool,
) -> Result<DeleteOutcome, ApiError> {
    let ctx = DeleteContext {
        now: chrono::Utc::now(),
        gc_enabled,
    };
    if opts.dry_run {
        let current = storage
            .get(&info.storage_key, namespace, name)
            .await
            .or_status()?
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
        let step = plan_delete(info, &current.to_value(), opts, &ctx)?;
        let as_stored = |v: Value| stored_at(info, v, &current);
        return Ok(match step {
            DeleteStep::Delete => DeleteOutcome::Deleted(current),
            DeleteStep::MarkThenDelete(v) => DeleteOutcome::Deleted(as_stored(v)),
            DeleteStep::Mark(v) => DeleteOutcome::Marked(as_stored(v)),
            DeleteStep::Pending => DeleteOutcome::Pending(current),
        });
    }
    let (plan_info, plan_opts) = (info.clone(), opts.clone());
    let outcome = storage
        .delete(
            info,
            namespace,
            name,
            Box::new(move |obj| plan_delete(&plan_info, &obj.to_value(), &plan_opts, &ctx)),
        )
        .await
        .for_object(info, name)?;
    storage
        .wait_progress(outcome.object().revision, Duration::from_secs(5))
        .await;
    Ok(outcome)
}

/// A dry-run state as the real write would have answered it: at the
/// current object's resourceVersion (nothing new was drawn).
fn stored_at(info: &ResourceInfo, mut v: Value, current: &StoredObject) -> Arc<StoredObject> {
    meta::set_meta(
        &mut v,
        "resourceVersion",
        Value::String(current.revision.to_string()),
    );
    Arc::new(StoredObject::encode(info, &v, current.revision))
}
