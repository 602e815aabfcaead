//! CustomResourceDefinitions: what a CRD means to the server (kube's
//! apiextensions-apiserver), as pure data and functions.
//!
//! - [`definition`] validates a CRD object itself, as kube's CRD strategy
//!   does, structural-schema rules included;
//! - [`names`] decides whether a CRD's names are free (`NamesAccepted`);
//! - [`kinds`] turns an accepted CRD into catalog entries, one per served
//!   version, carrying a [`CustomRules`] each;
//! - [`structural`], [`validate`], [`default`] and [`cel`] are what those
//!   rules do to every custom resource written: the schema parsed once,
//!   value validation with kube's messages, defaulting, and the
//!   `x-kubernetes-validations` rules.
//!
//! The server side (the controller that establishes CRDs and cleans up
//! after them) lives in the server crate; custom resources themselves go
//! through the same registry, store and watch cache as built-in kinds.

pub mod access;
pub mod cel;
pub mod cel_authz;
pub mod cel_check;
mod cel_comprehensions;
mod cel_cost;
mod cel_format;
mod cel_library;
mod cel_network;
pub mod cel_objects;
mod cel_semver;
pub mod default;
pub mod definition;
pub mod expression;
mod formats;
pub mod kinds;
pub mod names;
mod rules;
pub mod scale;
pub mod schema;
pub mod structural;
pub mod v1beta1;
pub mod validate;

use crate::registry::lifecycle;
use serde_json::Value;
use std::sync::Arc;
use structural::Structural;

/// The finalizer kube puts on every CRD: its instances are deleted
/// before the CRD goes.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The strings of a JSON array (non-strings skipped), as CRD fields
/// list names, keys and categories.
pub(crate) fn str_list(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// kube's v1 defaults of a CRD: the singular and list kind from the kind,
/// conversion `None`, a webhook service on port 443.
pub fn set_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions {
            if let Some(schema) = v.pointer_mut("/schema/openAPIV3Schema") {
                drop_zero_values(schema);
            }
        }
    }
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if empty(names.get("singular")) && !kind.is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if empty(names.get("listKind")) && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| serde_json::json!({"strategy": "None"}));
    if let Some(svc) = conversion
        .pointer_mut("/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        svc.entry("port").or_insert(serde_json::json!(443));
    }
}

/// Schema keywords whose zero value kube's Go types drop (non-pointer
/// fields with `omitempty`): a client sending `"id": ""` or
/// `"nullable": false` (Go clients over protobuf do) means the same as
/// leaving them out, and kube stores and checks them as left out.
const OMITTED_WHEN_ZERO: &[&str] = &[
    "id",
    "$schema",
    "description",
    "type",
    "format",
    "title",
    "pattern",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "uniqueItems",
    "nullable",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "required",
    "enum",
    "allOf",
    "anyOf",
    "oneOf",
    "properties",
    "patternProperties",
    "dependencies",
    "definitions",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
];

fn drop_zero_values(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    node.retain(|k, v| {
        let zero = match v {
            Value::String(s) => s.is_empty(),
            Value::Bool(b) => !*b,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        !(zero && OMITTED_WHEN_ZERO.contains(&k.as_str()))
    });
    crate::schema::for_each_child_schema(node, drop_zero_values);
}

/// The storage version a CRD names (`storage: true`).
pub fn storage_version(crd: &Value) -> Option<&str> {
    crate::meta::array_at(crd, "/spec/versions")
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
}

/// Records the storage version in `status.storedVersions` (kube's CRD
/// strategy on every create and update; only `/status` removes one).
pub fn record_stored_version(crd: &mut Value) {
    let Some(storage) = storage_version(crd).map(str::to_string) else {
        return;
    };
    let Some(root) = crd.as_object_mut() else {
        return;
    };
    let status = root
        .entry("status")
        .or_insert_with(|| serde_json::json!({}));
    if !status.is_object() {
        *status = serde_json::json!({});
    }
    let stored = status
        .as_object_mut()
        .expect("made an object")
        .entry("storedVersions")
        .or_insert_with(|| serde_json::json!([]));
    if !stored.is_array() {
        *stored = serde_json::json!([]);
    }
    let list = stored.as_array_mut().expect("made an array");
    if !list.iter().any(|v| v == storage.as_str()) {
        list.push(Value::String(storage));
    }
}

/// The first DELETE of a CRD: its instances go first, so it takes the
/// cleanup finalizer and says it is terminating.
pub fn mark_for_cleanup(crd: &mut Value, now: &str) {
    if crate::meta::metadata(crd).is_some_and(|m| m.contains_key("deletionTimestamp")) {
        return;
    }
    let mut list = lifecycle::finalizers(crd);
    if !list.iter().any(|f| f == CLEANUP_FINALIZER) {
        list.push(CLEANUP_FINALIZER.into());
        lifecycle::set_finalizers(crd, &list);
    }
    set_condition(
        crd,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
}

/// Sets a status condition, keeping its transition time when its status
/// does not change. Returns whether anything changed.
pub fn set_condition(
    crd: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> bool {
    let Some(root) = crd.as_object_mut() else {
        return false;
    };
    let st = root
        .entry("status")
        .or_insert_with(|| serde_json::json!({}));
    if !st.is_object() {
        *st = serde_json::json!({});
    }
    let conditions = st
        .as_object_mut()
        .expect("made an object")
        .entry("conditions")
        .or_insert_with(|| serde_json::json!([]));
    if !conditions.is_array() {
        *conditions = serde_json::json!([]);
    }
    let list = conditions.as_array_mut().expect("made an array");
    let wanted = |at: &str| {
        serde_json::json!({"type": kind, "status": status, "reason": reason,
            "message": message, "lastTransitionTime": at})
    };
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        Some(c) => {
            let same_status = c.get("status").and_then(Value::as_str) == Some(status);
            let at = match c.get("lastTransitionTime").and_then(Value::as_str) {
                Some(t) if same_status => t.to_string(),
                _ => now.to_string(),
            };
            let new = wanted(&at);
            if *c == new {
                return false;
            }
            *c = new;
        }
        None => list.push(wanted(now)),
    }
    true
}

/// kube's NonStructuralSchema condition: set (reason `Violations`) while
/// a version's schema is not structural, removed once it is. v1 refuses
/// such schemas on write, so only CRDs stored by older servers (written
/// as v1beta1, found in a shared etcd) ever carry it.
pub fn set_structural_condition(crd: &mut Value, now: &str) -> bool {
    let violations: Vec<String> = definition::validate_create(crd)
        .causes
        .iter()
        .filter(|c| c.field.contains(".openAPIV3Schema"))
        .map(|c| c.error_string())
        .collect();
    if violations.is_empty() {
        return remove_condition(crd, "NonStructuralSchema");
    }
    set_condition(
        crd,
        "NonStructuralSchema",
        "True",
        "Violations",
        &format!("[{}]", violations.join(", ")),
        now,
    )
}

/// Removes a status condition. Returns whether it was there.
pub fn remove_condition(crd: &mut Value, kind: &str) -> bool {
    let Some(list) = crd
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let before = list.len();
    list.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    list.len() != before
}

/// Whether a CRD's condition `kind` is `True`.
pub fn condition_true(crd: &Value, kind: &str) -> bool {
    crate::meta::array_at(crd, "/status/conditions")
        .iter()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// Whether a CRD is established (its kind is served).
pub fn is_established(crd: &Value) -> bool {
    condition_true(crd, "Established")
}

/// What one served version of a custom resource kind checks and fills on
/// every write.
pub struct CustomRules {
    /// The version's `openAPIV3Schema`, parsed.
    pub schema: Structural,
    /// The schema declares defaults somewhere.
    pub defaults: bool,
    /// The version has the status subresource.
    pub status: bool,
    /// `deprecationWarning` (or kube's default text) for a deprecated version.
    pub warning: Option<String>,
    /// The CRD is being deleted: no new instances.
    pub terminating: bool,
    /// Objects stored before this revision may predate the schema's
    /// defaults: they are defaulted when read (kube defaults every read
    /// from storage; objects written since were defaulted on the way in).
    /// 0 when the schema has no defaults.
    pub defaults_from: u64,
    /// `conversion.strategy: Webhook`: versions convert through the
    /// CRD's webhook, not by rewriting apiVersion.
    pub webhook: Option<Arc<WebhookConversion>>,
}

/// A CRD's conversion webhook, as its versions call it.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConversion {
    /// The CRD's name (kube names the webhook after it).
    pub crd: String,
    /// `spec.conversion.webhook.clientConfig`, as written.
    pub client_config: Value,
    /// `conversionReviewVersions`, in the CRD's order of preference.
    pub review_versions: Vec<String>,
}

impl WebhookConversion {
    /// The webhook a CRD names, if its strategy is `Webhook`.
    pub fn of(crd: &Value) -> Option<Self> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        Some(Self {
            crd: crate::meta::name(crd).to_string(),
            client_config: conversion
                .pointer("/webhook/clientConfig")
                .cloned()
                .unwrap_or(Value::Null),
            review_versions: str_list(conversion.pointer("/webhook/conversionReviewVersions"))
                .map(str::to_string)
                .collect(),
        })
    }
}

impl CustomRules {
    pub fn new(schema: &Value, status: bool, warning: Option<String>) -> Self {
        let schema = Structural::parse(schema);
        Self {
            defaults: schema.has_defaults(),
            schema,
            status,
            warning,
            terminating: false,
            defaults_from: 0,
            webhook: None,
        }
    }

    /// Fills the schema's defaults into `obj` (and drops the nulls the
    /// schema does not allow), as every write does.
    pub fn default(&self, obj: &mut Value) -> bool {
        default::apply(obj, &self.schema)
    }

    /// Whether an object stored at `revision` is served as stored (no
    /// defaults to fill on read).
    pub fn read_as_stored(&self, revision: u64) -> bool {
        revision >= self.defaults_from
    }

    /// Fills what the schema defaults into an object read from storage.
    pub fn default_read(&self, obj: &mut Value) {
        if self.defaults {
            default::apply(obj, &self.schema);
        }
    }

    /// Every problem with `obj` (its previous state `old` for an update):
    /// schema values, embedded resources, list invariants, then the CEL
    /// rules if nothing so far blocks them.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<crate::status::StatusCause> {
        validate::custom_resource(&self.schema, obj, old)
    }
}

/// Rules are compared by identity: an entry rebuilt from a changed CRD is
/// a different entry.
impl PartialEq for CustomRules {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for CustomRules {}

impl std::fmt::Debug for CustomRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomRules")
            .field("defaults", &self.defaults)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
