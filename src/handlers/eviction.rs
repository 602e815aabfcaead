//! `pods/eviction` (policy/v1 Eviction): a pod deletion that respects the
//! pod's PodDisruptionBudget — what `kubectl drain`, the cluster
//! autoscaler and the descheduler use. As kube does it: a pod that has
//! finished, has not started, or is already being deleted is deleted
//! without asking; otherwise the one budget selecting it must allow a
//! disruption, which the eviction spends (the budget's status counts it
//! down and records the pod among `disruptedPods`) before deleting, or
//! the answer is 429 and nothing is deleted. A pod selected by two
//! budgets cannot be evicted (500), as in kube.

use super::decode::{read_body, read_subresource_body};
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::strategy::now_rfc3339;
use crate::registry::{self, Store};
use crate::render::response;
use crate::storage::{self, Storage, StorageResult};
use http::Request;
use hyper::body::Incoming;
use kubeshard_cache::StoredObject;
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::registry::lifecycle::deletion_timestamp;
use kubeshard_core::selector::labels::LabelSelector;
use kubeshard_core::status::{ApiError, StatusCause};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

const BUDGET_VIOLATED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

pub async fn evict(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let (input, body) = read_body(req).await?;
    let (namespace, name) = (rr.info.namespace.as_str(), rr.info.name.as_str());
    let mut eviction = read_subresource_body(
        input,
        &body,
        &["policy/v1", "policy/v1beta1"],
        "Eviction",
        name,
    )?;
    let opts = match eviction.get("deleteOptions").filter(|o| !o.is_null()) {
        Some(o) => DeleteOptions::from_body(o)?,
        None => DeleteOptions::default(),
    };
    let pods = &rr.resource;
    let mut writer = super::update::writer(rr)?;
    writer.dry_run |= opts.dry_run;
    Store::new(api)
        .admit_subresource_create(writer, pods, "eviction", namespace, name, &mut eviction)
        .await?;
    let pod = api
        .storage()
        .get(&pods.storage_key, namespace, name)
        .await
        .or_status()?
        .ok_or_else(|| ApiError::not_found("", "pods", name))?
        .to_value();
    if !ignores_budgets(&pod) {
        spend_disruption(api, namespace, &pod, writer.dry_run).await?;
    }
    Store::new(api)
        .delete(writer, pods, namespace, name, &opts)
        .await?;
    Ok(response::created_success(rr.render))
}

/// A pod that is done, not yet running or already going needs no budget.
fn ignores_budgets(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    matches!(phase, Some("Succeeded" | "Failed" | "Pending")) || deletion_timestamp(pod).is_some()
}

/// Finds the pod's budget and spends one of its allowed disruptions,
/// refusing with 429 when none is left.
async fn spend_disruption(
    api: &Api,
    namespace: &str,
    pod: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    let budgets = api.builtin("policy", "poddisruptionbudgets")?;
    let labels: BTreeMap<String, String> = pod
        .pointer("/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    let matching: Vec<Arc<StoredObject>> = storage::list_in(api.storage(), &budgets, namespace)
        .await?
        .into_iter()
        .filter(|b| {
            LabelSelector::from_metav1(
                b.to_value()
                    .pointer("/spec/selector")
                    .unwrap_or(&Value::Null),
            )
            .is_ok_and(|s| !s.is_empty() && s.matches(&labels))
        })
        .collect();
    let budget = match matching.as_slice() {
        [] => return Ok(()),
        [one] => one.to_value(),
        _ => {
            return Err(ApiError::internal(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ))
        }
    };
    let budget_name = meta::name(&budget).to_string();
    check_budget(&budget, &budget_name)?;
    if dry_run {
        return Ok(());
    }
    let pod_name = meta::name(pod).to_string();
    let at = registry::Addressed::status(&budgets, namespace, &budget_name);
    let now = now_rfc3339();
    let check_name = budget_name.clone();
    let mutation = Box::new(move |b: &mut Value| {
        // Checked again on the object being written: a concurrent
        // eviction may have spent the last disruption.
        check_budget(b, &check_name)?;
        let status = b["status"].as_object_mut().expect("checked above");
        let left = status["disruptionsAllowed"].as_i64().unwrap_or(0) - 1;
        status.insert("disruptionsAllowed".into(), json!(left));
        let disrupted = status.entry("disruptedPods").or_insert_with(|| json!({}));
        if !disrupted.is_object() {
            *disrupted = json!({});
        }
        disrupted[&pod_name] = json!(now);
        Ok(true)
    });
    registry::update_with(api, &registry::APISERVER, at, mutation).await?;
    Ok(())
}

/// Whether the budget allows one more disruption now: its status must
/// be current (observed at its generation) and have one to spare.
fn check_budget(budget: &Value, name: &str) -> Result<(), ApiError> {
    let generation = budget
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let observed = budget
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if observed < generation {
        return Err(too_many(
            "the disruption budget is being processed; its status is not current yet",
        ));
    }
    let allowed = budget
        .pointer("/status/disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if allowed <= 0 || !budget["status"].is_object() {
        let needs = budget
            .pointer("/status/desiredHealthy")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let has = budget
            .pointer("/status/currentHealthy")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        return Err(too_many(&format!(
            "The disruption budget {name} needs {needs} healthy pods and has {has} currently"
        )));
    }
    Ok(())
}

/// kube's 429 for an eviction the budget refuses, with the budget's
/// reason as a cause.
fn too_many(detail: &str) -> ApiError {
    let mut e = ApiError::too_many_requests(BUDGET_VIOLATED, 0);
    let details = e.details.get_or_insert_with(Box::default);
    details.causes.push(StatusCause {
        reason: "DisruptionBudget".into(),
        message: detail.into(),
        field: String::new(),
    });
    e
}
