//! PUT: replace an object (or its status).

use super::create::{bind_namespace, prepare};
use super::decode::{check_type, read_body};
use super::fields;
use super::managers::Tracking;
use super::response;
use super::warnings::Warnings;
use super::{Api, HandlerResult, ResourceRequest};
use crate::filters::requestinfo::Query;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry;
use kubeshard_core::status::{field_required, ApiError};
use kubeshard_shards::store::{TryUpdate, UpdateOutcome};
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub async fn update(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let tracking = Tracking::new(
        &rr.query,
        req.headers(),
        &rr.info.subresource,
        "UpdateOptions",
    )?;
    let (input, body) = read_body(req).await?;
    let info = rr.resource.clone();
    let warnings = Warnings::default();
    let directive = fields::directive(&rr.query, "UpdateOptions")?;
    let mut obj = fields::decode_object(&info, input, &body, directive, &warnings)?;
    check_type(&info, &mut obj)?;
    let url_ns = if info.namespaced {
        rr.info.namespace.as_str()
    } else {
        ""
    };
    bind_namespace(&info, url_ns, &mut obj)?;
    match meta::name(&obj) {
        "" => meta::set_meta(&mut obj, "name", Value::String(rr.info.name.clone())),
        n if n == rr.info.name => {}
        n => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({})",
                rr.info.name
            )))
        }
    }
    let dry_run = dry_run(&rr.query)?;
    api.admission.admit_update(&info, &mut obj)?;
    let status_only = rr.info.subresource == "status";
    let creates = if info.strategy.allow_create_on_update && !status_only {
        Creates::Allowed
    } else {
        Creates::Never
    };
    let try_update = replace_with(info.clone(), obj, status_only, tracking);
    finish_update(api, rr, try_update, dry_run, creates)
        .await
        .map(|resp| warnings.apply(resp))
}

/// Whether a write through the update path may create the object it
/// names: a PUT of a kind that allows create on update, and every apply.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Creates {
    Never,
    Allowed,
}

/// Runs an update on the owning shard and answers: 200 with the object,
/// or 201 when the update created it.
pub async fn finish_update(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    try_update: TryUpdate,
    dry_run: bool,
    creates: Creates,
) -> HandlerResult {
    let try_update = crate::filters::authz::escalation::guard_update(api, rr, try_update).await?;
    let try_update = crate::filters::authz::guard_create(api, rr, try_update, creates).await;
    let info = &rr.resource;
    let ns = if info.namespaced {
        rr.info.namespace.as_str()
    } else {
        ""
    };
    if dry_run {
        // Everything a real update runs, on a snapshot read; the answer
        // carries the current resourceVersion, as nothing new was drawn.
        let current = api
            .shards()
            .get(&info.storage_key, ns, &rr.info.name)
            .await?;
        let mut new = try_update(current.as_ref())?;
        let (code, revision) = match &current {
            Some(c) => (StatusCode::OK, c.revision),
            None => (StatusCode::CREATED, 0),
        };
        if revision > 0 {
            meta::set_meta(
                &mut new,
                "resourceVersion",
                Value::String(revision.to_string()),
            );
        }
        let stored = Arc::new(StoredObject::encode(info, &new, revision));
        return Ok(response::object(code, info, &stored, rr.render));
    }
    let outcome = api
        .shards()
        .update(info, ns, &rr.info.name, try_update)
        .await?;
    let obj = outcome.object();
    api.shards()
        .wait_closed(obj.revision, Duration::from_secs(5))
        .await;
    let code = match outcome {
        UpdateOutcome::Created(_) => StatusCode::CREATED,
        _ => StatusCode::OK,
    };
    Ok(response::object(code, info, obj, rr.render))
}

/// The read-modify-write a PUT performs on the owning shard: optimistic
/// concurrency on resourceVersion, server-owned metadata carried over,
/// status kept (or, for the status subresource, only status taken).
pub fn replace_with(
    info: Arc<ResourceInfo>,
    new: Value,
    status_only: bool,
    tracking: Tracking,
) -> TryUpdate {
    Box::new(move |old: Option<&Arc<StoredObject>>| {
        let name = meta::name(&new).to_string();
        let Some(old) = old else {
            if info.strategy.allow_create_on_update && !status_only {
                let mut created = prepare(&info, new)?;
                tracking.record(&info, None, &mut created);
                return Ok(created);
            }
            return Err(ApiError::not_found(&info.group, &info.plural, &name));
        };
        match meta::resource_version(&new) {
            "" if !info.strategy.allow_unconditional_update => {
                return Err(ApiError::invalid(
                    &info.group,
                    &info.kind,
                    &name,
                    vec![field_required(
                        "metadata.resourceVersion",
                        "must be specified for an update",
                    )],
                ));
            }
            "" => {}
            rv if rv != old.revision.to_string() => {
                return Err(ApiError::conflict_stale(&info.group, &info.plural, &name));
            }
            _ => {}
        }
        let old = old.to_value();
        let mut out = apply_update(&info, new, &old, status_only)?;
        tracking.record(&info, Some(&old), &mut out);
        Ok(out)
    })
}

/// The common end of PUT and PATCH on the owning shard: the new state as
/// the registry shapes it (server-owned metadata kept, status or only
/// status taken), without a resourceVersion (the store stamps it), and
/// validated.
pub fn apply_update(
    info: &ResourceInfo,
    mut new: Value,
    old: &Value,
    status_only: bool,
) -> Result<Value, ApiError> {
    let mut out = if status_only {
        registry::prepare_for_status_update(info, &new, old)
    } else {
        registry::prepare_for_update(info, &mut new, old);
        new
    };
    meta::remove_meta(&mut out, "resourceVersion");
    let causes = registry::validate_update(info, &out, old);
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            meta::name(&out),
            causes,
        ));
    }
    Ok(out)
}

/// `dryRun=All` (the only value kube accepts).
pub fn dry_run(q: &Query) -> Result<bool, ApiError> {
    match q.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(super::list::invalid_options(
            "dryRun",
            other,
            "supported values: \"All\"",
        )),
    }
}
