//! The `scale` subresource: an autoscaling/v1 Scale view of any kind whose
//! catalog entry says where its replicas and selector live (deployments
//! now, CRDs' `subresources.scale` later). GET reads the view; PUT and
//! PATCH change only the parent's desired replica count, atomically on
//! the owning shard, with the parent's update rules.

use super::decode::read_body;
use super::managers;
use super::{not_found_path, Api, HandlerResult, ResourceRequest};
use crate::registry::{Old, Requested};
use crate::render::negotiation::{Input, Output};
use crate::render::response::{self, Render};
use crate::serving::body::Body;
use crate::storage::{Storage, StorageResult};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::meta;
use kubeshard_core::registry::scale::{scale_of, set_replicas, SCALE_API_VERSION};
use kubeshard_core::status::{field_invalid_raw, ApiError};
use serde_json::{json, Value};
use std::rc::Rc;
use std::time::Duration;

pub async fn serve(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let info = rr.resource.clone();
    let spec = info.scale.clone().ok_or_else(not_found_path)?;
    let ns = if info.namespaced {
        rr.info.namespace.clone()
    } else {
        String::new()
    };
    let name = rr.info.name.clone();
    let options = match rr.info.verb.as_str() {
        "patch" => "PatchOptions",
        _ => "UpdateOptions",
    };
    // A write through the Scale records its manager on the parent, as an
    // Update of the `scale` subresource owning the replica count.
    let tracking = managers::tracking(&rr.query, req.headers(), "scale", options)?;
    let change = match rr.info.verb.as_str() {
        "get" => {
            let obj = api
                .storage()
                .get(&info.storage_key, &ns, &name)
                .await
                .or_status()?
                .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &name))?;
            api.storage()
                .wait_progress(obj.revision, Duration::from_secs(5))
                .await;
            return respond(
                StatusCode::OK,
                &scale_of(&spec, &obj.to_value())?,
                rr.render,
            );
        }
        "update" => {
            let (input, body) = read_body(req).await?;
            let scale = super::decode::parse_object(input, &body)?;
            check_scale_type(&scale)?;
            Change::Replace(scale)
        }
        "patch" => {
            let (input, body) = read_body(req).await?;
            Change::Patch(parse_patch(input, &body)?)
        }
        _ => return Err(not_found_path()),
    };
    if let Some(n) = change.named().filter(|n| !n.is_empty() && *n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let (i, sp, n) = (info.clone(), spec.clone(), name.clone());
    let requested: Requested = Box::new(move |old: Option<Old<'_>>| {
        let old = old.ok_or_else(|| ApiError::not_found(&i.group, &i.plural, &n))?;
        let scale = change.apply(scale_of(&sp, old.value)?)?;
        match meta::resource_version(&scale) {
            "" => {}
            rv if rv == old.stored.revision.to_string() => {}
            _ => return Err(ApiError::conflict_stale(&i.group, &i.plural, &n)),
        }
        let replicas = validated_replicas(&scale, &n)?;
        let mut new = old.value.clone();
        set_replicas(&sp, &mut new, replicas);
        Ok(new)
    });
    let written = super::update::change(api, rr, requested, tracking, None).await?;
    respond(
        StatusCode::OK,
        &scale_of(&spec, &written.object.to_value())?,
        rr.render,
    )
}

/// What a write does to the Scale view.
#[derive(Clone)]
enum Change {
    Replace(Value),
    Patch(Patch),
}

#[derive(Clone)]
enum Patch {
    Json(json_patch::Patch),
    Merge(Value),
}

impl Change {
    fn named(&self) -> Option<&str> {
        match self {
            Change::Replace(v) => meta::meta_str(v, "name"),
            Change::Patch(_) => None,
        }
    }

    fn apply(&self, mut current: Value) -> Result<Value, ApiError> {
        match self {
            Change::Replace(v) => Ok(v.clone()),
            Change::Patch(Patch::Json(p)) => {
                kubeshard_core::patch::json::apply(&mut current, p)?;
                Ok(current)
            }
            Change::Patch(Patch::Merge(p)) => {
                json_patch::merge(&mut current, p);
                Ok(current)
            }
        }
    }
}

/// A Scale has no lists, so a strategic merge patch of one is a merge
/// patch.
fn parse_patch(input: Input, body: &[u8]) -> Result<Patch, ApiError> {
    let bad = |e: serde_json::Error| ApiError::bad_request(format!("error decoding patch: {e}"));
    match input {
        Input::JsonPatch => Ok(Patch::Json(serde_json::from_slice(body).map_err(bad)?)),
        Input::MergePatch | Input::StrategicMergePatch => {
            Ok(Patch::Merge(serde_json::from_slice(body).map_err(bad)?))
        }
        _ => Err(ApiError::unsupported_media_type(&[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ])),
    }
}

fn check_scale_type(v: &Value) -> Result<(), ApiError> {
    match (v.get("apiVersion").and_then(Value::as_str), v.get("kind").and_then(Value::as_str)) {
        (None | Some("") | Some(SCALE_API_VERSION), None | Some("") | Some("Scale")) => Ok(()),
        (api_version, kind) => Err(ApiError::bad_request(format!(
            "the body of the request is not an {SCALE_API_VERSION} Scale (apiVersion {:?}, kind {:?})",
            api_version.unwrap_or(""),
            kind.unwrap_or("")
        ))),
    }
}

/// `spec.replicas` of a Scale: a whole number, zero or more.
fn validated_replicas(scale: &Value, name: &str) -> Result<i64, ApiError> {
    let raw = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    let invalid = |detail: &str| {
        ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![field_invalid_raw("spec.replicas", &raw.to_string(), detail)],
        )
    };
    match raw.as_i64() {
        Some(n) if n < 0 => Err(invalid("must be greater than or equal to 0")),
        Some(n) if n > i32::MAX as i64 => Err(invalid("must be a 32-bit integer")),
        Some(n) => Ok(n),
        None if raw.is_null() => Ok(0),
        None => Err(invalid("must be an integer")),
    }
}

fn respond(code: StatusCode, scale: &Value, render: Render) -> HandlerResult {
    let bytes = serde_json::to_vec(scale).expect("a Value always serializes");
    let render = match render.output {
        Output::Yaml => render,
        _ => render.plain(),
    };
    Ok(response::json_bytes(code, Body::full(bytes), render))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::{ResourceInfo, ScaleSpec};
    use std::sync::Arc;

    fn deployment_spec() -> (Arc<ResourceInfo>, ScaleSpec) {
        let cat = kubeshard_core::catalog::Catalog::with_builtins().snapshot();
        let info = cat.lookup("apps", "v1", "deployments").unwrap().clone();
        let spec = info.scale.clone().unwrap();
        (info, spec)
    }

    #[test]
    fn replicas_must_be_whole_and_not_negative() {
        assert_eq!(
            validated_replicas(&json!({"spec": {"replicas": 4}}), "w").unwrap(),
            4
        );
        assert_eq!(validated_replicas(&json!({"spec": {}}), "w").unwrap(), 0);
        let e = validated_replicas(&json!({"spec": {"replicas": -1}}), "w").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(e.message, "Scale.autoscaling \"w\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0");
        assert_eq!(
            validated_replicas(&json!({"spec": {"replicas": "3"}}), "w")
                .unwrap_err()
                .code,
            422
        );
    }

    #[test]
    fn patches_apply_to_the_view() {
        let (_, spec) = deployment_spec();
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
        let merged = Change::Patch(Patch::Merge(json!({"spec": {"replicas": 5}})))
            .apply(scale_of(&spec, &d).unwrap())
            .unwrap();
        assert_eq!(merged["spec"]["replicas"], 5);
    }
}
