//! kube's validation of admission policies and their bindings
//! (ValidatingAdmissionPolicy v1, MutatingAdmissionPolicy v1beta1): a
//! failure policy, match constraints with at least one resource rule
//! (CREATE and UPDATE only for mutating ones, as nothing else can be
//! mutated), named match conditions and variables, validations or audit
//! annotations (mutations and a reinvocation policy), and every
//! expression compiling and type-checking against kube's declarations —
//! `object`, `params` and the like are open (`dyn`) here, `request` is
//! typed — with the result type each place needs. An expression an
//! update keeps unchanged is not judged again (kube compiles those in its
//! lenient "stored" environment), so a policy stored under older rules
//! can still be edited.

use super::webhook_configuration::rule_checks;
use crate::crd::cel_check::{self, Type};
use crate::crd::expression::Expression;
use crate::meta;
use crate::status::{
    field_duplicate, field_forbidden, field_invalid, field_not_supported, field_required,
    StatusCause,
};
use crate::validation::{is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;
use std::collections::HashSet;

/// What admission policies' expressions may read.
pub const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "authorizer",
];

/// kube's limit on an audit annotation's value expression.
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;

/// What an expression must evaluate to.
#[derive(Clone, Copy)]
enum Want {
    Bool,
    Text,
    TextOrNull,
    Any,
}

/// The declarations expressions are checked against, the policy's
/// variables added as they are read.
struct Env {
    declared: Vec<(&'static str, Type<'static>)>,
    variables: Vec<(String, Type<'static>)>,
    defined: Vec<(String, Expression)>,
    /// Expressions the old object had (an update does not judge them).
    kept: HashSet<String>,
}

impl Env {
    fn new(old: Option<&Value>) -> Self {
        let mut kept = HashSet::new();
        if let Some(old) = old {
            collect_expressions(old, &mut kept);
        }
        Self {
            declared: vec![
                ("object", Type::Dyn),
                ("oldObject", Type::Dyn),
                ("request", Type::admission_request()),
                ("params", Type::Dyn),
                ("namespaceObject", Type::Dyn),
                ("authorizer", Type::Dyn),
            ],
            variables: Vec::new(),
            defined: Vec::new(),
            kept,
        }
    }

    /// Checks one expression at `path`; its type when it checks.
    fn expression(
        &self,
        source: &str,
        path: &str,
        want: Want,
        out: &mut Vec<StatusCause>,
    ) -> Option<Type<'static>> {
        if source.trim().is_empty() {
            out.push(field_required(path, "expression is not specified"));
            return None;
        }
        if self.kept.contains(source) {
            return Some(Type::Dyn);
        }
        let mut declared = self.declared.clone();
        let variables: Vec<(&str, Type<'static>)> = self
            .variables
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        declared.push(("variables", Type::record(variables)));
        let t = match cel_check::check(source, &declared) {
            Ok(t) => t,
            Err(issues) => {
                out.push(field_invalid(
                    path,
                    source,
                    &format!("compilation failed: {issues}"),
                ));
                return None;
            }
        };
        if let Err(e) = Expression::compile_with(source, VARIABLES, &self.defined) {
            out.push(field_invalid(path, source, &e));
            return None;
        }
        let fits = match want {
            Want::Any => true,
            Want::Bool => matches!(t, Type::Bool | Type::Dyn),
            Want::Text => matches!(t, Type::String | Type::SchemaString | Type::Dyn),
            Want::TextOrNull => matches!(
                t,
                Type::String | Type::SchemaString | Type::Null | Type::Dyn
            ),
        };
        if !fits {
            let wanted = match want {
                Want::Bool => "bool",
                _ => "string",
            };
            out.push(field_invalid(
                path,
                source,
                &format!("must evaluate to {wanted} but got {t}"),
            ));
            return None;
        }
        Some(t)
    }
}

/// Every expression string under `v` (an old policy's spec).
fn collect_expressions(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expression" | "messageExpression" | "valueExpression", Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    _ => collect_expressions(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| collect_expressions(x, out)),
        _ => {}
    }
}

/// A ValidatingAdmissionPolicy (`mutating`: a MutatingAdmissionPolicy);
/// `old` on update.
pub fn validate_policy(obj: &Value, old: Option<&Value>, mutating: bool) -> Vec<StatusCause> {
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
    if let Some(p) = spec.get("paramKind").filter(|p| !p.is_null()) {
        for key in ["apiVersion", "kind"] {
            if meta::str_at(p, &format!("/{key}")).is_empty() {
                out.push(field_required(&format!("spec.paramKind.{key}"), ""));
            }
        }
    }
    match_constraints(spec, mutating, &mut out);
    let mut env = Env::new(old.and_then(|o| o.get("spec")));
    conditions(spec, &env, &mut out);
    for (i, v) in meta::array_at(spec, "/variables").iter().enumerate() {
        let path = format!("spec.variables[{i}]");
        let name = meta::str_at(v, "/name");
        if name.trim().is_empty() {
            out.push(field_required(
                &format!("{path}.name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(name) {
            out.push(field_invalid(
                &format!("{path}.name"),
                name,
                "must be a valid CEL identifier",
            ));
        }
        let source = meta::str_at(v, "/expression");
        let t = env.expression(source, &format!("{path}.expression"), Want::Any, &mut out);
        env.variables
            .push((name.to_string(), t.unwrap_or(Type::Dyn)));
        if let Ok(e) = Expression::compile_with(source, VARIABLES, &env.defined) {
            env.defined.push((name.to_string(), e));
        }
    }
    if mutating {
        mutations(spec, &env, &mut out);
    } else {
        validations(obj, spec, &env, &mut out);
    }
    out
}

fn match_constraints(spec: &Value, mutating: bool, out: &mut Vec<StatusCause>) {
    let Some(m) = spec.get("matchConstraints").filter(|m| m.is_object()) else {
        out.push(field_required("spec.matchConstraints", ""));
        return;
    };
    let rules = meta::array_at(m, "/resourceRules");
    if rules.is_empty() {
        out.push(field_required("spec.matchConstraints.resourceRules", ""));
    }
    for (i, rule) in rules.iter().enumerate() {
        rule_checks(
            rule,
            &format!("spec.matchConstraints.resourceRules[{i}]"),
            out,
        );
        if !mutating {
            continue;
        }
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

fn conditions(spec: &Value, env: &Env, out: &mut Vec<StatusCause>) {
    let mut names = HashSet::new();
    for (i, c) in meta::array_at(spec, "/matchConditions").iter().enumerate() {
        let path = format!("spec.matchConditions[{i}]");
        let name = meta::str_at(c, "/name");
        if name.is_empty() {
            out.push(field_required(&format!("{path}.name"), ""));
        } else {
            for e in is_qualified_name(name) {
                out.push(field_invalid(&format!("{path}.name"), name, &e));
            }
            if !names.insert(name) {
                out.push(field_duplicate(&format!("{path}.name"), name));
            }
        }
        env.expression(
            meta::str_at(c, "/expression"),
            &format!("{path}.expression"),
            Want::Bool,
            out,
        );
    }
}

fn validations(obj: &Value, spec: &Value, env: &Env, out: &mut Vec<StatusCause>) {
    let validations = meta::array_at(spec, "/validations");
    let annotations = meta::array_at(spec, "/auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        out.push(field_required("spec.validations", why));
        out.push(field_required("spec.auditAnnotations", why));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        let path = format!("spec.validations[{i}]");
        env.expression(
            meta::str_at(v, "/expression"),
            &format!("{path}.expression"),
            Want::Bool,
            out,
        );
        if let Some(m) = v.get("messageExpression").and_then(Value::as_str) {
            if m.trim().is_empty() {
                out.push(field_invalid(
                    &format!("{path}.messageExpression"),
                    m,
                    "must be non-empty if specified",
                ));
            } else {
                env.expression(m, &format!("{path}.messageExpression"), Want::Text, out);
            }
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            if m.trim().is_empty() {
                out.push(field_invalid(
                    &format!("{path}.message"),
                    m,
                    "must be non-empty if specified",
                ));
            } else if m.trim().contains(['\n', '\r']) {
                out.push(field_invalid(
                    &format!("{path}.message"),
                    m,
                    "must not contain line breaks",
                ));
            }
        }
        if let Some(r) = v.get("reason").and_then(Value::as_str) {
            const REASONS: &[&str] = &[
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
                "Unauthorized",
            ];
            if !REASONS.contains(&r) {
                out.push(field_not_supported(&format!("{path}.reason"), r, REASONS));
            }
        }
    }
    let policy = meta::name(obj);
    let mut keys = HashSet::new();
    for (i, a) in annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        let key = meta::str_at(a, "/key");
        if policy.is_empty() {
            out.push(field_invalid(
                &format!("{path}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            for e in is_qualified_name(&format!("{policy}/{key}")) {
                out.push(field_invalid(&format!("{path}.key"), key, &e));
            }
        }
        if !keys.insert(key) {
            out.push(field_duplicate(&format!("{path}.key"), key));
        }
        let source = meta::str_at(a, "/valueExpression");
        let at = format!("{path}.valueExpression");
        if source.trim().len() > MAX_VALUE_EXPRESSION {
            out.push(field_required(
                &at,
                &format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length"),
            ));
        } else {
            env.expression(source, &at, Want::TextOrNull, out);
        }
    }
}

fn mutations(spec: &Value, env: &Env, out: &mut Vec<StatusCause>) {
    let mutations = meta::array_at(spec, "/mutations");
    if mutations.is_empty() {
        out.push(field_required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        mutation(m, &format!("spec.mutations[{i}]"), env, out);
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
}

fn mutation(m: &Value, path: &str, env: &Env, out: &mut Vec<StatusCause>) {
    let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    let patch_type = meta::str_at(m, "/patchType");
    let (own, other) = match patch_type {
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
    if present(own) {
        let source = m[own]
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        env.expression(source, &format!("{path}.{own}.expression"), Want::Any, out);
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

/// A policy binding (`mutating`: of a MutatingAdmissionPolicy, which has
/// no validation actions).
pub fn validate_binding(obj: &Value, mutating: bool) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let policy = meta::str_at(spec, "/policyName");
    if policy.is_empty() {
        out.push(field_required("spec.policyName", ""));
    } else {
        for e in is_dns1123_subdomain(policy) {
            out.push(field_invalid("spec.policyName", policy, &e));
        }
    }
    if let Some(p) = spec.get("paramRef").filter(|p| !p.is_null()) {
        let name = meta::str_at(p, "/name");
        let selector = p.get("selector").is_some_and(|s| !s.is_null());
        if !name.is_empty() && selector {
            let why = "name and selector are mutually exclusive";
            out.push(field_forbidden("spec.paramRef.name", why));
            out.push(field_forbidden("spec.paramRef.selector", why));
        }
        if name.is_empty() && !selector {
            out.push(field_required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        match p.get("parameterNotFoundAction").and_then(Value::as_str) {
            None | Some("") => {
                out.push(field_required("spec.paramRef.parameterNotFoundAction", ""))
            }
            Some(a) if !matches!(a, "Allow" | "Deny") => out.push(field_not_supported(
                "spec.paramRef.parameterNotFoundAction",
                a,
                &["Allow", "Deny"],
            )),
            Some(_) => {}
        }
    }
    if !mutating {
        actions(spec, &mut out);
    }
    out
}

fn actions(spec: &Value, out: &mut Vec<StatusCause>) {
    let actions: Vec<&str> = meta::array_at(spec, "/validationActions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if actions.is_empty() {
        out.push(field_required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        let path = format!("spec.validationActions[{i}]");
        if !seen.insert(*a) {
            out.push(field_duplicate(&path, a));
        }
        if !matches!(*a, "Deny" | "Warn" | "Audit") {
            out.push(field_not_supported(&path, a, &["Audit", "Deny", "Warn"]));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(field_invalid(
            "spec.validationActions",
            &actions.join(", "),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
}

/// kube's CEL identifier rule for variable names.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(causes: Vec<StatusCause>) -> Vec<String> {
        causes.into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn mutating_policies_are_refused_as_kube_refuses_them() {
        let good = json!({"spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}]}});
        assert!(
            validate_policy(&good, None, true).is_empty(),
            "{:?}",
            validate_policy(&good, None, true)
        );
        let bad = json!({"spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "JSONPatch", "applyConfiguration": {"expression": "x"}},
                {"patchType": "Merge"},
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "object.("}}],
            "reinvocationPolicy": "Sometimes"}});
        let found = fields(validate_policy(&bad, None, true));
        for f in [
            "spec.failurePolicy",
            "spec.matchConstraints.resourceRules.operations",
            "spec.mutations[0].jsonPatch",
            "spec.mutations[0].applyConfiguration",
            "spec.mutations[1].patchType",
            "spec.mutations[2].applyConfiguration.expression",
            "spec.reinvocationPolicy",
        ] {
            assert!(found.iter().any(|x| x == f), "{f} not in {found:?}");
        }
    }

    fn vap(validations: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "variables": [{"name": "replicas", "expression": "object.spec.replicas"},
                {"name": "odd", "expression": "variables.replicas % 2 == 1"}],
            "validations": validations}})
    }

    #[test]
    fn validating_policies_compile_and_type_check_on_write() {
        // What kube accepts, type confusion against a kind's schema
        // included (that is only warned about in status).
        let ok = vap(json!([{"expression": "object.spec.replicas > '1'",
            "messageExpression": "'got ' + object.spec.replicas"},
            {"expression": "variables.odd && request.operation == 'CREATE'", "reason": "Forbidden"}]));
        assert!(
            validate_policy(&ok, None, false).is_empty(),
            "{:?}",
            validate_policy(&ok, None, false)
        );
        let bad = vap(json!([
            {"expression": "undefinedThing == 1"},
            {"expression": "'not a bool'"},
            {"expression": "true", "messageExpression": "1 + 1"},
            {"expression": "request.nope == 1"},
            {"expression": "variables.missing"},
            {"expression": "true", "reason": "Teapot", "message": "two\nlines"}]));
        let causes = validate_policy(&bad, None, false);
        let text = format!("{causes:?}");
        for (field, says) in [
            (
                "spec.validations[0].expression",
                "undeclared reference to 'undefinedThing'",
            ),
            (
                "spec.validations[1].expression",
                "must evaluate to bool but got string",
            ),
            (
                "spec.validations[2].messageExpression",
                "must evaluate to string but got int",
            ),
            ("spec.validations[3].expression", "undefined field 'nope'"),
            (
                "spec.validations[4].expression",
                "undefined field 'missing'",
            ),
            ("spec.validations[5].reason", "Unsupported value"),
            (
                "spec.validations[5].message",
                "must not contain line breaks",
            ),
        ] {
            assert!(
                causes
                    .iter()
                    .any(|c| c.field == field && c.message.contains(says)),
                "{field}: {says} not in {text}"
            );
        }
        // An update keeps what it does not change.
        let edited = {
            let mut e = bad.clone();
            e["metadata"]["labels"] = json!({"x": "y"});
            e
        };
        let kept: Vec<String> = fields(validate_policy(&edited, Some(&bad), false));
        assert_eq!(
            kept,
            vec!["spec.validations[5].message", "spec.validations[5].reason"]
        );
        let empty = json!({"metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]}}});
        assert_eq!(
            fields(validate_policy(&empty, None, false)),
            vec!["spec.validations", "spec.auditAnnotations"]
        );
    }

    #[test]
    fn bindings_are_refused_as_kube_refuses_them() {
        let ok = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Audit"],
            "paramRef": {"name": "x", "parameterNotFoundAction": "Deny"}}});
        assert!(validate_binding(&ok, false).is_empty());
        let bad = json!({"spec": {"validationActions": ["Deny", "Warn", "Deny", "Log"],
            "paramRef": {"name": "x", "selector": {}}}});
        let found = fields(validate_binding(&bad, false));
        for f in [
            "spec.policyName",
            "spec.paramRef.name",
            "spec.paramRef.selector",
            "spec.paramRef.parameterNotFoundAction",
            "spec.validationActions[2]",
            "spec.validationActions[3]",
            "spec.validationActions",
        ] {
            assert!(found.iter().any(|x| x == f), "{f} not in {found:?}");
        }
        assert_eq!(
            fields(validate_binding(
                &json!({"spec": {"policyName": "p"}}),
                true
            )),
            Vec::<String>::new()
        );
    }
}
