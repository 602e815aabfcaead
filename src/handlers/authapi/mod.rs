//! The authentication and authorization APIs: review kinds that are
//! created and answered, never stored (TokenReview, SelfSubjectReview,
//! SubjectAccessReview, LocalSubjectAccessReview,
//! SelfSubjectAccessReview, SelfSubjectRulesReview), and the
//! `serviceaccounts/{name}/token` subresource that issues bound tokens.
//! They are catalog entries (so discovery lists them and kubectl finds
//! them) served by this path instead of the storage handlers.

mod access_review;
mod rules_review;
mod token_request;
mod token_review;

use super::decode::{check_type, parse_object, read_body};
use super::{Api, HandlerResult};
use crate::filters::RequestUser;
use crate::render::response::{json_bytes, Render};
use crate::request::RequestInfo;
use crate::serving::body::Body;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::rc::Rc;

const GROUPS: [&str; 2] = ["authentication.k8s.io", "authorization.k8s.io"];

/// Whether this path answers the request.
pub fn serves(info: &RequestInfo, resource: &ResourceInfo) -> bool {
    GROUPS.contains(&resource.group.as_str())
        || (resource.group.is_empty()
            && resource.plural == "serviceaccounts"
            && info.subresource == "token")
}

pub async fn serve(
    api: &Rc<Api>,
    req: Request<Incoming>,
    info: &RequestInfo,
    resource: &ResourceInfo,
    render: Render,
) -> HandlerResult {
    let token_request = resource.plural == "serviceaccounts";
    let name_ok = if token_request {
        !info.name.is_empty()
    } else {
        info.name.is_empty()
    };
    if info.verb != "create" || !name_ok {
        return Err(ApiError::method_not_supported(
            &resource.group,
            &resource.plural,
            &info.verb,
        ));
    }
    if resource.namespaced && info.namespace.is_empty() {
        return Err(super::not_found_path());
    }
    let user = req
        .extensions()
        .get::<RequestUser>()
        .map(|u| u.0.clone())
        .ok_or_else(|| ApiError::internal("no user on an authenticated request"))?;
    let (input, body) = read_body(req).await?;
    let mut obj = parse_object(input, &body)?;
    if token_request {
        let writer = crate::registry::Writer {
            user: &user,
            dry_run: false,
            notes: None,
        };
        crate::registry::Store::new(api)
            .admit_subresource_create(
                writer,
                resource,
                "token",
                &info.namespace,
                &info.name,
                &mut obj,
            )
            .await?;
        let out = token_request::issue_token(api, info, obj).await?;
        return Ok(created(out, render));
    }
    check_type(resource, &mut obj)?;
    let out = match resource.plural.as_str() {
        "tokenreviews" => token_review::review(api, obj).await?,
        "selfsubjectreviews" => self_subject_review(&user, obj),
        "selfsubjectrulesreviews" => rules_review::review(api, &user, obj)?,
        _ => access_review::review(api, &user, &resource.plural, &info.namespace, obj).await?,
    };
    Ok(created(out, render))
}

/// Reviews answer 201 with the request object and its status.
fn created(obj: Value, render: Render) -> http::Response<Body> {
    let bytes = serde_json::to_vec(&obj).expect("a Value always serializes");
    json_bytes(StatusCode::CREATED, Body::full(bytes), render)
}

/// The review object as kube returns it: spec echoed, server-filled
/// metadata, `status` set.
fn answer(mut obj: Value, status: Value) -> Value {
    if obj.get("metadata").is_none_or(|m| !m.is_object()) {
        obj["metadata"] = serde_json::json!({});
    }
    obj["metadata"]["creationTimestamp"] = Value::Null;
    obj["status"] = status;
    obj
}

/// SelfSubjectReview (`kubectl auth whoami`): who the request is from.
fn self_subject_review(user: &kubeshard_core::authn::UserInfo, obj: Value) -> Value {
    answer(obj, serde_json::json!({"userInfo": user.to_json()}))
}
