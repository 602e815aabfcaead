//! Custom resources between their versions. Strategy `None` rewrites
//! apiVersion (synchronously, where built-in kinds convert); strategy
//! `Webhook` sends a ConversionReview to the CRD's webhook and checks
//! what comes back as kube's webhook converter does: one call per object
//! or per list (objects already at the desired version are not sent),
//! the answer's uid, status, count, group/version and kind, and no
//! metadata changed but labels and annotations.

use crate::context::Api;
use crate::webhook::{self, ClientConfig};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::crd::WebhookConversion;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The webhook `info`'s versions convert through, if any.
pub fn webhook_of(info: &ResourceInfo) -> Option<&WebhookConversion> {
    info.custom.as_ref()?.webhook.as_deref()
}

/// Converts `objs` (each at any served version of `info`'s kind) to
/// `info`'s version.
pub async fn convert_values(
    api: &Api,
    info: &ResourceInfo,
    objs: &mut [Value],
) -> Result<(), ApiError> {
    let Some(hook) = webhook_of(info) else {
        for o in objs {
            kubeshard_core::conversion::convert(o, &info.group, &info.version)?;
        }
        return Ok(());
    };
    let desired = info.api_version();
    let pending: Vec<usize> = (0..objs.len())
        .filter(|&i| meta::str_at(&objs[i], "/apiVersion") != desired)
        .collect();
    let Some(&first) = pending.first() else {
        return Ok(());
    };
    let what = format!(
        "{}, Kind={}",
        meta::str_at(&objs[first], "/apiVersion"),
        meta::str_at(&objs[first], "/kind")
    );
    let sent: Vec<Value> = pending.iter().map(|&i| objs[i].clone()).collect();
    // Boxed: the webhook client's state (TLS, HTTP) would otherwise sit
    // inside every read and write future that might convert, and most
    // never do.
    let converted = Box::pin(call(api, hook, &desired, sent))
        .await
        .map_err(|e| ApiError::internal(&format!("conversion webhook for {what} failed: {e}")))?;
    if converted.len() != pending.len() {
        return Err(ApiError::internal(&format!(
            "conversion webhook for {what} returned {} objects, expected {}",
            converted.len(),
            pending.len()
        )));
    }
    for (n, (i, mut out)) in pending.into_iter().zip(converted).enumerate() {
        checked(&objs[i], &mut out, &desired).map_err(|e| {
            ApiError::internal(&format!(
                "conversion webhook for {what} returned invalid converted object at index {n}: {e}"
            ))
        })?;
        objs[i] = out;
    }
    Ok(())
}

/// `obj` at `info`'s version, for a kind whose versions convert through a
/// webhook (others are converted where responses are encoded).
pub async fn served(
    api: &Api,
    info: &ResourceInfo,
    obj: Arc<StoredObject>,
) -> Result<Arc<StoredObject>, ApiError> {
    if !converts_through_webhook(info) {
        return Ok(obj);
    }
    Ok(served_all(api, info, vec![obj]).await?.remove(0))
}

/// Reads at `info`'s version need the webhook (checked before anything
/// is allocated: every GET and write response asks).
fn converts_through_webhook(info: &ResourceInfo) -> bool {
    webhook_of(info).is_some() && !info.is_storage_version()
}

/// `items` at `info`'s version (one webhook call for all of them).
pub async fn served_all(
    api: &Api,
    info: &ResourceInfo,
    items: Vec<Arc<StoredObject>>,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    if !converts_through_webhook(info) || items.is_empty() {
        return Ok(items);
    }
    let mut values: Vec<Value> = items.iter().map(|o| o.to_value()).collect();
    convert_values(api, info, &mut values).await?;
    Ok(items
        .iter()
        .zip(&values)
        .map(|(o, v)| Arc::new(StoredObject::encode(info, v, o.revision)))
        .collect())
}

/// How long a conversion webhook may take (kube bounds it by the
/// request; `--conversion-webhook-timeout`).
fn timeout(api: &Api) -> std::time::Duration {
    api.config.conversion_webhook_timeout
}

/// One ConversionReview exchange: the converted objects, or why not.
async fn call(
    api: &Api,
    hook: &WebhookConversion,
    desired: &str,
    objects: Vec<Value>,
) -> Result<Vec<Value>, String> {
    let review_version = hook
        .review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .ok_or("no supported conversion review versions")?;
    let review_api = format!("apiextensions.k8s.io/{review_version}");
    let uid = uuid::Uuid::new_v4().to_string();
    let request = json!({
        "kind": "ConversionReview",
        "apiVersion": review_api,
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    });
    let cfg = ClientConfig::parse(&hook.client_config)?;
    let body = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    let answer = webhook::post_json(api, &cfg, body, timeout(api)).await?;
    let review: Value = serde_json::from_slice(&answer)
        .map_err(|e| format!("the webhook's answer is not a ConversionReview: {e}"))?;
    response_objects(&review, review_version, &uid)
}

/// The converted objects of a webhook's answer, as kube reads it (a v1
/// answer must be a v1 ConversionReview for this request's uid; v1beta1
/// was never checked so strictly).
fn response_objects(review: &Value, version: &str, uid: &str) -> Result<Vec<Value>, String> {
    if version == "v1" {
        let got = format!(
            "{}, Kind={}",
            meta::str_at(review, "/apiVersion"),
            meta::str_at(review, "/kind")
        );
        if got != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
            ));
        }
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    if version == "v1" && meta::str_at(response, "/uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            meta::str_at(response, "/uid")
        ));
    }
    let status = meta::str_at(response, "/result/status");
    if status != "Success" {
        let message = meta::str_at(response, "/result/message");
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(meta::array_at(response, "/convertedObjects").to_vec())
}

/// Checks one converted object against its original and puts the
/// original's metadata back, keeping only the labels and annotations the
/// webhook returned.
fn checked(original: &Value, converted: &mut Value, desired: &str) -> Result<(), String> {
    if !converted.is_object() {
        return Err("the converted object is not an object".into());
    }
    let got = meta::str_at(converted, "/apiVersion");
    if got != desired {
        return Err(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        ));
    }
    let (want_kind, got_kind) = (
        meta::str_at(original, "/kind"),
        meta::str_at(converted, "/kind"),
    );
    if want_kind != got_kind {
        return Err(format!(
            "invalid kind (expected {want_kind}, received {got_kind})"
        ));
    }
    for (field, what) in [
        ("/metadata/name", "name"),
        ("/metadata/namespace", "namespace"),
        ("/metadata/uid", "UID"),
    ] {
        let (a, b) = (
            meta::str_at(original, field),
            meta::str_at(converted, field),
        );
        if a != b {
            return Err(format!("must have the same {what}: {a} != {b}"));
        }
    }
    restore_meta(original, converted)
}

fn restore_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let returned = match converted.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err("invalid metadata in converted object".into()),
        None => return Err("missing metadata in converted object".into()),
    };
    let mut restored: Map<String, Value> = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match returned.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string in converted object"
                    ));
                }
                if field == "labels" {
                    let errs = kubeshard_core::validation::validate_labels(m, "metadata.labels");
                    if let Some(e) = errs.first() {
                        return Err(format!("{}: {}", e.field, e.message));
                    }
                }
                restored.insert(field.into(), Value::Object(m.clone()));
            }
            Some(_) => return Err(format!("invalid metadata.{field} in converted object")),
        }
    }
    converted["metadata"] = Value::Object(restored);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(uid: &str, objects: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
               "response": {"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}})
    }

    #[test]
    fn answers_are_checked_as_kube_checks_them() {
        let ok = review("u1", json!([{"a": 1}]));
        assert_eq!(
            response_objects(&ok, "v1", "u1").unwrap(),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            response_objects(&ok, "v1", "u2").unwrap_err(),
            "expected response.uid=\"u2\", got \"u1\""
        );
        let mut wrong_kind = ok.clone();
        wrong_kind["kind"] = json!("AdmissionReview");
        assert!(response_objects(&wrong_kind, "v1", "u1")
            .unwrap_err()
            .starts_with("expected webhook response of"));
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Failure", "message": "no v3 here"}}});
        assert_eq!(
            response_objects(&failed, "v1", "u1").unwrap_err(),
            "no v3 here"
        );
        let bare = json!({"response": {"uid": "x", "result": {"status": "Failure"}}});
        assert_eq!(
            response_objects(&bare, "v1beta1", "u1").unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
        assert_eq!(
            response_objects(&json!({}), "v1beta1", "u1").unwrap_err(),
            "no response provided"
        );
    }

    #[test]
    fn converted_objects_keep_their_identity_and_metadata() {
        let original = json!({"apiVersion": "x.io/v1", "kind": "W",
            "metadata": {"name": "a", "namespace": "n", "uid": "1", "resourceVersion": "5",
                         "labels": {"l": "1"}, "annotations": {"k": "v"}}, "spec": {"old": 1}});
        let mut out = json!({"apiVersion": "x.io/v2", "kind": "W",
            "metadata": {"name": "a", "namespace": "n", "uid": "1", "resourceVersion": "99",
                         "labels": {"l": "2"}}, "spec": {"new": 1}});
        checked(&original, &mut out, "x.io/v2").unwrap();
        assert_eq!(out["metadata"]["resourceVersion"], "5", "metadata restored");
        assert_eq!(
            out["metadata"]["labels"],
            json!({"l": "2"}),
            "labels from the webhook"
        );
        assert!(
            out["metadata"].get("annotations").is_none(),
            "annotations dropped by it"
        );
        assert_eq!(out["spec"], json!({"new": 1}));

        let mut renamed = out.clone();
        renamed["metadata"]["name"] = json!("b");
        assert_eq!(
            checked(&original, &mut renamed, "x.io/v2").unwrap_err(),
            "must have the same name: a != b"
        );
        let mut stale = out.clone();
        stale["apiVersion"] = json!("x.io/v1");
        assert_eq!(
            checked(&original, &mut stale, "x.io/v2").unwrap_err(),
            "invalid groupVersion (expected x.io/v2, received x.io/v1)"
        );
        let mut bad_label = out.clone();
        bad_label["metadata"]["labels"] = json!({"l": "not a valid value!"});
        assert!(checked(&original, &mut bad_label, "x.io/v2").is_err());
    }
}
