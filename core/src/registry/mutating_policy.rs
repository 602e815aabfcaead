//! kube's validation of MutatingAdmissionPolicy (v1beta1): a failure
//! policy, match constraints with at least one resource rule of CREATE
//! and UPDATE only (nothing else can be mutated), mutations of a known
//! patch type carrying exactly its own expression, a reinvocation policy,
//! and every expression compiling.

use super::webhook_configuration::rule_checks;
use crate::crd::expression::Expression;
use crate::meta;
use crate::status::{field_invalid, field_not_supported, field_required, StatusCause};
use serde_json::Value;

/// What a mutating policy's expressions may read.
pub const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "authorizer",
];

fn compiles(
    source: &str,
    path: &str,
    defined: &[(String, Expression)],
    out: &mut Vec<StatusCause>,
) {
    if source.trim().is_empty() {
        out.push(field_required(path, ""));
    } else if let Err(e) = Expression::compile_with(source, VARIABLES, defined) {
        out.push(field_invalid(path, source, &e));
    }
}

pub fn validate(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => out.push(field_required("spec.failurePolicy", "")),
        Some(p) if !matches!(p, "Fail" | "Ignore") => out.push(field_not_supported(
            "spec.failurePolicy",
            p,
            &["Fail", "Ignore"],
        )),
        Some(_) => {}
    }
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => out.push(field_required("spec.matchConstraints", "")),
        Some(m) => {
            let rules = meta::array_at(m, "/resourceRules");
            if rules.is_empty() {
                out.push(field_required("spec.matchConstraints.resourceRules", ""));
            }
            for (i, rule) in rules.iter().enumerate() {
                let path = format!("spec.matchConstraints.resourceRules[{i}]");
                rule_checks(rule, &path, &mut out);
                for op in meta::array_at(rule, "/operations")
                    .iter()
                    .filter_map(Value::as_str)
                {
                    if !matches!(op, "CREATE" | "UPDATE") {
                        out.push(field_not_supported(
                            "spec.matchConstraints.resourceRules.operations",
                            op,
                            &["CREATE", "UPDATE"],
                        ));
                    }
                }
            }
        }
    }
    let mut defined: Vec<(String, Expression)> = Vec::new();
    for (i, v) in meta::array_at(spec, "/variables").iter().enumerate() {
        let path = format!("spec.variables[{i}]");
        let name = meta::str_at(v, "/name");
        if name.is_empty() {
            out.push(field_required(&format!("{path}.name"), ""));
        }
        let source = meta::str_at(v, "/expression");
        compiles(source, &format!("{path}.expression"), &defined, &mut out);
        if let Ok(e) = Expression::compile_with(source, VARIABLES, &defined) {
            defined.push((name.to_string(), e));
        }
    }
    for (i, c) in meta::array_at(spec, "/matchConditions").iter().enumerate() {
        let path = format!("spec.matchConditions[{i}]");
        if meta::str_at(c, "/name").is_empty() {
            out.push(field_required(&format!("{path}.name"), ""));
        }
        compiles(
            meta::str_at(c, "/expression"),
            &format!("{path}.expression"),
            &[],
            &mut out,
        );
    }
    let mutations = meta::array_at(spec, "/mutations");
    if mutations.is_empty() {
        out.push(field_required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        mutation(m, &format!("spec.mutations[{i}]"), &defined, &mut out);
    }
    match spec.get("reinvocationPolicy").and_then(Value::as_str) {
        None | Some("") => out.push(field_required("spec.reinvocationPolicy", "")),
        Some(p) if !matches!(p, "Never" | "IfNeeded") => out.push(field_not_supported(
            "spec.reinvocationPolicy",
            p,
            &["IfNeeded", "Never"],
        )),
        Some(_) => {}
    }
    out
}

fn mutation(m: &Value, path: &str, defined: &[(String, Expression)], out: &mut Vec<StatusCause>) {
    let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    let (own, other) = match meta::str_at(m, "/patchType") {
        "" => {
            out.push(field_required(&format!("{path}.patchType"), ""));
            return;
        }
        "JSONPatch" => ("jsonPatch", "applyConfiguration"),
        "ApplyConfiguration" => ("applyConfiguration", "jsonPatch"),
        t => {
            out.push(field_not_supported(
                &format!("{path}.patchType"),
                t,
                &["ApplyConfiguration", "JSONPatch"],
            ));
            return;
        }
    };
    let patch_type = meta::str_at(m, "/patchType");
    if present(own) {
        let source = m[own]
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        compiles(source, &format!("{path}.{own}.expression"), defined, out);
    } else {
        out.push(field_required(
            &format!("{path}.{own}"),
            &format!("must be specified when patchType is {patch_type}"),
        ));
    }
    if present(other) {
        out.push(field_invalid(
            &format!("{path}.{other}"),
            &format!("{{{other}}}"),
            &format!("must not be specified when patchType is {patch_type}"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_what_kube_refuses() {
        let good = json!({"spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}]}});
        assert!(validate(&good).is_empty(), "{:?}", validate(&good));
        let bad = json!({"spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "JSONPatch", "applyConfiguration": {"expression": "x"}},
                {"patchType": "Merge"},
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "object.("}}],
            "reinvocationPolicy": "Sometimes"}});
        let fields: Vec<String> = validate(&bad).into_iter().map(|c| c.field).collect();
        for f in [
            "spec.failurePolicy",
            "spec.matchConstraints.resourceRules.operations",
            "spec.mutations[0].jsonPatch",
            "spec.mutations[0].applyConfiguration",
            "spec.mutations[1].patchType",
            "spec.mutations[2].applyConfiguration.expression",
            "spec.reinvocationPolicy",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f} not in {fields:?}");
        }
    }
}
