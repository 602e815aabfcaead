//! DELETE of one object and of a collection, with kube's lifecycle
//! (preconditions, grace periods, finalizers, propagation policy) carried
//! out by the registry.

use super::decode::read_body;
use super::list::{filter, list_objects};
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::{Store, Writer};
use crate::render::negotiation::Input;
use crate::render::response::{self, ListMeta};
use crate::render::warnings::Warnings;
use crate::serving::body::Body;
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::{success_status_json, ApiError};
use kubeshard_shards::store::DeleteOutcome;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

/// DeleteOptions from the body when there is one, query parameters for
/// what the body leaves unset.
async fn delete_options(
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> Result<DeleteOptions, ApiError> {
    let (input, body) = read_body(req).await?;
    let mut opts = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        DeleteOptions::from_body(&decode_delete_options(input, &body)?)?
    };
    opts.merge_query(|k| rr.query.get(k).map(str::to_string))?;
    Ok(opts)
}

/// A DeleteOptions body in any encoding a client may send it in (JSON,
/// YAML, protobuf — kubectl's typed clients and the controllers send
/// protobuf). Like kube, any apiVersion goes as long as the kind is
/// DeleteOptions or unset.
fn decode_delete_options(input: Input, body: &[u8]) -> Result<Value, ApiError> {
    let v = match input {
        Input::Protobuf => kubeshard_core::protobuf::decode_object_or(body, "v1", "DeleteOptions")
            .map_err(ApiError::bad_request)?,
        Input::Yaml => serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?,
        Input::Json => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as DeleteOptions: {e}"
            ))
        })?,
        _ => {
            return Err(ApiError::unsupported_media_type(
                crate::render::negotiation::ACCEPTED_INPUT,
            ))
        }
    };
    match v.get("kind").and_then(Value::as_str).unwrap_or("") {
        "" | "DeleteOptions" => Ok(v),
        other => Err(ApiError::bad_request(format!(
            "no kind {other:?} is registered for the DeleteOptions body"
        ))),
    }
}

/// Who deletes; DeleteOptions carry the dry run (from the body or the
/// query).
fn deleter<'a>(
    rr: &'a ResourceRequest,
    opts: &DeleteOptions,
    notes: Option<&'a Warnings>,
) -> Writer<'a> {
    Writer {
        user: &rr.user,
        dry_run: opts.dry_run,
        notes,
    }
}

pub async fn delete(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let info = rr.resource.clone();
    let opts = delete_options(rr, req).await?;
    let ns = if info.namespaced {
        rr.info.namespace.as_str()
    } else {
        ""
    };
    let warnings = Warnings::default();
    let deletion = match Store::new(api)
        .delete(
            deleter(rr, &opts, Some(&warnings)),
            rr.stored(),
            ns,
            &rr.info.name,
            &opts,
        )
        .await
    {
        Ok(d) => d,
        Err(e) => return warnings.refused(e, rr.render),
    };
    let obj = deletion.object().clone();
    let answered = match deletion {
        DeleteOutcome::Deleted(_) | DeleteOutcome::Pending(_) => {
            info.strategy.return_deleted_object
        }
        DeleteOutcome::Marked(_) | DeleteOutcome::Unchanged(_) => true,
    };
    let served = if answered {
        crate::apiextensions::conversion::served(api, &info, obj).await?
    } else {
        obj
    };
    Ok(warnings.apply(deletion_response(&info, &deletion, &served, &opts, rr)))
}

/// What kube answers for a deletion: a finished (or already pending) one
/// returns the object for kinds that say so and a Success Status naming it
/// otherwise; one that only marked the object returns the marked object
/// (202 when the deprecated `orphanDependents=false` asked for cascading).
fn deletion_response(
    info: &ResourceInfo,
    deletion: &DeleteOutcome,
    obj: &Arc<StoredObject>,
    opts: &DeleteOptions,
    rr: &ResourceRequest,
) -> Response<Body> {
    match deletion {
        DeleteOutcome::Deleted(_) | DeleteOutcome::Pending(_) => deleted_response(info, obj, rr),
        DeleteOutcome::Marked(_) | DeleteOutcome::Unchanged(_) => {
            let code = if opts.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            response::object(code, info, obj, rr.render)
        }
    }
}

/// A finished deletion: the object for kinds that return it, else a
/// Success Status naming it.
pub fn deleted_response(
    info: &ResourceInfo,
    obj: &Arc<StoredObject>,
    rr: &ResourceRequest,
) -> Response<Body> {
    if info.strategy.return_deleted_object {
        return response::object(StatusCode::OK, info, obj, rr.render);
    }
    let body = success_status_json(&info.group, &info.plural, &obj.name, obj.uid());
    let mut resp = response::json_bytes(StatusCode::OK, Body::full(body), rr.render.plain());
    if !rr.render.output.is_protobuf() {
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    resp
}

/// Deletes every listed object with the request's options; answers the
/// list as it was before the deletions (kube returns the listed items).
pub async fn delete_collection(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> HandlerResult {
    let info = rr.resource.clone();
    let opts = delete_options(rr, req).await?;
    let filter = filter(&info, &rr.info.namespace, "", &rr.query)?;
    let listed = list_objects(api, rr, filter).await?;
    let store = Store::new(api);
    for obj in &listed.items {
        match store
            .delete(
                deleter(rr, &opts, None),
                rr.stored(),
                &obj.namespace,
                &obj.name,
                &opts,
            )
            .await
        {
            Ok(_) => {}
            // Deleted concurrently by someone else: not an error here.
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let meta = ListMeta {
        resource_version: listed.meta.resource_version,
        ..Default::default()
    };
    let items = crate::apiextensions::conversion::served_all(api, &info, listed.items).await?;
    Ok(response::list(&info, items, &meta, rr.render))
}
