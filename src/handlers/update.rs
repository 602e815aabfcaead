//! PUT: replace an object (or its status), through the registry Store.

use super::create::bind_namespace;
use super::decode::{check_type, read_body};
use super::fields;
use super::managers::{self, Tracking};
use super::{Api, HandlerResult, ResourceRequest};
use crate::apiextensions::conversion;
use crate::registry::store::Written;
use crate::registry::{Creates, Old, Ownership, Requested, Store, Target, Writer};
use crate::render::response;
use crate::render::warnings::Warnings;
use crate::request::Query;
use crate::storage::{Storage, StorageResult};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::lifecycle;
use kubeshard_core::status::{field_required, ApiError};
use parking_lot::Mutex;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

pub async fn update(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let tracking = managers::tracking(
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
    let status_only = rr.info.subresource == "status";
    let creates = if info.strategy.allow_create_on_update && !status_only {
        Creates::Allowed
    } else {
        Creates::Never
    };
    let requested = replace(info, obj);
    let written = write(
        api,
        rr,
        requested,
        Ownership::Tracked(tracking),
        creates,
        Some(&warnings),
    )
    .await;
    let written = match written {
        Ok(w) => w,
        Err(e) => return warnings.refused(e, rr.render),
    };
    Ok(warnings.apply(written_response(api, rr, &written).await?))
}

/// A request's update through the Store: its writer, its target, what it
/// asks for.
pub async fn write(
    api: &Api,
    rr: &ResourceRequest,
    requested: Requested,
    ownership: Ownership,
    creates: Creates,
    notes: Option<&Warnings>,
) -> Result<Written, ApiError> {
    // One async function, the Store's future inline: a nested one cost
    // every update a copy of that future.
    let warned = (rr.resource.custom.is_some() && rr.info.subresource.is_empty())
        .then(|| Arc::new(Mutex::new(Vec::new())));
    let requested = match &warned {
        Some(w) => warning_on_finalizers(requested, w.clone()),
        None => requested,
    };
    let requested = match &rr.storage {
        None => requested,
        Some(stored) if conversion::webhook_of(stored).is_some() => {
            // Boxed: a rare path whose state would double every write's.
            let written = Box::pin(write_through_webhook(
                api, rr, stored, requested, ownership, creates, notes,
            ))
            .await?;
            return Ok(with_warnings(written, warned));
        }
        Some(stored) => converting(rr.resource.clone(), stored.clone(), requested),
    };
    let written = Store::new(api)
        .update(
            Writer {
                notes,
                ..writer(rr)?
            },
            target(rr),
            requested,
            ownership,
            creates,
        )
        .await?;
    Ok(with_warnings(written, warned))
}

fn with_warnings(mut written: Written, warned: Option<Arc<Mutex<Vec<String>>>>) -> Written {
    if let Some(w) = warned {
        written.warnings = std::mem::take(&mut *w.lock());
    }
    written
}

/// Records kube's warnings about the finalizers an update of a custom
/// resource adds (from its last run: a conflict runs it again).
fn warning_on_finalizers(mut requested: Requested, warned: Arc<Mutex<Vec<String>>>) -> Requested {
    Box::new(move |old: Option<Old<'_>>| {
        let new = requested(old)?;
        *warned.lock() = lifecycle::finalizer_warnings(&new, old.map(|o| o.value));
        Ok(new)
    })
}

/// How often a write through a conversion webhook starts again because
/// the object changed while the webhook converted it.
const WEBHOOK_WRITE_ATTEMPTS: usize = 5;

/// A write at a version that converts through a webhook. The Store's
/// update runs its closure synchronously (and again on conflict), and a
/// webhook call cannot run there: so the stored object is read and
/// converted first, the request's change made at its version and
/// converted back, and the Store stores that only if the object is still
/// the one converted — else all of it again, as a conflict would.
async fn write_through_webhook(
    api: &Api,
    rr: &ResourceRequest,
    stored: &Arc<ResourceInfo>,
    mut requested: Requested,
    ownership: Ownership,
    creates: Creates,
    notes: Option<&Warnings>,
) -> Result<Written, ApiError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let t = target(rr);
    for _ in 0..WEBHOOK_WRITE_ATTEMPTS {
        let current = api
            .storage()
            .get(&stored.storage_key, t.namespace, t.name)
            .await
            .or_status()?;
        let mut seen: Vec<Value> = current.iter().map(|o| o.to_value()).collect();
        conversion::convert_values(api, &rr.resource, &mut seen).await?;
        let old = current
            .as_ref()
            .zip(seen.first())
            .map(|(stored, value)| Old { stored, value });
        let mut new = [requested(old)?];
        conversion::convert_values(api, stored, &mut new).await?;
        let [new] = new;
        let expected = current.as_ref().map(|o| o.revision);
        let raced = Arc::new(AtomicBool::new(false));
        let flag = raced.clone();
        let same_object: Requested = Box::new(move |old: Option<Old<'_>>| {
            if old.map(|o| o.stored.revision) != expected {
                flag.store(true, Ordering::Relaxed);
                return Err(ApiError::internal("changed while converting"));
            }
            Ok(new.clone())
        });
        match Store::new(api)
            .update(
                Writer {
                    notes,
                    ..writer(rr)?
                },
                t,
                same_object,
                ownership.clone(),
                creates,
            )
            .await
        {
            Err(_) if raced.load(Ordering::Relaxed) => continue,
            other => return other,
        }
    }
    Err(ApiError::conflict(
        &rr.resource.group,
        &rr.resource.plural,
        &rr.info.name,
        "the object kept changing while its conversion webhook converted it; please try again",
    ))
}

/// What a request at a version objects are not stored at asks for: it
/// sees the stored object at its own version, and its answer is stored
/// at the storage version.
fn converting(
    served: Arc<ResourceInfo>,
    stored: Arc<ResourceInfo>,
    mut requested: Requested,
) -> Requested {
    use kubeshard_core::conversion::convert;
    Box::new(move |old: Option<Old<'_>>| {
        let seen = match old {
            Some(o) => {
                let mut v = o.value.clone();
                convert(&mut v, &served.group, &served.version)?;
                Some((o.stored, v))
            }
            None => None,
        };
        let old = seen.as_ref().map(|(stored, value)| Old { stored, value });
        let mut new = requested(old)?;
        convert(&mut new, &stored.group, &stored.version)?;
        Ok(new)
    })
}

/// A request's change to an object that must exist (PATCH, `/scale`,
/// `/finalize`), recorded for its field manager.
pub async fn change(
    api: &Api,
    rr: &ResourceRequest,
    requested: Requested,
    tracking: Tracking,
    notes: Option<&Warnings>,
) -> Result<Written, ApiError> {
    write(
        api,
        rr,
        requested,
        Ownership::Tracked(tracking),
        Creates::Never,
        notes,
    )
    .await
}

/// Who a handler's write acts as, and whether it is a dry run.
pub fn writer(rr: &ResourceRequest) -> Result<Writer<'_>, ApiError> {
    Ok(Writer {
        user: &rr.user,
        dry_run: dry_run(&rr.query)?,
        notes: None,
    })
}

/// The object (or part of it) a request addresses.
pub fn target(rr: &ResourceRequest) -> Target<'_> {
    Target {
        info: rr.stored(),
        namespace: if rr.resource.namespaced {
            &rr.info.namespace
        } else {
            ""
        },
        name: &rr.info.name,
        subresource: &rr.info.subresource,
    }
}

/// 201 with the object an update created, 200 with the one it changed.
pub async fn written_response(api: &Api, rr: &ResourceRequest, written: &Written) -> HandlerResult {
    let code = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let obj = conversion::served(api, &rr.resource, written.object.clone()).await?;
    let resp = response::object(code, &rr.resource, &obj, rr.render);
    if written.warnings.is_empty() {
        return Ok(resp);
    }
    let warnings = Warnings::default();
    warnings.extend(written.warnings.iter().cloned());
    Ok(warnings.apply(resp))
}

/// What a PUT asks for: its body, with optimistic concurrency on
/// resourceVersion against the stored object.
fn replace(info: Arc<ResourceInfo>, new: Value) -> Requested {
    Box::new(move |old: Option<Old<'_>>| {
        let Some(old) = old else {
            return Ok(new.clone());
        };
        let name = meta::name(&new);
        match meta::resource_version(&new) {
            "" if !info.strategy.allow_unconditional_update => {
                return Err(ApiError::invalid(
                    &info.group,
                    &info.kind,
                    name,
                    vec![field_required(
                        "metadata.resourceVersion",
                        "must be specified for an update",
                    )],
                ));
            }
            "" => {}
            rv if rv != old.stored.revision.to_string() => {
                return Err(ApiError::conflict_stale(&info.group, &info.plural, name));
            }
            _ => {}
        }
        Ok(new.clone())
    })
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
