//! Read-modify-write of one object on its owning shard, for writers inside
//! the server (the built-in controllers): the same update rules as a PUT,
//! applied to a change computed from the stored object.

use crate::handlers::update::apply_update;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::UpdateOutcome;
use kubeshard_shards::ShardClient;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Changes an object in place; answers false when there is nothing to
/// change (the write is then skipped).
pub type Mutation = Box<dyn FnOnce(&mut Value) -> Result<bool, ApiError> + Send>;

/// Applies `mutate` to the stored object of that name if its uid is
/// still `uid` (when given): a conflict otherwise, so a controller never
/// touches a recreated object thinking it is the one it saw.
pub async fn update_with(
    shards: &ShardClient,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
    status_only: bool,
    mutate: Mutation,
) -> Result<UpdateOutcome, ApiError> {
    let (i, n, expected) = (info.clone(), name.to_string(), uid.map(str::to_string));
    let outcome = shards
        .update(
            info,
            namespace,
            name,
            Box::new(move |old: Option<&Arc<StoredObject>>| {
                let old = old.ok_or_else(|| ApiError::not_found(&i.group, &i.plural, &n))?;
                if let Some(uid) = expected.filter(|u| **u != *old.uid()) {
                    return Err(ApiError::conflict(
                        &i.group,
                        &i.plural,
                        &n,
                        &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", old.uid()),
                    ));
                }
                let old_value = old.to_value();
                let mut new = old_value.clone();
                if !mutate(&mut new)? {
                    return Ok(old_value);
                }
                apply_update(&i, new, &old_value, status_only)
            }),
        )
        .await?;
    shards
        .wait_closed(outcome.object().revision, Duration::from_secs(5))
        .await;
    Ok(outcome)
}
