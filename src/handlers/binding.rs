//! `pods/binding` (and the legacy `bindings` collection): how a scheduler
//! assigns a pod to a node. A pod is bound once: a second binding, or one
//! for a pod that is being deleted or still has scheduling gates, is a
//! conflict. Binding sets `spec.nodeName`, merges the binding's
//! annotations and marks the pod `PodScheduled`, atomically on the pod's
//! shard.

use super::decode::{read_body, read_subresource_body};
use super::managers;
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::strategy::now_rfc3339;
use crate::registry::{Old, Requested};
use crate::render::response;
use http::Request;
use hyper::body::Incoming;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::rc::Rc;

pub async fn bind(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let tracking = managers::tracking(&rr.query, req.headers(), "binding", "CreateOptions")?;
    let (input, body) = read_body(req).await?;
    let binding = read_subresource_body(input, &body, &["v1"], "Binding", &rr.info.name)?;
    bind_pod(api, rr, binding, tracking).await
}

/// `POST namespaces/{ns}/bindings`: the collection form older schedulers
/// use, the pod named by the Binding itself; the same as its
/// `pods/{name}/binding`.
pub async fn bind_collection(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> HandlerResult {
    let tracking = managers::tracking(&rr.query, req.headers(), "binding", "CreateOptions")?;
    let (input, body) = read_body(req).await?;
    let named = super::decode::parse_object(input, &body)?;
    let name = kubeshard_core::meta::name(&named).to_string();
    if name.is_empty() {
        return Err(ApiError::invalid(
            "",
            "Binding",
            "",
            vec![kubeshard_core::status::field_required("metadata.name", "")],
        ));
    }
    let binding = read_subresource_body(input, &body, &["v1"], "Binding", &name)?;
    let pods = api.builtin("", "pods")?;
    let mut info = rr.info.clone();
    (info.resource, info.subresource, info.name) = ("pods".into(), "binding".into(), name);
    let pod = ResourceRequest {
        info,
        resource: pods,
        storage: None,
        query: rr.query.clone(),
        render: rr.render,
        conn: rr.conn.clone(),
        user: rr.user.clone(),
    };
    bind_pod(api, &pod, binding, tracking).await
}

async fn bind_pod(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    binding: Value,
    tracking: super::managers::Tracking,
) -> HandlerResult {
    let name = rr.info.name.clone();
    let target = binding.get("target").cloned().unwrap_or(Value::Null);
    match target.get("kind").and_then(Value::as_str).unwrap_or("") {
        "" | "Node" => {}
        other => {
            return Err(ApiError::invalid(
                "",
                "Binding",
                &name,
                vec![kubeshard_core::status::field_invalid_raw(
                    "target.kind",
                    other,
                    "must be empty or Node",
                )],
            ))
        }
    }
    let node = target
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if node.is_empty() {
        return Err(ApiError::invalid(
            "",
            "Binding",
            &name,
            vec![kubeshard_core::status::field_required("target.name", "")],
        ));
    }
    let uid = meta::meta_str(&binding, "uid").unwrap_or("").to_string();
    let rv = meta::resource_version(&binding).to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let now = now_rfc3339();
    let requested: Requested = Box::new(move |old: Option<Old<'_>>| {
        let old = old.ok_or_else(|| ApiError::not_found("", "pods", &name))?;
        let conflict = |why: String| ApiError::conflict("", "pods/binding", &name, &why);
        let stored_uid = meta::meta_str(old.value, "uid").unwrap_or("");
        if !uid.is_empty() && stored_uid != uid {
            return Err(conflict(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {stored_uid}"
            )));
        }
        if !rv.is_empty() && rv != old.stored.revision.to_string() {
            return Err(ApiError::conflict_stale("", "pods", &name));
        }
        if old
            .value
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            return Err(conflict(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        let assigned = old
            .value
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !assigned.is_empty() {
            return Err(conflict(format!(
                "pod {name} is already assigned to node {assigned:?}"
            )));
        }
        if old
            .value
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty())
        {
            return Err(conflict(format!(
                "pod {name} has non-empty .spec.schedulingGates"
            )));
        }
        let mut pod = old.value.clone();
        pod["spec"]["nodeName"] = json!(node);
        if !annotations.is_empty() {
            let md = meta::metadata_mut(&mut pod);
            let a = md.entry("annotations").or_insert_with(|| json!({}));
            if !a.is_object() {
                *a = json!({});
            }
            for (k, v) in &annotations {
                a[k] = v.clone();
            }
        }
        scheduled(&mut pod, &now);
        Ok(pod)
    });
    super::update::change(api, rr, requested, tracking, None).await?;
    Ok(response::created_success(rr.render))
}

/// Sets the `PodScheduled` condition to True (its transition time only
/// when it changes).
fn scheduled(pod: &mut Value, now: &str) {
    let status = pod
        .as_object_mut()
        .expect("a stored pod is an object")
        .entry("status")
        .or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = status
        .as_object_mut()
        .expect("just made an object")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("just made an array");
    match list.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(c) if c["status"] == "True" => {}
        Some(c) => {
            c["status"] = json!("True");
            c["lastTransitionTime"] = json!(now);
            if let Some(m) = c.as_object_mut() {
                m.remove("reason");
                m.remove("message");
            }
        }
        None => list.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now})),
    }
}
