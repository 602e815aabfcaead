//! PATCH: JSON patch (RFC 6902) and JSON merge patch (RFC 7386), applied on
//! the owning shard so read-modify-write is atomic. Strategic merge and
//! server-side apply come with the kubectl surface work.

use super::decode::read_body;
use super::negotiation::Input;
use super::update::{apply_update, dry_run, finish_update};
use super::{Api, HandlerResult, ResourceRequest};
use http::Request;
use hyper::body::Incoming;
use kubeshard_cache::StoredObject;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

pub async fn patch(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let (input, body) = read_body(req).await?;
    let kind = match input {
        Input::JsonPatch => PatchKind::Json(
            serde_json::from_slice::<json_patch::Patch>(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        ),
        Input::MergePatch => PatchKind::Merge(
            serde_json::from_slice::<Value>(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        ),
        Input::StrategicMergePatch
        | Input::ApplyPatch
        | Input::Json
        | Input::Yaml
        | Input::Protobuf => return Err(ApiError::unsupported_media_type(SUPPORTED_PATCHES)),
    };
    let dry = dry_run(&rr.query)?;
    let info = rr.resource.clone();
    let status_only = rr.info.subresource == "status";
    let (url_ns, url_name) = (rr.info.namespace.clone(), rr.info.name.clone());
    let try_update = Box::new(move |old: Option<&Arc<StoredObject>>| {
        let Some(old) = old else {
            return Err(ApiError::not_found(&info.group, &info.plural, &url_name));
        };
        let old_value = old.to_value();
        let mut patched = old_value.clone();
        match &kind {
            PatchKind::Json(p) => {
                json_patch::patch(&mut patched, p).map_err(|e| patch_failed(&e.to_string()))?
            }
            PatchKind::Merge(p) => json_patch::merge(&mut patched, p),
        }
        if !patched.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        // A patch that names a resourceVersion is a precondition.
        match meta::resource_version(&patched) {
            rv if rv.is_empty() || rv == old.revision.to_string() => {}
            _ => {
                return Err(ApiError::conflict_stale(
                    &info.group,
                    &info.plural,
                    &url_name,
                ))
            }
        }
        if meta::name(&patched) != url_name
            || (info.namespaced && meta::namespace(&patched) != url_ns)
        {
            return Err(ApiError::bad_request(
                "the patch may not change the object's name or namespace",
            ));
        }
        apply_update(&info, patched, &old_value, status_only)
    });
    finish_update(api, rr, try_update, dry).await
}

/// The patch types this slice applies.
const SUPPORTED_PATCHES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
];

enum PatchKind {
    Json(json_patch::Patch),
    Merge(Value),
}

/// A JSON patch that cannot apply (failed `test`, missing path): kube
/// answers 422 with the patch library's message.
fn patch_failed(msg: &str) -> ApiError {
    ApiError {
        code: 422,
        reason: "Invalid".into(),
        message: msg.to_string(),
        details: None,
    }
}
