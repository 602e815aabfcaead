//! What an update or a deletion does to a key, given the state it found
//! and the caller's decision ([`UpdateStep`], [`DeleteStep`]). Every
//! backend shares this; backends differ only in how they commit one
//! change (`commit`: the event kind, the new state, the state it
//! replaces → the stored object at its new revision).

use crate::backend::{StorageError, UpdateStep};
use crate::store::{DeleteOutcome, UpdateOutcome};
use kubeshard_cache::{EventType, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::DeleteStep;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

/// Runs a caller's function (an update, a patch, an apply, a deletion
/// plan) on the storage's loop: a panic in it fails that one write with a
/// 500 and leaves the storage serving. Nothing is changed before the
/// function returns, so there is nothing to undo.
pub(crate) fn contained<T>(f: impl FnOnce() -> Result<T, ApiError>) -> Result<T, StorageError> {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    outcome
        .map_err(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %what, "a write's function panicked on its shard");
            StorageError::Internal("the write failed unexpectedly on the server".into())
        })?
        .map_err(StorageError::Refused)
}

/// What an update of `namespace/name` does, found in state `old`.
pub(crate) fn update(
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    old: Option<Arc<StoredObject>>,
    step: UpdateStep,
    mut commit: impl FnMut(EventType, Value, Option<Arc<StoredObject>>) -> Arc<StoredObject>,
) -> Result<UpdateOutcome, StorageError> {
    let (new, delete) = match step {
        UpdateStep::Write(v) => (v, false),
        UpdateStep::Delete(v) => (v, true),
    };
    if meta::namespace(&new) != namespace || meta::name(&new) != name {
        return Err(StorageError::KeyChanged);
    }
    let Some(old) = old else {
        if delete {
            return Err(StorageError::NotFound);
        }
        return Ok(UpdateOutcome::Created(commit(EventType::Added, new, None)));
    };
    let old_value = old.to_value();
    if delete {
        let deleted = commit(EventType::Deleted, old_value, Some(old.clone()));
        let mut response = new;
        meta::set_meta(
            &mut response,
            "resourceVersion",
            Value::String(old.revision.to_string()),
        );
        let response = Arc::new(StoredObject::encode(info, &response, deleted.revision));
        return Ok(UpdateOutcome::Deleted { deleted, response });
    }
    if same_content(&old, old_value, &new) {
        return Ok(UpdateOutcome::Unchanged(old));
    }
    Ok(UpdateOutcome::Updated(commit(
        EventType::Modified,
        new,
        Some(old),
    )))
}

/// What a deletion whose plan decided `step` does to `old`.
pub(crate) fn delete(
    old: Arc<StoredObject>,
    step: DeleteStep,
    mut commit: impl FnMut(EventType, Value, Option<Arc<StoredObject>>) -> Arc<StoredObject>,
) -> DeleteOutcome {
    match step {
        DeleteStep::Delete => {
            let last = old.to_value();
            DeleteOutcome::Deleted(commit(EventType::Deleted, last, Some(old)))
        }
        DeleteStep::MarkThenDelete(mut marked) => {
            meta::remove_meta(&mut marked, "resourceVersion");
            let marked = commit(EventType::Modified, marked, Some(old));
            let last = marked.to_value();
            DeleteOutcome::Deleted(commit(EventType::Deleted, last, Some(marked)))
        }
        DeleteStep::Mark(mut marked) => {
            meta::remove_meta(&mut marked, "resourceVersion");
            if same_content(&old, old.to_value(), &marked) {
                DeleteOutcome::Unchanged(old)
            } else {
                DeleteOutcome::Marked(commit(EventType::Modified, marked, Some(old)))
            }
        }
        DeleteStep::Pending => DeleteOutcome::Pending(old),
    }
}

/// Whether `new` stores the same object as `old` (whose decoded value is
/// `old_value`): compared with both at the stored revision.
fn same_content(old: &StoredObject, mut old_value: Value, new: &Value) -> bool {
    let mut candidate = new.clone();
    let rv = Value::String(old.revision.to_string());
    meta::set_meta(&mut candidate, "resourceVersion", rv.clone());
    meta::set_meta(&mut old_value, "resourceVersion", rv);
    candidate == old_value
}
