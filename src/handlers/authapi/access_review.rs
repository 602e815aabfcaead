//! SubjectAccessReview, LocalSubjectAccessReview and
//! SelfSubjectAccessReview (`kubectl auth can-i`): the authorizer's
//! answer for a user and a request described in the spec.

use super::{answer, Api};
use crate::security::authz::{self, Decision};
use crate::storage::Storage;
use kubeshard_core::authn::{Attributes, UserInfo};
use kubeshard_core::status::{field_invalid, field_required, ApiError};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn invalid(kind: &str, causes: Vec<kubeshard_core::status::StatusCause>) -> ApiError {
    ApiError::invalid("authorization.k8s.io", kind, "", causes)
}

/// The request the spec describes.
fn attributes(kind: &str, spec: &Value, local_ns: Option<&str>) -> Result<Attributes, ApiError> {
    let res = spec.get("resourceAttributes").filter(|v| v.is_object());
    let non = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    match (res, non) {
        (Some(r), None) => {
            let mut a = Attributes::resource(
                s(r, "verb"),
                s(r, "group"),
                s(r, "resource"),
                s(r, "namespace"),
                s(r, "name"),
            )
            .with_subresource(s(r, "subresource"));
            a.api_version = s(r, "version").to_string();
            if let Some(ns) = local_ns {
                if a.namespace.is_empty() {
                    a.namespace = ns.to_string();
                } else if a.namespace != ns {
                    return Err(ApiError::bad_request(format!(
                        "spec.resourceAttributes.namespace must match metadata.namespace: {ns:?}"
                    )));
                }
            }
            Ok(a)
        }
        (None, Some(n)) if local_ns.is_none() => {
            Ok(Attributes::non_resource(s(n, "verb"), s(n, "path")))
        }
        (None, Some(_)) => Err(invalid(
            kind,
            vec![field_invalid(
                "spec.nonResourceAttributes",
                "",
                "disallowed on this kind of request",
            )],
        )),
        _ => Err(invalid(
            kind,
            vec![field_invalid(
                "spec.resourceAttributes",
                "",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )],
        )),
    }
}

/// The user a SubjectAccessReview asks about.
fn subject(kind: &str, spec: &Value) -> Result<UserInfo, ApiError> {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let user = UserInfo {
        name: s(spec, "user").to_string(),
        uid: s(spec, "uid").to_string(),
        groups: strings(spec.get("groups")),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), strings(Some(v))))
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default(),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(invalid(
            kind,
            vec![field_required(
                "spec.user",
                "at least one of user or group must be specified",
            )],
        ));
    }
    Ok(user)
}

pub async fn review(
    api: &Api,
    requester: &UserInfo,
    plural: &str,
    url_namespace: &str,
    mut obj: Value,
) -> Result<Value, ApiError> {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let (user, local) = match plural {
        "selfsubjectaccessreviews" => (requester.clone(), None),
        "localsubjectaccessreviews" => (subject(&kind, &spec)?, Some(url_namespace)),
        _ => (subject(&kind, &spec)?, None),
    };
    let attrs = attributes(&kind, &spec, local)?;
    if let Some(ns) = local {
        obj["metadata"]["namespace"] = json!(ns);
        obj["spec"]["resourceAttributes"]["namespace"] = json!(ns);
    }
    let closed = api.storage().progress();
    let decision = authz::decide_fresh(&api.security, &api.exec.hub, &user, &attrs, closed).await;
    let mut status = json!({"allowed": decision.allowed()});
    let reason = decision.reason(&user);
    if matches!(decision, Decision::Deny(_)) {
        status["denied"] = json!(true);
    }
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    Ok(answer(obj, status))
}
