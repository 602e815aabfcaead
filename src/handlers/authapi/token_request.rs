//! `POST …/serviceaccounts/{name}/token` (TokenRequest, `kubectl create
//! token`): a bound token for an existing service account, for the asked
//! audiences and lifetime, optionally bound to a Pod, Secret or Node that
//! must exist (and keep existing for the token to work).

use super::Api;
use crate::request::RequestInfo;
use crate::security::authn::serviceaccount::{issue, ObjectRef, TokenSpec};
use crate::security::{DEFAULT_TOKEN_SECONDS, MIN_TOKEN_SECONDS};
use crate::storage::{Storage, StorageResult};
use kubeshard_core::status::{field_invalid, field_not_supported, ApiError};
use serde_json::{json, Value};

fn invalid(name: &str, cause: kubeshard_core::status::StatusCause) -> ApiError {
    ApiError::invalid("authentication.k8s.io", "TokenRequest", name, vec![cause])
}

pub async fn issue_token(api: &Api, info: &RequestInfo, mut obj: Value) -> Result<Value, ApiError> {
    let (ns, name) = (info.namespace.as_str(), info.name.as_str());
    let config = &api.security.config.service_accounts;
    let account = api
        .storage()
        .get(&api.config.keys.builtin("", "serviceaccounts"), ns, name)
        .await
        .or_status()?
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| config.audiences.clone());
    let mut seconds = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_TOKEN_SECONDS);
    if seconds < MIN_TOKEN_SECONDS {
        return Err(invalid(
            name,
            field_invalid(
                "spec.expirationSeconds",
                &seconds.to_string(),
                "may not specify a duration less than 10 minutes",
            ),
        ));
    }
    if let Some(max) = config.max_expiration {
        seconds = seconds.min(max.as_secs() as i64);
    }
    let mut bound = None;
    if let Some(r) = spec.get("boundObjectRef").filter(|r| r.is_object()) {
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
        let (resource, obj_ns) = match kind {
            "Pod" => ("pods", ns),
            "Secret" => ("secrets", ns),
            "Node" => ("nodes", ""),
            other => {
                return Err(invalid(
                    name,
                    field_not_supported(
                        "spec.boundObjectRef.kind",
                        other,
                        &["Pod", "Node", "Secret"],
                    ),
                ))
            }
        };
        let target = r.get("name").and_then(Value::as_str).unwrap_or("");
        let stored = api
            .storage()
            .get(&api.config.keys.builtin("", resource), obj_ns, target)
            .await
            .or_status()?
            .ok_or_else(|| ApiError::not_found("", resource, target))?;
        let want_uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
        if !want_uid.is_empty() && want_uid != stored.uid() {
            return Err(ApiError::conflict(
                "",
                resource,
                target,
                &format!("the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"),
            ));
        }
        obj["spec"]["boundObjectRef"]["uid"] = json!(stored.uid());
        bound = Some((
            kind.to_string(),
            ObjectRef {
                name: target.to_string(),
                uid: stored.uid().to_string(),
            },
        ));
    }
    let (token, exp) = issue(
        config,
        TokenSpec {
            namespace: ns,
            account: ObjectRef {
                name: name.to_string(),
                uid: account.uid().to_string(),
            },
            audiences: audiences.clone(),
            expiration_seconds: seconds,
            bound: bound.as_ref().map(|(k, r)| (k.as_str(), r.clone())),
        },
    )
    .map_err(|e| ApiError::internal(&e))?;
    let expires = chrono::DateTime::from_timestamp(exp, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    obj["apiVersion"] = json!("authentication.k8s.io/v1");
    obj["kind"] = json!("TokenRequest");
    obj["metadata"] = json!({"name": name, "namespace": ns, "creationTimestamp": crate::registry::strategy::now_rfc3339()});
    obj["spec"]["audiences"] = json!(audiences);
    obj["spec"]["expirationSeconds"] = json!(seconds);
    if obj["spec"].get("boundObjectRef").is_none() {
        obj["spec"]["boundObjectRef"] = Value::Null;
    }
    obj["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(obj)
}
