//! kube's type check of a ValidatingAdmissionPolicy: every validation's
//! expression and message expression is checked against the schema of
//! each kind the policy's match constraints name exactly (no wildcards,
//! no subresources, at most ten kinds) and of its `paramKind`, and what
//! fails is reported as the policy's `status.typeChecking` warnings. The
//! check never changes what the policy does: an expression that fails it
//! still runs, and a kind without a schema is not checked.

use kubeshard_core::catalog::{CatalogSnapshot, ResourceInfo};
use kubeshard_core::crd::cel_check::{check, Type};
use kubeshard_core::meta;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// kube checks at most this many kinds per policy.
const MAX_KINDS: usize = 10;

/// The kinds the policy's resource rules name exactly, sorted by group,
/// version and kind.
fn kinds(spec: &Value, catalog: &CatalogSnapshot) -> Vec<Arc<ResourceInfo>> {
    let mut found: BTreeMap<(String, String, String), Arc<ResourceInfo>> = BTreeMap::new();
    let mut count = 0;
    for rule in meta::array_at(spec, "/matchConstraints/resourceRules") {
        let strings = |field: &str| -> Vec<&str> {
            let mut v: Vec<&str> = meta::array_at(rule, field)
                .iter()
                .filter_map(Value::as_str)
                .collect();
            v.sort_unstable();
            v
        };
        let (groups, versions) = (strings("/apiGroups"), strings("/apiVersions"));
        if groups.iter().chain(&versions).any(|s| s.contains('*')) {
            continue;
        }
        let resources: Vec<&str> = strings("/resources")
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some(info) = catalog.lookup(group, version, resource) else {
                        continue;
                    };
                    let key = (info.group.clone(), info.version.clone(), info.kind.clone());
                    found.insert(key, info.clone());
                    count += 1;
                    if count == MAX_KINDS {
                        return found.into_values().collect();
                    }
                }
            }
        }
    }
    found.into_values().collect()
}

/// The schema of `spec.paramKind`: None without a param kind, `dyn` when
/// the kind is not served.
fn param_type<'a>(spec: &Value, catalog: &'a CatalogSnapshot) -> Option<Type<'a>> {
    let p = spec.get("paramKind").filter(|p| p.is_object())?;
    let (group, version) = match meta::str_at(p, "/apiVersion").split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", meta::str_at(p, "/apiVersion")),
    };
    let kind = meta::str_at(p, "/kind");
    let schema = catalog
        .group_version(group, version)
        .into_iter()
        .find(|r| r.kind == kind)
        .and_then(|r| r.schema());
    Some(schema.map_or(Type::Dyn, Type::of))
}

/// `group/version, Kind=kind`, as kube prints a GroupVersionKind.
fn gvk(info: &ResourceInfo) -> String {
    format!("{}/{}, Kind={}", info.group, info.version, info.kind)
}

/// The policy's `status.typeChecking.expressionWarnings`.
pub fn warnings(policy: &Value, catalog: &CatalogSnapshot) -> Vec<Value> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let kinds = kinds(spec, catalog);
    let params = param_type(spec, catalog);
    let namespace = catalog
        .lookup("", "v1", "namespaces")
        .and_then(|n| n.schema())
        .map_or(Type::Dyn, Type::of);
    // Per kind: its declarations, variables included.
    let environments: Vec<(String, Vec<(&str, Type<'_>)>)> = kinds
        .iter()
        .filter_map(|info| {
            let object = Type::of(info.schema()?);
            let mut declared = vec![
                ("object", object.clone()),
                ("oldObject", object),
                ("request", Type::admission_request()),
                ("namespaceObject", namespace.clone()),
                ("authorizer", Type::Dyn),
            ];
            if let Some(p) = &params {
                declared.push(("params", p.clone()));
            }
            let mut variables: Vec<(&str, Type<'_>)> = Vec::new();
            for v in meta::array_at(spec, "/variables") {
                let mut with = declared.clone();
                with.push(("variables", Type::record(variables.clone())));
                let t = check(meta::str_at(v, "/expression"), &with).unwrap_or(Type::Dyn);
                variables.push((meta::str_at(v, "/name"), t));
            }
            declared.push(("variables", Type::record(variables)));
            Some((gvk(info), declared))
        })
        .collect();
    let report = |source: &str| -> Option<String> {
        let found: Vec<String> = environments
            .iter()
            .filter_map(|(gvk, declared)| {
                check(source, declared)
                    .err()
                    .map(|issues| format!("{gvk}: compilation failed: {issues}\n"))
            })
            .collect();
        (!found.is_empty()).then(|| found.join("\n"))
    };
    let mut out = Vec::new();
    for (i, v) in meta::array_at(spec, "/validations").iter().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(source) = v
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            if let Some(warning) = report(source) {
                out.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": warning,
                }));
            }
        }
    }
    out
}
