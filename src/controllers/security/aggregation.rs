//! The ClusterRole aggregation controller: keeps the `rules` of every
//! ClusterRole with an aggregationRule equal to the union of the rules of
//! the ClusterRoles its selectors match, rewriting it whenever a
//! ClusterRole changes. Reads this executor's RBAC index; writes through
//! the store, so every executor's index sees the result.

use crate::context::Api;
use crate::registry;
use crate::storage::Storage;
use kubeshard_core::rbac::aggregation::aggregate;
use kubeshard_core::status::ApiError;
use serde_json::json;
use std::rc::Rc;

pub async fn run(api: Rc<Api>) {
    let changed = api.security.cluster_roles_changed.clone();
    while !api.shutdown().is_triggered() {
        let listener = changed.listen();
        if let Err(e) = reconcile(&api).await {
            tracing::warn!(error = %e.message, "clusterrole aggregation failed; will retry");
            glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
            continue;
        }
        futures_lite::future::or(listener, api.shutdown().wait()).await;
    }
}

/// Brings every aggregated role up to date before the server reports
/// ready (aggregations chain — view into edit into admin — so this takes
/// a few passes, each on an index that has seen the previous one).
pub async fn settle(api: &Api) -> Result<(), ApiError> {
    for _ in 0..8 {
        let closed = api.storage().progress();
        api.security.informers.catch_up(&api.exec.hub, closed).await;
        if reconcile(api).await? == 0 {
            return Ok(());
        }
    }
    Ok(())
}

/// One pass: rewrite each aggregated role whose rules are out of date;
/// returns how many were rewritten.
async fn reconcile(api: &Api) -> Result<usize, ApiError> {
    let updates: Vec<(String, serde_json::Value)> = {
        let idx = api.security.rbac.borrow();
        idx.cluster_roles()
            .filter_map(|target| {
                let rules = aggregate(target, idx.cluster_roles())?;
                (rules.as_slice() != &*target.rules).then(|| (target.name.clone(), json!(rules)))
            })
            .collect()
    };
    let count = updates.len();
    if count == 0 {
        return Ok(0);
    }
    let info = api.builtin(kubeshard_core::rbac::GROUP, "clusterroles")?;
    for (name, rules) in updates {
        let at = registry::Addressed::object(&info, "", &name);
        let mutation = Box::new(move |new: &mut serde_json::Value| {
            new["rules"] = rules.clone();
            Ok(true)
        });
        let result = registry::update_with(api, &registry::CONTROLLER_MANAGER, at, mutation).await;
        match result {
            Ok(_) => tracing::debug!(%name, "aggregated clusterrole rules updated"),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(count)
}
