//! The generic registry: what happens to an object on its way into storage.
//!
//! kube-apiserver splits this between `rest.BeforeCreate/BeforeUpdate` and
//! per-kind strategies; here the generic part is code and the per-kind part
//! is data on the catalog entry ([`crate::catalog::Strategy`]) plus a few
//! named hooks in [`hooks`]. The shard that owns a key runs these functions,
//! so they must be pure and cheap.

pub mod admission_policy;
pub mod apiservice;
pub mod certificates;
pub mod deletion;
mod hooks;
pub mod lifecycle;
pub mod location;
pub mod pod;
pub mod podspec;
mod qos;
pub mod scale;
mod service;
mod validate;
mod volumes;
mod webhook_configuration;
mod workloads;

pub use lifecycle::should_delete_during_update;
pub use qos::qos_class;
pub use service::is_external_name;
pub use validate::{validate_object, validate_update};

use crate::catalog::{ResourceInfo, StatusMetadata};
use crate::meta;
use serde_json::{json, Value};

/// Facts from outside the object that creation needs; passed in so the
/// registry stays free of clocks and randomness.
pub struct CreateContext<'a> {
    pub uid: &'a str,
    pub now: &'a str,
}

/// Fills what the server owns on create: uid, creationTimestamp,
/// generation, and resets fields clients may not set (status for kinds that
/// have a status subresource).
pub fn prepare_for_create(info: &ResourceInfo, obj: &mut Value, ctx: &CreateContext<'_>) {
    default(info, obj);
    let md = meta::metadata_mut(obj);
    md.insert("uid".into(), json!(ctx.uid));
    md.insert("creationTimestamp".into(), json!(ctx.now));
    md.remove("resourceVersion");
    md.remove("deletionTimestamp");
    md.remove("deletionGracePeriodSeconds");
    md.remove("selfLink");
    if !info.namespaced {
        md.remove("namespace");
    }
    if info.strategy.tracks_generation {
        md.insert("generation".into(), json!(1));
    } else {
        md.remove("generation");
    }
    if info.has_status() && !info.strategy.keep_status_on_create {
        if let Some(root) = obj.as_object_mut() {
            match &info.strategy.initial_status {
                Some(status) => root.insert("status".into(), status.clone()),
                None => root.remove("status"),
            };
        }
    }
    hooks::on_create(info, obj);
}

/// Carries server-owned metadata over from the stored object and keeps
/// status untouched for kinds whose status is written only through the
/// status subresource. Bumps generation when anything but metadata and
/// status changed.
pub fn prepare_for_update(info: &ResourceInfo, new: &mut Value, old: &Value) {
    default(info, new);
    copy_system_metadata(new, old);
    if info.has_status() {
        set_top(new, "status", old.get("status").cloned());
    }
    hooks::on_update(info, new, old);
    bump_generation(info, new, old);
}

/// A write to the status subresource: the stored object with its status
/// replaced and its metadata as written (server-owned fields kept, and
/// whatever else the kind's strategy restores); the spec and every other
/// field stay as stored.
pub fn prepare_for_status_update(info: &ResourceInfo, body: &Value, old: &Value) -> Value {
    let mut out = old.clone();
    set_top(&mut out, "status", body.get("status").cloned());
    if let Some(md) = body.get("metadata").filter(|m| m.is_object()) {
        set_top(&mut out, "metadata", Some(md.clone()));
        copy_system_metadata(&mut out, old);
        if info.strategy.status_metadata == StatusMetadata::StoredLabels {
            let labels = meta::metadata(old).and_then(|m| m.get("labels")).cloned();
            let md = meta::metadata_mut(&mut out);
            match labels {
                Some(l) => md.insert("labels".into(), l),
                None => md.remove("labels"),
            };
        }
    }
    if info.strategy.kind_hooks == crate::catalog::KindHooks::CertificateSigningRequest {
        certificates::on_status_update(&mut out, old);
    }
    default(info, &mut out);
    out
}

/// kube's defaults for the kind: the built-in defaulters, or a custom
/// resource's schema defaults.
pub fn default(info: &ResourceInfo, obj: &mut Value) {
    match &info.custom {
        Some(rules) => {
            rules.default(obj);
        }
        None => crate::defaults::apply(&info.group, &info.kind, obj),
    }
}

fn copy_system_metadata(new: &mut Value, old: &Value) {
    let md = meta::metadata_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match meta::metadata(old).and_then(|m| m.get(field)) {
            Some(v) => md.insert(field.to_string(), v.clone()),
            None => md.remove(field),
        };
    }
    md.remove("selfLink");
}

fn bump_generation(info: &ResourceInfo, new: &mut Value, old: &Value) {
    if !info.strategy.tracks_generation {
        return;
    }
    let old_gen = meta::metadata(old)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let changed = !same_besides_meta_and_status(new, old, info.has_status());
    let gen = if changed { old_gen + 1 } else { old_gen };
    meta::set_meta(new, "generation", json!(gen));
}

/// Whether two objects agree on everything but metadata and status
/// (compared in place: this runs on every update).
fn same_besides_meta_and_status(a: &Value, b: &Value, status_apart: bool) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    // Without a status subresource the status is part of what a write
    // changes (a custom resource's generation counts it).
    let counted = |k: &String| k != "metadata" && (k != "status" || !status_apart);
    a.keys().filter(|k| counted(k)).count() == b.keys().filter(|k| counted(k)).count()
        && a.iter()
            .filter(|(k, _)| counted(k))
            .all(|(k, v)| b.get(k) == Some(v))
}

fn set_top(obj: &mut Value, key: &str, value: Option<Value>) {
    if let Some(m) = obj.as_object_mut() {
        match value {
            Some(v) => m.insert(key.to_string(), v),
            None => m.remove(key),
        };
    }
}

#[cfg(test)]
mod tests;
