//! Metadata rules of an object's life and death that every write checks:
//! finalizers and owner references are well formed, an object being
//! deleted gains no finalizers, and an update that removes the last
//! finalizer of an object whose deletion is due ends in its deletion.

use crate::catalog::{KindHooks, ResourceInfo};
use crate::meta;
use crate::status::{field_forbidden, field_invalid, field_invalid_raw, StatusCause};
use crate::validation::is_qualified_name;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The garbage collector orphans the dependents, then removes this.
pub const FINALIZER_ORPHAN: &str = "orphan";
/// The garbage collector deletes blocking dependents, then removes this.
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";
/// In a namespace's `spec.finalizers`: the namespace controller empties
/// the namespace, then removes this.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";

/// Finalizer names that need no domain prefix: kube's own.
pub const STANDARD_FINALIZERS: &[&str] =
    &[FINALIZER_KUBERNETES, FINALIZER_ORPHAN, FINALIZER_FOREGROUND];

/// `metadata.finalizers` as strings (non-strings skipped; validation
/// rejects them).
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings_at(obj, "/metadata/finalizers")
}

/// A namespace's `spec.finalizers`.
pub fn spec_finalizers(obj: &Value) -> Vec<String> {
    strings_at(obj, "/spec/finalizers")
}

fn strings_at(obj: &Value, pointer: &str) -> Vec<String> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `metadata.finalizers`, dropping the field when empty (kube omits
/// an empty list).
pub fn set_finalizers(obj: &mut Value, list: &[String]) {
    if list.is_empty() {
        meta::remove_meta(obj, "finalizers");
    } else {
        meta::set_meta(obj, "finalizers", json!(list));
    }
}

pub fn deletion_timestamp(obj: &Value) -> Option<String> {
    meta::meta_str(obj, "deletionTimestamp").map(str::to_string)
}

pub fn deletion_grace(obj: &Value) -> Option<i64> {
    meta::metadata(obj)?
        .get("deletionGracePeriodSeconds")?
        .as_i64()
}

/// kube's timestamp form: RFC 3339, UTC, whole seconds.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Whether an update from `old` to `new` deletes the object instead of
/// storing it: no finalizers are left, a deletion was requested and its
/// grace period is over (none, or zero). A namespace also needs its
/// `spec.finalizers` empty.
pub fn should_delete_during_update(info: &ResourceInfo, new: &Value, old: &Value) -> bool {
    if !finalizers(new).is_empty() || deletion_timestamp(old).is_none() {
        return false;
    }
    if deletion_grace(old).is_some_and(|g| g != 0) {
        return false;
    }
    if info.strategy.kind_hooks == KindHooks::Namespace {
        return spec_finalizers(new).is_empty();
    }
    true
}

/// Checks `metadata.finalizers` and `metadata.ownerReferences`.
pub fn validate_lifecycle_metadata(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let Some(md) = meta::metadata(obj) else {
        return causes;
    };
    match meta::member(md, "finalizers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => causes.extend(validate_finalizers(list)),
        Some(other) => causes.push(field_invalid_raw(
            "metadata.finalizers",
            &other.to_string(),
            "must be a list of strings",
        )),
    }
    match meta::member(md, "ownerReferences") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => causes.extend(validate_owner_references(list)),
        Some(other) => causes.push(field_invalid_raw(
            "metadata.ownerReferences",
            &other.to_string(),
            "must be a list of owner references",
        )),
    }
    causes
}

fn validate_finalizers(list: &[Value]) -> Vec<StatusCause> {
    const PATH: &str = "metadata.finalizers";
    let mut causes = Vec::new();
    for f in list {
        match f.as_str() {
            Some(name) => causes.extend(
                is_qualified_name(name)
                    .into_iter()
                    .map(|m| field_invalid(PATH, name, &m)),
            ),
            None => causes.push(field_invalid_raw(PATH, &f.to_string(), "must be a string")),
        }
    }
    let has = |n: &str| list.iter().any(|f| f.as_str() == Some(n));
    if has(FINALIZER_ORPHAN) && has(FINALIZER_FOREGROUND) {
        causes.push(field_invalid_raw(
            PATH,
            &go_string_slice(list),
            &format!("finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"),
        ));
    }
    causes
}

fn validate_owner_references(list: &[Value]) -> Vec<StatusCause> {
    const PATH: &str = "metadata.ownerReferences";
    let mut causes = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in list {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let version = s("apiVersion").rsplit('/').next().unwrap_or("");
        if version.is_empty() {
            causes.push(field_invalid(
                &format!("{PATH}.apiVersion"),
                s("apiVersion"),
                "version must not be empty",
            ));
        }
        if s("kind").is_empty() {
            causes.push(field_invalid(
                &format!("{PATH}.kind"),
                "",
                "kind must not be empty",
            ));
        }
        if s("name").is_empty() {
            causes.push(field_invalid(
                &format!("{PATH}.name"),
                "",
                "name must not be empty",
            ));
        }
        if s("uid").is_empty() {
            causes.push(field_invalid(
                &format!("{PATH}.uid"),
                "",
                "uid must not be empty",
            ));
        }
        if s("apiVersion") == "v1" && s("kind") == "Event" {
            causes.push(field_invalid_raw(
                PATH,
                &r.to_string(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{}/{}", s("kind"), s("name"));
            match &first_controller {
                Some(first) => causes.push(field_invalid_raw(
                    PATH,
                    &Value::Array(list.to_vec()).to_string(),
                    &format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"),
                )),
                None => first_controller = Some(this),
            }
        }
    }
    causes
}

/// An object being deleted may lose finalizers but not gain any.
pub fn validate_lifecycle_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    if deletion_timestamp(old).is_none() {
        return Vec::new();
    }
    let added = added_finalizers(new, Some(old));
    if added.is_empty() {
        return Vec::new();
    }
    let rendered: Vec<Value> = added.iter().map(|f| json!(f)).collect();
    vec![field_forbidden(
        "metadata.finalizers",
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers {}",
            go_string_slice(&rendered)
        ),
    )]
}

/// The finalizers `new` has and `old` (when there is one) lacks.
fn added_finalizers(new: &Value, old: Option<&Value>) -> Vec<String> {
    let before = old.map(finalizers).unwrap_or_default();
    let mut added = finalizers(new);
    added.retain(|f| !before.contains(f));
    added
}

/// The warnings a custom resource's write gets for the finalizers it adds
/// (all of them on create, those `old` lacks on update): names that are
/// not qualified names, and names without a path, which two controllers
/// could both pick. kube only warns here (its built-in kinds refuse the
/// latter), as operators shipped such names long before the check.
pub fn finalizer_warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    const PATH: &str = "metadata.finalizers";
    let mut added = added_finalizers(new, old);
    added.sort();
    added.dedup();
    let mut out = Vec::new();
    for name in &added {
        let quoted = crate::status::go_quote(name);
        for msg in is_qualified_name(name) {
            out.push(format!("{PATH}: {quoted}: {msg}"));
        }
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name.as_str()) {
            let how = if name.contains('.') {
                "prefer a domain-qualified finalizer name including a path (/)"
            } else {
                "prefer a domain-qualified finalizer name"
            };
            out.push(format!(
                "{PATH}: {quoted}: {how} to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
    out
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
fn go_string_slice(list: &[Value]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|v| match v.as_str() {
            Some(s) => crate::status::go_quote(s),
            None => v.to_string(),
        })
        .collect();
    format!("[]string{{{}}}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn info(plural: &str) -> ResourceInfo {
        let snap = Catalog::with_builtins().snapshot();
        (**snap.lookup("", "v1", plural).unwrap()).clone()
    }

    #[test]
    fn emptied_finalizers_delete_only_when_deletion_is_due() {
        let cm = info("configmaps");
        let marked = json!({"metadata": {"finalizers": ["a/b"], "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}});
        let emptied = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert!(should_delete_during_update(&cm, &emptied, &marked));
        assert!(!should_delete_during_update(&cm, &marked, &marked));
        let alive = json!({"metadata": {"finalizers": ["a/b"]}});
        assert!(!should_delete_during_update(
            &cm,
            &json!({"metadata": {}}),
            &alive
        ));
        let graceful = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30, "finalizers": ["x"]}});
        assert!(!should_delete_during_update(&cm, &emptied, &graceful));
        let ns = info("namespaces");
        let terminating = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"finalizers": ["kubernetes"]}});
        assert!(!should_delete_during_update(
            &ns,
            &terminating,
            &terminating
        ));
        let finalized = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"finalizers": []}});
        assert!(should_delete_during_update(&ns, &finalized, &terminating));
    }

    #[test]
    fn finalizer_and_owner_reference_rules() {
        let ok = json!({"metadata": {"finalizers": ["example.com/x", "kubernetes"], "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u", "controller": true}]}});
        assert!(validate_lifecycle_metadata(&ok).is_empty());
        let both = json!({"metadata": {"finalizers": ["orphan", "foregroundDeletion"]}});
        let causes = validate_lifecycle_metadata(&both);
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0].message.contains("cannot be both set"),
            "{causes:?}"
        );
        let bad_name = json!({"metadata": {"finalizers": ["not a name"]}});
        assert_eq!(
            validate_lifecycle_metadata(&bad_name)[0].field,
            "metadata.finalizers"
        );
        let refs = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true},
            {"apiVersion": "", "kind": "", "name": "", "uid": ""}
        ]}});
        let fields: Vec<String> = validate_lifecycle_metadata(&refs)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "metadata.ownerReferences",
                "metadata.ownerReferences.apiVersion",
                "metadata.ownerReferences.kind",
                "metadata.ownerReferences.name",
                "metadata.ownerReferences.uid"
            ]
        );
    }

    #[test]
    fn no_new_finalizers_while_deleting() {
        let old = json!({"metadata": {"finalizers": ["a/b"], "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        let more = json!({"metadata": {"finalizers": ["a/b", "c/d"]}});
        let causes = validate_lifecycle_update(&more, &old);
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0]
                .message
                .ends_with(r#"found new finalizers []string{"c/d"}"#),
            "{causes:?}"
        );
        assert!(validate_lifecycle_update(&json!({"metadata": {}}), &old).is_empty());
        let alive = json!({"metadata": {}});
        assert!(validate_lifecycle_update(&more, &alive).is_empty());
    }
}
