//! POST: create an object.

use super::decode::{check_type, read_body};
use super::fields;
use super::managers::{self, Tracking};
use super::update::writer;
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::Writer;
use crate::registry::{Ownership, Store};
use crate::render::response;
use crate::render::warnings::Warnings;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::lifecycle;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::rc::Rc;

pub async fn create(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    if !rr.info.name.is_empty() {
        return Err(ApiError::method_not_supported(
            &rr.resource.group,
            &rr.resource.plural,
            "create",
        ));
    }
    let tracking = managers::tracking(&rr.query, req.headers(), "", "CreateOptions")?;
    let (input, body) = read_body(req).await?;
    let info = &rr.resource;
    let warnings = Warnings::default();
    let directive = fields::directive(&rr.query, "CreateOptions")?;
    let obj = fields::decode_object(info, input, &body, directive, &warnings)?;
    if info.custom.is_some() {
        warnings.extend(lifecycle::finalizer_warnings(&obj, None));
    }
    match create_decoded(api, rr, obj, tracking, Some(&warnings)).await {
        Ok(resp) => Ok(warnings.apply(resp)),
        Err(e) => warnings.refused(e, rr.render),
    }
}

/// Create of a decoded body: its type and namespace checked here, the
/// rest (admission, name generation, strategy, storage) by the Store.
async fn create_decoded(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    mut obj: Value,
    tracking: Tracking,
    notes: Option<&Warnings>,
) -> HandlerResult {
    let info = &rr.resource;
    check_type(info, &mut obj)?;
    bind_namespace(info, &rr.info.namespace, &mut obj)?;
    crate::apiextensions::conversion::convert_values(
        api,
        rr.stored(),
        std::slice::from_mut(&mut obj),
    )
    .await?;
    let stored = Store::new(api)
        .create(
            Writer {
                notes,
                ..writer(rr)?
            },
            rr.stored(),
            obj,
            Ownership::Tracked(tracking),
        )
        .await?;
    let stored = crate::apiextensions::conversion::served(api, info, stored).await?;
    Ok(response::object(
        StatusCode::CREATED,
        info,
        &stored,
        rr.render,
    ))
}

/// Reconciles the body's namespace with the URL's (kube: 400 on mismatch;
/// absent means the URL's).
pub fn bind_namespace(info: &ResourceInfo, url_ns: &str, obj: &mut Value) -> Result<(), ApiError> {
    if !info.namespaced {
        meta::remove_meta(obj, "namespace");
        return Ok(());
    }
    match meta::namespace(obj) {
        "" => meta::set_meta(obj, "namespace", json!(url_ns)),
        ns if ns == url_ns => {}
        _ => return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
    Ok(())
}
