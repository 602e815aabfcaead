//! PATCH in kube's four flavours — JSON patch (RFC 6902), JSON merge patch
//! (RFC 7386), strategic merge patch and server-side apply — applied on the
//! owning shard so read-modify-write is atomic (a patch without a
//! resourceVersion never fails on conflict).

use super::decode::{check_result_size, read_body};
use super::fields;
use super::managers;
use super::update::written_response;
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::{Old, Requested};
use crate::render::negotiation::Input;
use crate::render::warnings::Warnings;
use http::Request;
use hyper::body::Incoming;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::fieldvalidation::Issue;
use kubeshard_core::meta;
use kubeshard_core::patch::strategic;
use kubeshard_core::status::{field_forbidden, ApiError};
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

pub async fn patch(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let tracking = managers::tracking(
        &rr.query,
        req.headers(),
        &rr.info.subresource,
        "PatchOptions",
    )?;
    let (input, body) = read_body(req).await?;
    let directive = fields::directive(&rr.query, "PatchOptions")?;
    if input == Input::ApplyPatch {
        return super::apply::apply(api, rr, &body, directive, tracking).await;
    }
    if rr.query.get("force").is_some() {
        return Err(options_invalid(vec![field_forbidden(
            "force",
            "may not be specified for non-apply patch",
        )]));
    }
    let (kind, issues) = decode(rr, input, &body)?;
    let info = rr.resource.clone();
    let (url_ns, url_name) = (rr.info.namespace.clone(), rr.info.name.clone());
    let warnings = Warnings::default();
    let found = warnings.clone();
    let requested: Requested = Box::new(move |old: Option<Old<'_>>| {
        let Some(old) = old else {
            return Err(ApiError::not_found(&info.group, &info.plural, &url_name));
        };
        let mut patched = apply(&kind, old.value.clone())?;
        check_result_size(&patched, old.stored.json_slice().len())?;
        if !patched.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        fields::judge_patched(&info, &mut patched, issues.clone(), directive, &found)?;
        precondition(&info, &patched, old.stored)?;
        if meta::name(&patched) != url_name
            || (info.namespaced && meta::namespace(&patched) != url_ns)
        {
            return Err(ApiError::bad_request(
                "the patch may not change the object's name or namespace",
            ));
        }
        Ok(patched)
    });
    let written = match super::update::change(api, rr, requested, tracking, Some(&warnings)).await {
        Ok(w) => w,
        Err(e) => return warnings.refused(e, rr.render),
    };
    Ok(warnings.apply(written_response(api, rr, &written).await?))
}

/// The patch types kube accepts for every built-in kind.
const SUPPORTED_PATCHES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Kinds without a schema (custom resources) take no strategic merge patch.
const SCHEMALESS_PATCHES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

enum PatchKind {
    Json(json_patch::Patch),
    Merge(Value),
    /// The patch, and the kind whose schema it merges by (checked to have
    /// one when decoded).
    Strategic(Value, Arc<ResourceInfo>),
}

/// Decodes the patch document, with the findings it carries itself.
fn decode(
    rr: &ResourceRequest,
    input: Input,
    body: &[u8],
) -> Result<(PatchKind, Vec<Issue>), ApiError> {
    match input {
        Input::JsonPatch => {
            let (doc, dups) = fields::decode_patch(body)?;
            let mut issues: Vec<Issue> = dups
                .into_iter()
                .map(|i| Issue::JsonPatch(format!("json patch {i}")))
                .collect();
            issues.extend(unknown_op_fields(&doc));
            let ops = serde_json::from_value::<json_patch::Patch>(doc)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            Ok((PatchKind::Json(ops), issues))
        }
        Input::MergePatch => {
            let (doc, issues) = fields::decode_patch(body)?;
            Ok((PatchKind::Merge(doc), issues))
        }
        Input::StrategicMergePatch => {
            if rr.resource.schema().is_none() {
                return Err(ApiError::unsupported_media_type(SCHEMALESS_PATCHES));
            }
            let (doc, issues) = fields::decode_patch(body)?;
            if !doc.is_object() {
                return Err(ApiError::bad_request("invalid JSON document"));
            }
            Ok((PatchKind::Strategic(doc, rr.resource.clone()), issues))
        }
        Input::ApplyPatch | Input::Json | Input::Yaml | Input::Protobuf => {
            Err(ApiError::unsupported_media_type(SUPPORTED_PATCHES))
        }
    }
}

fn apply(kind: &PatchKind, mut current: Value) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Json(p) => {
            kubeshard_core::patch::json::apply(&mut current, p)?;
            Ok(current)
        }
        PatchKind::Merge(p) => {
            json_patch::merge(&mut current, p);
            Ok(current)
        }
        PatchKind::Strategic(p, info) => match info.schema() {
            Some(schema) => strategic::apply(current, p.clone(), schema),
            None => Err(ApiError::unsupported_media_type(SCHEMALESS_PATCHES)),
        },
    }
}

/// Keys of a JSON patch operation beyond the ones RFC 6902 defines.
fn unknown_op_fields(doc: &Value) -> Vec<Issue> {
    let mut out = Vec::new();
    for (i, op) in doc.as_array().into_iter().flatten().enumerate() {
        for key in op.as_object().into_iter().flat_map(|m| m.keys()) {
            if !matches!(key.as_str(), "op" | "path" | "value" | "from") {
                out.push(Issue::JsonPatch(format!(
                    "json patch unknown field \"[{i}].{key}\""
                )));
            }
        }
    }
    out
}

/// A patch (or applied configuration) that names a resourceVersion makes
/// it a precondition: a stale one is a conflict.
pub fn precondition(info: &ResourceInfo, obj: &Value, old: &StoredObject) -> Result<(), ApiError> {
    match meta::resource_version(obj) {
        rv if rv.is_empty() || rv == old.revision.to_string() => Ok(()),
        _ => Err(ApiError::conflict_stale(
            &info.group,
            &info.plural,
            meta::name(obj),
        )),
    }
}

/// kube's 422 for bad patch options.
pub fn options_invalid(causes: Vec<kubeshard_core::status::StatusCause>) -> ApiError {
    ApiError::invalid("meta.k8s.io", "PatchOptions", "", causes)
}
