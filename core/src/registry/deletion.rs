//! What a DELETE does to an object: kube's rules for preconditions,
//! graceful deletion, finalizers and the garbage collector's propagation
//! finalizers, decided from the stored object alone so the owning shard can
//! apply the decision atomically.
//!
//! The outcome is a [`DeleteStep`]: remove the object now, store a new
//! state (deletion timestamp, grace period, finalizers) and keep it, do both
//! (graceful kinds deleted with no grace left), or nothing because a
//! graceful deletion is already under way.

use super::lifecycle::{
    deletion_grace, deletion_timestamp, finalizers, format_time, parse_time, set_finalizers,
    spec_finalizers, FINALIZER_FOREGROUND, FINALIZER_ORPHAN,
};
use crate::catalog::{GcPolicy, KindHooks, ResourceInfo};
use crate::meta;
use crate::status::{field_invalid, field_not_supported, ApiError};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

/// How a deletion propagates to the objects the deleted one owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents lose their owner reference and live on.
    Orphan,
    /// The owner goes now; the collector deletes dependents afterwards.
    Background,
    /// The owner stays (finalizer `foregroundDeletion`) until its blocking
    /// dependents are gone.
    Foreground,
}

impl Propagation {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Orphan" => Some(Self::Orphan),
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Orphan => "Orphan",
            Self::Background => "Background",
            Self::Foreground => "Foreground",
        }
    }
}

/// `DeleteOptions.preconditions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// The parts of `metav1.DeleteOptions` a deletion honours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub propagation: Option<Propagation>,
    /// The deprecated boolean form of the propagation policy.
    pub orphan_dependents: Option<bool>,
    pub preconditions: Preconditions,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Reads DeleteOptions from a JSON body (`null` fields count as unset).
    /// Values that are not the right type are a 400, as kube's decoder
    /// answers; combinations kube rejects are a 422 on DeleteOptions.
    pub fn from_body(v: &Value) -> Result<Self, ApiError> {
        let bad = |field: &str, want: &str| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as DeleteOptions: {field} must be {want}"
            ))
        };
        let get = |k: &str| v.get(k).filter(|x| !x.is_null());
        let mut o = DeleteOptions::default();
        if let Some(g) = get("gracePeriodSeconds") {
            o.grace_period_seconds = Some(
                g.as_i64()
                    .ok_or_else(|| bad("gracePeriodSeconds", "an integer"))?,
            );
        }
        if let Some(p) = get("propagationPolicy") {
            let p = p
                .as_str()
                .ok_or_else(|| bad("propagationPolicy", "a string"))?;
            o.propagation = Some(parse_policy(p)?);
        }
        if let Some(b) = get("orphanDependents") {
            o.orphan_dependents = Some(
                b.as_bool()
                    .ok_or_else(|| bad("orphanDependents", "a boolean"))?,
            );
        }
        if let Some(pre) = get("preconditions") {
            let field = |k: &str| -> Result<Option<String>, ApiError> {
                match pre.get(k).filter(|x| !x.is_null()) {
                    None => Ok(None),
                    Some(x) => Ok(Some(
                        x.as_str()
                            .ok_or_else(|| bad(&format!("preconditions.{k}"), "a string"))?
                            .to_string(),
                    )),
                }
            };
            o.preconditions.uid = field("uid")?;
            o.preconditions.resource_version = field("resourceVersion")?;
        }
        if let Some(d) = get("dryRun") {
            let list = d
                .as_array()
                .ok_or_else(|| bad("dryRun", "a list of strings"))?;
            for item in list {
                o.dry_run |= check_dry_run(item.as_str().unwrap_or_default())?;
            }
        }
        o.validate()?;
        Ok(o)
    }

    /// Fills what the body left unset from query parameters
    /// (`gracePeriodSeconds`, `propagationPolicy`, `orphanDependents`,
    /// `dryRun`), then validates the combination.
    pub fn merge_query(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ApiError> {
        if self.grace_period_seconds.is_none() {
            if let Some(g) = get("gracePeriodSeconds").filter(|g| !g.is_empty()) {
                self.grace_period_seconds = Some(g.parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "strconv.ParseInt: parsing {}: invalid syntax",
                        crate::status::go_quote(&g)
                    ))
                })?);
            }
        }
        if self.propagation.is_none() {
            if let Some(p) = get("propagationPolicy").filter(|p| !p.is_empty()) {
                self.propagation = Some(parse_policy(&p)?);
            }
        }
        if self.orphan_dependents.is_none() {
            if let Some(b) = get("orphanDependents").filter(|b| !b.is_empty()) {
                self.orphan_dependents = Some(match b.as_str() {
                    "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
                    "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "strconv.ParseBool: parsing {}: invalid syntax",
                            crate::status::go_quote(&b)
                        )))
                    }
                });
            }
        }
        if let Some(d) = get("dryRun").filter(|d| !d.is_empty()) {
            self.dry_run |= check_dry_run(&d)?;
        }
        self.validate()
    }

    fn validate(&self) -> Result<(), ApiError> {
        if let (Some(_), Some(p)) = (self.orphan_dependents, self.propagation) {
            return Err(invalid_options(field_invalid(
                "propagationPolicy",
                p.as_str(),
                "orphanDependents and deletionPropagation cannot be both set",
            )));
        }
        Ok(())
    }

    /// The propagation the request asks for, folding the deprecated flag.
    fn explicit_policy(&self) -> Option<Propagation> {
        match self.orphan_dependents {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => self.propagation,
        }
    }
}

fn invalid_options(cause: crate::status::StatusCause) -> ApiError {
    ApiError::invalid("meta.k8s.io", "DeleteOptions", "", vec![cause])
}

fn parse_policy(p: &str) -> Result<Propagation, ApiError> {
    Propagation::parse(p).ok_or_else(|| {
        invalid_options(field_not_supported(
            "propagationPolicy",
            p,
            &["Foreground", "Background", "Orphan", "nil"],
        ))
    })
}

fn check_dry_run(v: &str) -> Result<bool, ApiError> {
    match v {
        "All" => Ok(true),
        other => Err(invalid_options(field_not_supported(
            "dryRun",
            other,
            &["All"],
        ))),
    }
}

/// Facts from outside the object a deletion needs.
#[derive(Debug, Clone, Copy)]
pub struct DeleteContext {
    pub now: DateTime<Utc>,
    /// The API server sets the collector's finalizers (kube-apiserver's
    /// `--enable-garbage-collector`).
    pub gc_enabled: bool,
}

/// What a deletion does to the stored object.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteStep {
    /// Remove the object as stored.
    Delete,
    /// Store this state, then remove it: a graceful kind deleted with no
    /// grace left, so watchers see the deletion timestamp, then the deletion.
    MarkThenDelete(Value),
    /// Store this state and keep the object: finalizers or a grace period
    /// remain. May equal the stored state (nothing to write).
    Mark(Value),
    /// Already being deleted and this request changes nothing (a graceful
    /// deletion in progress, or a namespace waiting for its finalizers).
    Pending,
}

/// Decides a deletion of `obj` with `opts`.
pub fn plan_delete(
    info: &ResourceInfo,
    obj: &Value,
    opts: &DeleteOptions,
    ctx: &DeleteContext,
) -> Result<DeleteStep, ApiError> {
    check_preconditions(info, obj, &opts.preconditions)?;
    if info.strategy.kind_hooks == KindHooks::Namespace {
        if let Some(step) = plan_namespace(obj, opts, ctx) {
            return Ok(step);
        }
    }
    let mut obj = obj.clone();
    let mut grace = opts.grace_period_seconds.map(|g| if g < 0 { 1 } else { g });
    let (graceful, pending) = before_graceful_delete(info, &mut obj, &mut grace, ctx.now);
    if pending {
        return Ok(DeleteStep::Pending);
    }
    if info.strategy.kind_hooks == KindHooks::CustomResourceDefinition {
        crate::crd::mark_for_cleanup(&mut obj, &super::lifecycle::format_time(ctx.now));
    }
    let had_finalizers = !finalizers(&obj).is_empty();
    let gc_update = if ctx.gc_enabled {
        gc_finalizers(info, &obj, opts)
    } else {
        None
    };
    if !graceful && !had_finalizers && gc_update.is_none() {
        return Ok(DeleteStep::Delete);
    }
    if let Some(f) = gc_update {
        set_finalizers(&mut obj, &f);
    }
    let pending_finalizers = !finalizers(&obj).is_empty();
    if !graceful {
        if pending_finalizers {
            mark_as_deleting(&mut obj, ctx.now);
            return Ok(DeleteStep::Mark(obj));
        }
        return Ok(DeleteStep::Delete);
    }
    if pending_finalizers || grace.unwrap_or(0) > 0 {
        return Ok(DeleteStep::Mark(obj));
    }
    Ok(DeleteStep::MarkThenDelete(obj))
}

/// kube checks preconditions against the object it read before anything
/// else, naming the kind in the conflict; the namespace registry words
/// its own check differently.
fn check_preconditions(
    info: &ResourceInfo,
    obj: &Value,
    pre: &Preconditions,
) -> Result<(), ApiError> {
    let name = meta::name(obj);
    let namespace = info.strategy.kind_hooks == KindHooks::Namespace;
    let uid = meta::meta_str(obj, "uid").unwrap_or("");
    let checks = [
        ("UID", pre.uid.as_deref(), uid, "deleted and then recreated"),
        (
            "ResourceVersion",
            pre.resource_version.as_deref(),
            meta::resource_version(obj),
            "modified",
        ),
    ];
    for (field, wanted, actual, what) in checks {
        let Some(wanted) = wanted.filter(|w| *w != actual) else {
            continue;
        };
        return Err(if namespace {
            let msg = format!(
                "Precondition failed: {field} in precondition: {wanted}, {field} in object meta: {actual}"
            );
            ApiError::conflict("", "namespaces", name, &msg)
        } else {
            let msg = format!(
                "the {field} in the precondition ({wanted}) does not match the {field} in record ({actual}). The object might have been {what}"
            );
            ApiError::conflict(&info.group, &info.kind, name, &msg)
        });
    }
    Ok(())
}

/// The first DELETE of a namespace marks it Terminating (its
/// `spec.finalizers` stay, for the namespace controller to clear); later
/// ones wait for `spec.finalizers` to empty, then delete like any object.
/// None means "continue as for any object".
fn plan_namespace(obj: &Value, opts: &DeleteOptions, ctx: &DeleteContext) -> Option<DeleteStep> {
    if deletion_timestamp(obj).is_none() {
        let mut out = obj.clone();
        meta::set_meta(&mut out, "deletionTimestamp", json!(format_time(ctx.now)));
        if let Some(root) = out.as_object_mut() {
            let status = root.entry("status").or_insert_with(|| json!({}));
            if !status.is_object() {
                *status = json!({});
            }
            status["phase"] = json!("Terminating");
        }
        let current = finalizers(&out);
        let has = |f: &str| current.iter().any(|c| c == f);
        // The namespace registry reads the deprecated flag its own way:
        // orphanDependents=false asks for foreground deletion.
        let (orphan, foreground) = match (opts.orphan_dependents, opts.propagation) {
            (Some(o), _) => (o, !o),
            (None, Some(p)) => (p == Propagation::Orphan, p == Propagation::Foreground),
            (None, None) => (has(FINALIZER_ORPHAN), has(FINALIZER_FOREGROUND)),
        };
        if let Some(wanted) = with_collector_finalizers(&current, orphan, foreground) {
            set_finalizers(&mut out, &wanted);
        }
        return Some(DeleteStep::Mark(out));
    }
    (!spec_finalizers(obj).is_empty()).then_some(DeleteStep::Pending)
}

/// kube's `BeforeDelete` for kinds with graceful deletion (pods): sets the
/// deletion timestamp `grace` seconds ahead, or shortens a deletion in
/// progress. Returns (graceful, pending).
fn before_graceful_delete(
    info: &ResourceInfo,
    obj: &mut Value,
    grace: &mut Option<i64>,
    now: DateTime<Utc>,
) -> (bool, bool) {
    if info.strategy.kind_hooks != KindHooks::Pod {
        return (false, false);
    }
    if let Some(ts) = deletion_timestamp(obj) {
        let current = deletion_grace(obj).map(|g| if g < 0 { 1 } else { g });
        let Some(current) = current.filter(|g| *g != 0) else {
            // Marked with no grace left: delete now (kube's recovery path).
            return (false, false);
        };
        let Some(period) = *grace else {
            *grace = Some(current);
            return (false, true);
        };
        if period >= current {
            return (false, true);
        }
        let shortened =
            parse_time(&ts).unwrap_or(now) - Duration::seconds(current) + Duration::seconds(period);
        meta::set_meta(obj, "deletionTimestamp", json!(format_time(shortened)));
        meta::set_meta(obj, "deletionGracePeriodSeconds", json!(period));
        return (true, false);
    }
    let period = pod_grace_period(obj, *grace);
    *grace = Some(period);
    meta::set_meta(
        obj,
        "deletionTimestamp",
        json!(format_time(now + Duration::seconds(period))),
    );
    meta::set_meta(obj, "deletionGracePeriodSeconds", json!(period));
    bump_generation(obj);
    (true, false)
}

/// The pod strategy's grace period: the request's, else the pod's
/// `terminationGracePeriodSeconds`; none for pods never scheduled or
/// already finished.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested.unwrap_or_else(|| {
        pod.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() || phase == "Failed" || phase == "Succeeded" {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    period
}

/// Marks an object that has finalizers as being deleted now, with no
/// grace period; an earlier timestamp is kept.
fn mark_as_deleting(obj: &mut Value, now: DateTime<Utc>) {
    let existing = deletion_timestamp(obj);
    if existing.is_none() {
        bump_generation(obj);
    }
    let later = existing
        .as_deref()
        .and_then(parse_time)
        .is_none_or(|ts| ts > now);
    if later {
        meta::set_meta(obj, "deletionTimestamp", json!(format_time(now)));
    }
    meta::set_meta(obj, "deletionGracePeriodSeconds", json!(0));
}

fn bump_generation(obj: &mut Value) {
    let generation = meta::metadata(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if generation > 0 {
        meta::set_meta(obj, "generation", json!(generation + 1));
    }
}

/// The collector's finalizers the object should carry after this delete,
/// when they differ from what it carries (kube's
/// `deletionFinalizersForGarbageCollection`): the request's policy wins,
/// then a finalizer already present, then the kind's default.
fn gc_finalizers(info: &ResourceInfo, obj: &Value, opts: &DeleteOptions) -> Option<Vec<String>> {
    let current = finalizers(obj);
    let policy = info.strategy.gc_policy;
    let (orphan, foreground) = if policy == GcPolicy::Unsupported {
        (false, false)
    } else {
        let from_finalizers = current.iter().find_map(|f| match f.as_str() {
            FINALIZER_ORPHAN => Some(Propagation::Orphan),
            FINALIZER_FOREGROUND => Some(Propagation::Foreground),
            _ => None,
        });
        match opts.explicit_policy().or(from_finalizers) {
            Some(p) => (p == Propagation::Orphan, p == Propagation::Foreground),
            None => (policy == GcPolicy::OrphanDependents, false),
        }
    };
    with_collector_finalizers(&current, orphan, foreground)
}

/// `current` with the collector's two finalizers set as asked, when that
/// changes the set.
fn with_collector_finalizers(
    current: &[String],
    orphan: bool,
    foreground: bool,
) -> Option<Vec<String>> {
    let mut wanted: Vec<String> = current
        .iter()
        .filter(|f| *f != FINALIZER_ORPHAN && *f != FINALIZER_FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        wanted.push(FINALIZER_ORPHAN.into());
    }
    if foreground {
        wanted.push(FINALIZER_FOREGROUND.into());
    }
    (!same_set(&wanted, current)).then_some(wanted)
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
}

#[cfg(test)]
#[path = "deletion_tests.rs"]
mod tests;
