//! GET of one object (and of its status subresource, which is the same
//! object).

use super::{Api, HandlerResult, ResourceRequest};
use crate::render::response;
use crate::storage::{Storage, StorageResult};
use http::StatusCode;
use kubeshard_core::meta::parse_resource_version;
use kubeshard_core::status::ApiError;
use std::rc::Rc;

pub async fn get(api: &Rc<Api>, rr: &ResourceRequest) -> HandlerResult {
    let info = &rr.resource;
    let ns = if info.namespaced {
        rr.info.namespace.as_str()
    } else {
        ""
    };
    // resourceVersion=N asks for state no older than N.
    if let Some(rv) = rr
        .query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
    {
        let n = parse_resource_version(rv)
            .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
        super::list::wait_not_older_than(api, n).await?;
    } else if rr.query.get("resourceVersion").is_none_or(str::is_empty) {
        super::list::consistent_revision(api).await?;
    }
    let obj = api
        .storage()
        .get(&info.storage_key, ns, &rr.info.name)
        .await
        .or_status()?
        .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &rr.info.name))?;
    // Never show a revision above the closed one (another shard may still
    // be applying a lower revision).
    api.storage()
        .wait_progress(obj.revision, std::time::Duration::from_secs(5))
        .await;
    let obj = crate::apiextensions::conversion::served(api, info, obj).await?;
    Ok(response::object(StatusCode::OK, info, &obj, rr.render))
}
