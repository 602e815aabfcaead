//! The security front end's own controllers (on executor 0): the bootstrap
//! RBAC policy, ClusterRole aggregation and the legacy service-account
//! token filler. They read the executor's security state (fed by
//! `crate::informer`) and write through `ShardClient` like any writer.

pub mod aggregation;
pub mod bootstrap_policy;
pub mod legacy_tokens;

use crate::context::Api;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use std::sync::Arc;

/// The catalog entry of a built-in resource.
pub(crate) fn resource(
    api: &Api,
    group: &str,
    plural: &str,
) -> Result<Arc<ResourceInfo>, ApiError> {
    api.catalog
        .current()
        .lookup(group, "v1", plural)
        .cloned()
        .ok_or_else(|| ApiError::internal(&format!("{plural} missing from the catalog")))
}
