//! DELETE of one object and of a collection.

use super::decode::read_body;
use super::list::{filter, list_objects};
use super::namespaces;
use super::response::{self, ListMeta};
use super::{Api, HandlerResult, ResourceRequest};
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::{success_status_json, ApiError};
use kubeshard_shards::store::DeleteCheck;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// The parts of DeleteOptions this slice honours. Graceful deletion and
/// finalizers (propagationPolicy, gracePeriodSeconds) plug in here later.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
}

async fn delete_options(
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> Result<DeleteOptions, ApiError> {
    let (_, body) = read_body(req).await?;
    let mut opts = DeleteOptions {
        dry_run: super::update::dry_run(&rr.query)?,
        ..Default::default()
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(opts);
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body of the request could not be decoded as DeleteOptions: {e}"
        ))
    })?;
    let pre = v.get("preconditions");
    opts.uid = pre
        .and_then(|p| p.get("uid"))
        .and_then(Value::as_str)
        .map(str::to_string);
    opts.resource_version = pre
        .and_then(|p| p.get("resourceVersion"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(d) = v.get("dryRun").and_then(Value::as_array) {
        opts.dry_run |= d.iter().any(|x| x == "All");
    }
    Ok(opts)
}

/// kube's precondition checks, run on the owning shard.
fn preconditions(info: Arc<ResourceInfo>, opts: DeleteOptions) -> DeleteCheck {
    Box::new(move |obj: &Arc<StoredObject>| {
        if let Some(uid) = &opts.uid {
            if **uid != *obj.uid() {
                return Err(ApiError::conflict(
                    &info.group,
                    &info.plural,
                    &obj.name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        obj.uid()
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.resource_version {
            if *rv != obj.revision.to_string() {
                return Err(ApiError::conflict(
                    &info.group,
                    &info.plural,
                    &obj.name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        obj.revision
                    ),
                ));
            }
        }
        Ok(())
    })
}

pub async fn delete(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let info = rr.resource.clone();
    let opts = delete_options(rr, req).await?;
    if info.storage_key.as_ref() == "/namespaces" {
        return namespaces::delete_namespace(
            api,
            rr,
            preconditions(info.clone(), opts.clone()),
            opts.dry_run,
        )
        .await;
    }
    let ns = if info.namespaced {
        rr.info.namespace.as_str()
    } else {
        ""
    };
    api.admission.admit_delete(&info, ns, &rr.info.name)?;
    let deleted = if opts.dry_run {
        let obj = api
            .shards()
            .get(&info.storage_key, ns, &rr.info.name)
            .await?
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &rr.info.name))?;
        preconditions(info.clone(), opts)(&obj)?;
        obj
    } else {
        let obj = api
            .shards()
            .delete(&info, ns, &rr.info.name, preconditions(info.clone(), opts))
            .await?;
        api.shards()
            .wait_closed(obj.revision, Duration::from_secs(5))
            .await;
        obj
    };
    Ok(deleted_response(&info, &deleted, rr))
}

/// What kube answers for a finished deletion: the object for kinds that
/// return it, else a Success Status naming it.
pub fn deleted_response(
    info: &ResourceInfo,
    obj: &Arc<StoredObject>,
    rr: &ResourceRequest,
) -> Response<super::super::serving::body::Body> {
    if info.strategy.return_deleted_object {
        return response::object(StatusCode::OK, info, obj, rr.render);
    }
    let body = success_status_json(&info.group, &info.plural, &obj.name, obj.uid());
    let mut resp = response::json_bytes(
        StatusCode::OK,
        crate::serving::body::Body::full(body),
        response::Render {
            output: if rr.render.output == super::negotiation::Output::Yaml {
                super::negotiation::Output::Yaml
            } else {
                super::negotiation::Output::Json
            },
            pretty: rr.render.pretty,
        },
    );
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub async fn delete_collection(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> HandlerResult {
    let info = rr.resource.clone();
    let opts = delete_options(rr, req).await?;
    let filter = filter(&info, &rr.info.namespace, &rr.query)?;
    let listed = list_objects(api, rr, filter).await?;
    let mut deleted = Vec::with_capacity(listed.items.len());
    let mut last_rev = listed.meta.resource_version;
    for obj in &listed.items {
        if opts.dry_run {
            deleted.push(obj.clone());
            continue;
        }
        api.admission
            .admit_delete(&info, &obj.namespace, &obj.name)?;
        match api
            .shards()
            .delete(
                &info,
                &obj.namespace,
                &obj.name,
                preconditions(info.clone(), opts.clone()),
            )
            .await
        {
            Ok(d) => {
                last_rev = last_rev.max(d.revision);
                deleted.push(d);
            }
            // Deleted concurrently by someone else: not an error here.
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    api.shards()
        .wait_closed(last_rev, Duration::from_secs(5))
        .await;
    let meta = ListMeta {
        resource_version: last_rev,
        ..Default::default()
    };
    Ok(response::list(&info, &deleted, &meta, rr.render))
}
