//! What the generic registry does to the object an update asks for before
//! it is stored, per part of the object written (kube's strategies and
//! `rest.BeforeCreate` / `rest.BeforeUpdate`): a create gets its
//! server-owned fields and validation; an update keeps the server-owned
//! metadata, takes only what its subresource may change, and is
//! validated against the stored object; and every write records who owns
//! which field.
//!
//! Pure and `Send`: on the fast path it runs on the shard that owns the
//! object, inside the update.

use super::ownership::Tracking;
use super::store::{Old, Requested};
use kubeshard_core::catalog::{KindHooks, ResourceInfo};
use kubeshard_core::meta;
use kubeshard_core::registry::{self, certificates, lifecycle, pod, CreateContext};
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::cell::RefCell;

/// The part of the object a write is addressed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The object (PUT, PATCH and apply of the resource, `/scale`).
    Main,
    /// `/status`: only the status (and metadata) is taken.
    Status,
    /// A namespace's `/finalize`: only `spec.finalizers` is taken.
    Finalize,
    /// A pod's `/binding`: only the node, annotations and conditions the
    /// binding sets are taken (a pod's spec is otherwise immutable).
    Binding,
    /// A certificate signing request's `/approval`: only the conditions
    /// (and metadata) are taken.
    Approval,
    /// A pod's `/ephemeralcontainers`: only `spec.ephemeralContainers`
    /// is taken, and existing ones may not change.
    EphemeralContainers,
    /// A pod's `/resize`: only its containers' resources and resize
    /// policies are taken.
    Resize,
}

impl Part {
    pub fn of(subresource: &str) -> Part {
        match subresource {
            "status" => Part::Status,
            "finalize" => Part::Finalize,
            "binding" => Part::Binding,
            "approval" => Part::Approval,
            "ephemeralcontainers" => Part::EphemeralContainers,
            "resize" => Part::Resize,
            _ => Part::Main,
        }
    }
}

/// How a write is recorded in `metadata.managedFields`.
#[derive(Clone)]
pub enum Ownership {
    /// By this manager, from the difference the write makes.
    Tracked(Tracking),
    /// Server-side apply by this manager: the merge recorded it already.
    Applied(String),
}

impl Ownership {
    /// The field manager of the write.
    pub fn manager(&self) -> &str {
        match self {
            Ownership::Tracked(t) => &t.manager,
            Ownership::Applied(m) => m,
        }
    }
}

/// The object to store for the `requested` one, given what is stored now
/// (`old`, with its decoded value).
pub fn shape(
    info: &ResourceInfo,
    part: Part,
    ownership: &Ownership,
    requested: Value,
    old: Option<&Value>,
) -> Result<Value, ApiError> {
    let Some(old) = old else {
        let mut created = prepare(info, requested)?;
        if let Ownership::Tracked(t) = ownership {
            t.record(info, None, &mut created);
        }
        return Ok(created);
    };
    let mut out = match part {
        Part::Finalize => finalized(requested, old),
        Part::Binding => bound(requested, old),
        Part::Approval => validated(info, certificates::approval(&requested, old), old, vec![])?,
        Part::EphemeralContainers => {
            let (mut new, causes) = pod::with_ephemeral_containers(&requested, old);
            kubeshard_core::defaults::apply(&info.group, &info.kind, &mut new);
            validated(info, new, old, causes)?
        }
        Part::Resize => {
            let (new, causes) = pod::resized(&requested, old);
            validated(info, new, old, causes)?
        }
        Part::Status if info.strategy.kind_hooks == KindHooks::CertificateSigningRequest => {
            let causes = certificates::status_update_causes(&requested, old);
            if !causes.is_empty() {
                return Err(ApiError::invalid(
                    &info.group,
                    &info.kind,
                    meta::name(old),
                    causes,
                ));
            }
            apply_update(info, requested, old, true)?
        }
        _ => apply_update(info, requested, old, part == Part::Status)?,
    };
    if let Ownership::Tracked(t) = ownership {
        t.record(info, Some(old), &mut out);
    }
    Ok(out)
}

/// The namespace finalize strategy: the stored namespace with only
/// `spec.finalizers` replaced (the regular update path keeps them).
fn finalized(requested: Value, old: &Value) -> Value {
    let wanted = requested
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    let mut new = old.clone();
    if let Some(root) = new.as_object_mut() {
        let spec = root.entry("spec").or_insert_with(|| json!({}));
        if !spec.is_object() {
            *spec = json!({});
        }
        spec["finalizers"] = wanted;
    }
    meta::remove_meta(&mut new, "resourceVersion");
    new
}

/// The binding strategy: the stored pod with the node, annotations and
/// conditions the binding computed.
fn bound(requested: Value, old: &Value) -> Value {
    let mut new = old.clone();
    for pointer in [
        "/spec/nodeName",
        "/metadata/annotations",
        "/status/conditions",
    ] {
        if let Some(v) = requested.pointer(pointer) {
            let (parent, key) = pointer.rsplit_once('/').expect("absolute pointers");
            if let Some(p) = new.pointer_mut(parent).and_then(Value::as_object_mut) {
                p.insert(key.to_string(), v.clone());
            }
        }
    }
    meta::remove_meta(&mut new, "resourceVersion");
    new
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

/// kube's MicroTime (Leases' renew times, Events' event times): RFC
/// 3339, UTC, microseconds.
pub fn now_micro() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
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
    let (out, causes) = if status_only {
        (registry::prepare_for_status_update(info, &new, old), vec![])
    } else {
        registry::prepare_for_update(info, &mut new, old);
        let causes = if info.strategy.kind_hooks == KindHooks::Pod {
            pod::spec_update_causes(&new, old)
        } else {
            vec![]
        };
        (new, causes)
    };
    validated(info, out, old, causes)
}

/// The shaped update without its resourceVersion (the store stamps it),
/// if it passes the kind's update validation and has none of the `part`
/// causes its part's strategy found.
fn validated(
    info: &ResourceInfo,
    mut out: Value,
    old: &Value,
    part: Vec<kubeshard_core::status::StatusCause>,
) -> Result<Value, ApiError> {
    meta::remove_meta(&mut out, "resourceVersion");
    let mut causes = part;
    causes.extend(registry::validate_update(info, &out, old));
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

/// What a finalize asks for: `wanted` as `spec.finalizers` (the Finalize
/// strategy takes nothing else), if `resource_version`, when given, is the
/// stored one.
pub fn spec_finalizers(name: String, resource_version: String, wanted: Value) -> Requested {
    Box::new(move |old: Option<Old<'_>>| {
        let old = old.ok_or_else(|| ApiError::not_found("", "namespaces", &name))?;
        if !resource_version.is_empty() && resource_version != old.stored.revision.to_string() {
            return Err(ApiError::conflict_stale("", "namespaces", &name));
        }
        Ok(json!({"spec": {"finalizers": wanted.clone()}}))
    })
}
