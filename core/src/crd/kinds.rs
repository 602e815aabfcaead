//! The catalog entries an accepted CRD serves: one per served version,
//! all stored in one place at the storage version, named by the CRD's
//! accepted names, with its subresources, printer columns and selectable
//! fields as catalog data — the same data the built-in kinds carry.

use super::CustomRules;
use crate::catalog::{
    field_path, version_rank, FieldPath, Printer, ResourceInfo, ScaleSelector, ScaleSpec,
    SchemaSource, SelectableField,
};
use crate::keys::KeyLayout;
use crate::meta::str_at;
use crate::table::{ColumnSpec, CustomColumns};
use serde_json::Value;
use std::sync::Arc;

/// The catalog entries of `crd` (a CustomResourceDefinition object), by
/// the names in its status (kube serves the accepted names, not the
/// requested ones).
pub fn resources(crd: &Value, layout: &KeyLayout) -> Result<Vec<ResourceInfo>, String> {
    let spec = crd.get("spec").ok_or("no spec")?;
    let group = str_at(spec, "/group");
    let names = crd
        .pointer("/status/acceptedNames")
        .filter(|n| !str_at(n, "/plural").is_empty())
        .or_else(|| spec.get("names"))
        .ok_or("no names")?;
    let plural = str_at(names, "/plural");
    let kind = str_at(names, "/kind");
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Err("the CRD names no group, plural or kind".into());
    }
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("no versions")?;
    let storage = super::storage_version(crd).ok_or("no storage version")?;
    let namespaced = str_at(spec, "/scope") != "Cluster";
    let empty = Value::Object(Default::default());
    let schema_of = |v: &'_ Value| {
        v.pointer("/schema/openAPIV3Schema")
            .unwrap_or(&empty)
            .clone()
    };
    let served: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .collect();
    let schemas: Vec<(String, Value)> = served
        .iter()
        .map(|v| (str_at(v, "/name").to_string(), schema_of(v)))
        .collect();
    let registry = Arc::new(super::schema::registry(
        group,
        &schemas
            .iter()
            .map(|(v, s)| (v.as_str(), kind, s))
            .collect::<Vec<_>>(),
    ));
    let storage_key = layout.custom(group, plural);
    let mut out = Vec::with_capacity(served.len());
    let webhook = super::WebhookConversion::of(crd).map(Arc::new);
    for (v, (version, schema)) in served.iter().zip(&schemas) {
        let mut info = ResourceInfo::new(group, version, kind, plural, namespaced);
        info.list_kind = non_empty(str_at(names, "/listKind"), || format!("{kind}List"));
        info.singular = non_empty(str_at(names, "/singular"), || kind.to_lowercase());
        info.short_names = strings(names.get("shortNames"));
        info.categories = strings(names.get("categories"));
        let status = v.pointer("/subresources/status").is_some();
        if status {
            info.subresources.push("status".into());
        }
        if let Some(scale) = v.pointer("/subresources/scale") {
            info.subresources.push("scale".into());
            info.scale = Some(ScaleSpec {
                spec_replicas: json_path(str_at(scale, "/specReplicasPath")),
                status_replicas: json_path(str_at(scale, "/statusReplicasPath")),
                selector: ScaleSelector::String(json_path(str_at(scale, "/labelSelectorPath"))),
            });
        }
        info.strategy.tracks_generation = true;
        info.strategy.allow_unconditional_update = false;
        info.printer = Printer::Columns(Arc::new(columns(v)?));
        info.selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|f| {
                let path = str_at(f, "/jsonPath");
                let label = path.trim_start_matches('.');
                SelectableField {
                    label: label.into(),
                    path: json_path(path),
                    absent: "".into(),
                    stored_label: label.into(),
                }
            })
            .collect();
        info.storage_key = storage_key.clone();
        info.storage_group = group.to_string();
        info.storage_version = storage.to_string();
        info.schema_source = SchemaSource::Own(registry.clone());
        let warning = (v.get("deprecated").and_then(Value::as_bool) == Some(true)).then(|| {
            v.get("deprecationWarning")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| deprecation(group, version, kind, &served))
        });
        let mut rules = CustomRules::new(schema, status, warning);
        rules.terminating = super::condition_true(crd, "Terminating");
        rules.webhook = webhook.clone();
        if rules.defaults {
            // Instances older than this version of the CRD may lack what
            // its schema now defaults.
            rules.defaults_from = crate::meta::resource_version(crd)
                .parse()
                .unwrap_or(u64::MAX);
        }
        if rules.terminating {
            info.verbs.retain(|v| v != "create");
        }
        info.custom = Some(Arc::new(rules));
        out.push(info);
    }
    Ok(out)
}

/// kube's default deprecation warning: the newest served version that is
/// not deprecated and is newer than this one is named as the one to use.
fn deprecation(group: &str, version: &str, kind: &str, served: &[&Value]) -> String {
    let mut text = format!("{group}/{version} {kind} is deprecated");
    let newer = served
        .iter()
        .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
        .map(|v| str_at(v, "/name"))
        .filter(|v| version_rank(v) < version_rank(version))
        .min_by_key(|v| version_rank(v));
    if let Some(newer) = newer {
        text.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    text
}

/// A version's printer columns; kube shows the age when it declares none.
fn columns(version: &Value) -> Result<CustomColumns, String> {
    let declared = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty());
    let specs = match declared {
        None => vec![ColumnSpec {
            name: "Age".into(),
            kind: "date".into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }],
        Some(cols) => cols
            .iter()
            .map(|c| ColumnSpec {
                name: str_at(c, "/name").to_string(),
                kind: str_at(c, "/type").to_string(),
                format: str_at(c, "/format").to_string(),
                description: str_at(c, "/description").to_string(),
                priority: c
                    .get("priority")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    .min(u8::MAX as u64) as u8,
                json_path: str_at(c, "/jsonPath").to_string(),
            })
            .collect(),
    };
    CustomColumns::new(specs)
}

/// A simple JSONPath (`.spec.replicas`) as the keys it walks.
pub fn json_path(path: &str) -> FieldPath {
    let keys: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|k| !k.is_empty())
        .collect();
    field_path(&keys)
}

fn non_empty(s: &str, or: impl FnOnce() -> String) -> String {
    if s.is_empty() {
        or()
    } else {
        s.to_string()
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    super::str_list(v).map(str::to_string).collect()
}
