//! The namespace `finalize` write: replaces a namespace's `spec.finalizers`
//! and nothing else (the regular update path keeps them as stored). When
//! the last finalizer of a terminating namespace goes, the store deletes
//! the namespace.

use kubeshard_cache::StoredObject;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::TryUpdate;
use serde_json::{json, Value};
use std::sync::Arc;

/// The read-modify-write of a finalize: `resource_version`, when not
/// empty, must be the stored one.
pub fn set_spec_finalizers(name: String, resource_version: String, wanted: Value) -> TryUpdate {
    Box::new(move |old: Option<&Arc<StoredObject>>| {
        let old = old.ok_or_else(|| ApiError::not_found("", "namespaces", &name))?;
        if !resource_version.is_empty() && resource_version != old.revision.to_string() {
            return Err(ApiError::conflict_stale("", "namespaces", &name));
        }
        let mut new = old.to_value();
        if let Some(root) = new.as_object_mut() {
            let spec = root.entry("spec").or_insert_with(|| json!({}));
            if !spec.is_object() {
                *spec = json!({});
            }
            spec["finalizers"] = wanted;
        }
        meta::remove_meta(&mut new, "resourceVersion");
        Ok(new)
    })
}
