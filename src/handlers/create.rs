//! POST: create an object.

use super::decode::{check_type, read_body};
use super::fields;
use super::managers::Tracking;
use super::namespaces;
use super::response;
use super::warnings::Warnings;
use super::{Api, HandlerResult, ResourceRequest};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::{self, lifecycle, CreateContext};
use kubeshard_core::status::ApiError;
use kubeshard_core::validation;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Attempts at a fresh random name before giving up (kube retries too).
const GENERATE_NAME_ATTEMPTS: usize = 8;

pub async fn create(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    if !rr.info.name.is_empty() {
        return Err(ApiError::method_not_supported(
            &rr.resource.group,
            &rr.resource.plural,
            "create",
        ));
    }
    let tracking = Tracking::new(&rr.query, req.headers(), "", "CreateOptions")?;
    let (input, body) = read_body(req).await?;
    let info = &rr.resource;
    let warnings = Warnings::default();
    let directive = fields::directive(&rr.query, "CreateOptions")?;
    let obj = fields::decode_object(info, input, &body, directive, &warnings)?;
    create_decoded(api, rr, obj, &tracking)
        .await
        .map(|resp| warnings.apply(resp))
}

/// Create of a decoded body: namespace, admission, name generation, store.
async fn create_decoded(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    mut obj: Value,
    tracking: &Tracking,
) -> HandlerResult {
    let info = &rr.resource;
    check_type(info, &mut obj)?;
    bind_namespace(info, &rr.info.namespace, &mut obj)?;
    let dry_run = super::update::dry_run(&rr.query)?;
    if info.namespaced {
        namespaces::require_active(api, info, meta::name(&obj), meta::namespace(&obj)).await?;
    }
    crate::filters::authz::escalation::check_create(api, rr, &obj).await?;
    api.admission.admit_create(info, &mut obj)?;
    let generate = meta::name(&obj).is_empty()
        && meta::meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty());
    let attempts = if generate { GENERATE_NAME_ATTEMPTS } else { 1 };
    let (namespace, name) = (
        meta::namespace(&obj).to_string(),
        meta::name(&obj).to_string(),
    );
    let mut last_err = None;
    for attempt in 1..=attempts {
        // The last attempt (the only one, unless the name is generated)
        // takes the object itself: copying it was a measurable share of a
        // create.
        let mut candidate = if attempt == attempts {
            std::mem::take(&mut obj)
        } else {
            obj.clone()
        };
        if generate {
            let prefix = meta::meta_str(&candidate, "generateName")
                .unwrap_or("")
                .to_string();
            meta::set_meta(
                &mut candidate,
                "name",
                json!(format!("{prefix}{}", validation::generate_name_suffix())),
            );
        }
        let mut prepared = prepare(info, candidate)?;
        tracking.record(info, None, &mut prepared);
        if dry_run {
            // Creating over an existing object fails the same way dry.
            let existing = api
                .shards()
                .get(
                    &info.storage_key,
                    meta::namespace(&prepared),
                    meta::name(&prepared),
                )
                .await?;
            if existing.is_some() {
                if generate {
                    continue;
                }
                return Err(ApiError::already_exists(
                    &info.group,
                    &info.plural,
                    meta::name(&prepared),
                ));
            }
            let stored = kubeshard_cache::StoredObject::encode(info, &prepared, 0);
            return Ok(response::object(
                StatusCode::CREATED,
                info,
                &std::sync::Arc::new(stored),
                rr.render,
            ));
        }
        match api.shards().create(info, prepared).await {
            Ok(stored) => {
                api.shards()
                    .wait_closed(stored.revision, Duration::from_secs(5))
                    .await;
                return Ok(response::object(
                    StatusCode::CREATED,
                    info,
                    &stored,
                    rr.render,
                ));
            }
            Err(e) if generate && e.code == 409 => last_err = Some(e),
            Err(e) if e.code == 409 => {
                return Err(being_deleted(api, info, &namespace, &name, e).await)
            }
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| ApiError::internal("name generation failed")))
}

/// kube tells a client whose name clashes with an object on its way out
/// that this is why.
async fn being_deleted(
    api: &Api,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    mut err: ApiError,
) -> ApiError {
    let existing = api.shards().get(&info.storage_key, namespace, name).await;
    if let Ok(Some(o)) = existing {
        if meta::meta_str(&o.to_value(), "deletionTimestamp").is_some() {
            err.message = format!("object is being deleted: {}", err.message);
        }
    }
    err
}

/// Server-owned fields, then validation (422 with every cause).
pub fn prepare(info: &ResourceInfo, mut obj: Value) -> Result<Value, ApiError> {
    let uid = uuid::Uuid::new_v4().to_string();
    let now = now_rfc3339();
    registry::prepare_for_create(
        info,
        &mut obj,
        &CreateContext {
            uid: &uid,
            now: &now,
        },
    );
    let causes = registry::validate_object(info, &obj);
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            meta::name(&obj),
            causes,
        ));
    }
    Ok(obj)
}

/// kube's timestamps: RFC 3339, UTC, whole seconds. Every write asks for
/// the time (a create twice) and chrono's formatting cost more than the
/// rest of a create's metadata work; the text changes once a second, so
/// each executor keeps the last one it formatted.
pub fn now_rfc3339() -> String {
    thread_local! {
        static LAST: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
    }
    let now = chrono::Utc::now();
    let second = now.timestamp();
    LAST.with_borrow_mut(|(at, text)| {
        if *at != second {
            *at = second;
            *text = lifecycle::format_time(now);
        }
        text.clone()
    })
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
