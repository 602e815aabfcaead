//! Validation of Mutating/ValidatingWebhookConfigurations as kube's
//! admissionregistration strategy does it: webhook names, rules,
//! client configs, side effects, review versions, timeouts, selectors and
//! match conditions. On update a few checks ratchet on the old object
//! (side effects, duplicate names, unrecognised review versions), so a
//! configuration stored under older rules can still be edited.

use crate::crd::expression::Expression;
use crate::selector::labels::LabelSelector;
use crate::status::{
    field_duplicate, field_invalid, field_invalid_raw, field_not_supported, field_required,
    StatusCause,
};
use crate::validation::{is_dns1035_label, is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;
use std::collections::HashSet;

/// The variables match conditions may read (kube also has
/// `namespaceObject` and `authorizer`, not offered here yet).
const CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request", "authorizer"];

/// What an update may keep from the old object.
struct Relaxed {
    side_effects: bool,
    duplicate_names: bool,
    unknown_review_versions: bool,
}

fn hooks(obj: &Value) -> &[Value] {
    obj.get("webhooks")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// All problems of a configuration; `old` on update.
pub fn validate(obj: &Value, old: Option<&Value>, mutating: bool) -> Vec<StatusCause> {
    let relaxed = Relaxed {
        side_effects: old.is_some_and(|o| {
            hooks(o)
                .iter()
                .any(|h| !matches!(text(h, "sideEffects"), Some("None" | "NoneOnDryRun")))
        }),
        duplicate_names: old.is_some_and(|o| {
            let mut seen = HashSet::new();
            hooks(o)
                .iter()
                .any(|h| !seen.insert(text(h, "name").unwrap_or("")))
        }),
        unknown_review_versions: old.is_some_and(|o| {
            hooks(o).iter().any(|h| {
                let versions = strings(h, "admissionReviewVersions");
                !versions.is_empty() && !versions.iter().any(|v| *v == "v1" || *v == "v1beta1")
            })
        }),
    };
    let mut out = Vec::new();
    let mut names = HashSet::new();
    for (i, h) in hooks(obj).iter().enumerate() {
        let path = format!("webhooks[{i}]");
        webhook(h, &path, mutating, &relaxed, &mut out);
        review_versions(h, &path, &relaxed, &mut out);
        let name = text(h, "name").unwrap_or("");
        if !relaxed.duplicate_names && !name.is_empty() && !names.insert(name) {
            out.push(field_duplicate(&format!("{path}.name"), name));
        }
    }
    out
}

fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn json_list(items: &[&str]) -> String {
    serde_json::to_string(items).expect("strings serialize")
}

fn webhook(h: &Value, path: &str, mutating: bool, relaxed: &Relaxed, out: &mut Vec<StatusCause>) {
    let name = text(h, "name").unwrap_or("");
    let name_path = format!("{path}.name");
    if name.is_empty() {
        out.push(field_required(&name_path, ""));
    } else {
        let errs = is_dns1123_subdomain(name);
        if !errs.is_empty() {
            out.push(field_invalid(&name_path, name, &errs.join(",")));
        } else if name.split('.').count() < 3 {
            out.push(field_invalid(
                &name_path,
                name,
                "should be a domain with at least three segments separated by dots",
            ));
        }
    }
    for (j, rule) in h
        .get("rules")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        rule_checks(rule, &format!("{path}.rules[{j}]"), out);
    }
    enumerated(h, path, "failurePolicy", &["Fail", "Ignore"], out);
    enumerated(h, path, "matchPolicy", &["Equivalent", "Exact"], out);
    let (allowed, listed): (&[&str], &str) = if relaxed.side_effects {
        (
            &["None", "NoneOnDryRun", "Some", "Unknown"],
            "None, NoneOnDryRun, Some, Unknown",
        )
    } else {
        (&["None", "NoneOnDryRun"], "None, NoneOnDryRun")
    };
    match text(h, "sideEffects") {
        None => out.push(field_required(
            &format!("{path}.sideEffects"),
            &format!("must specify one of {listed}"),
        )),
        Some(s) if !allowed.contains(&s) => out.push(field_not_supported(
            &format!("{path}.sideEffects"),
            s,
            allowed,
        )),
        Some(_) => {}
    }
    if let Some(t) = h.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&t) {
            out.push(field_invalid_raw(
                &format!("{path}.timeoutSeconds"),
                &t.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = h.get(key).filter(|s| !s.is_null()) {
            if let Err(e) = LabelSelector::from_metav1(sel) {
                out.push(field_invalid_raw(
                    &format!("{path}.{key}"),
                    &sel.to_string(),
                    &e,
                ));
            }
        }
    }
    if mutating {
        enumerated(h, path, "reinvocationPolicy", &["IfNeeded", "Never"], out);
    }
    client_config(h.get("clientConfig"), &format!("{path}.clientConfig"), out);
    match_conditions(h, path, out);
}

fn enumerated(h: &Value, path: &str, key: &str, allowed: &[&str], out: &mut Vec<StatusCause>) {
    if let Some(v) = text(h, key) {
        if !allowed.contains(&v) {
            out.push(field_not_supported(&format!("{path}.{key}"), v, allowed));
        }
    }
}

pub(super) fn rule_checks(rule: &Value, path: &str, out: &mut Vec<StatusCause>) {
    let operations = strings(rule, "operations");
    if operations.is_empty() {
        out.push(field_required(&format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        out.push(field_invalid_raw(
            &format!("{path}.operations"),
            &json_list(&operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (k, op) in operations.iter().enumerate() {
        const OPS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
        if !OPS.contains(op) {
            out.push(field_not_supported(
                &format!("{path}.operations[{k}]"),
                op,
                OPS,
            ));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = strings(rule, key);
        if items.is_empty() {
            out.push(field_required(&format!("{path}.{key}"), ""));
        }
        if items.len() > 1 && items.contains(&"*") {
            out.push(field_invalid_raw(
                &format!("{path}.{key}"),
                &json_list(&items),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if key == "apiVersions" {
            for (k, v) in items.iter().enumerate() {
                if v.is_empty() {
                    out.push(field_required(&format!("{path}.{key}[{k}]"), ""));
                }
            }
        }
    }
    resources(
        &strings(rule, "resources"),
        &format!("{path}.resources"),
        out,
    );
    if let Some(scope) = text(rule, "scope") {
        const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
        if !SCOPES.contains(&scope) {
            out.push(field_not_supported(&format!("{path}.scope"), scope, SCOPES));
        }
    }
}

/// kube's resource list rules (order matters, as in kube: only earlier
/// items make a later one redundant).
fn resources(items: &[&str], path: &str, out: &mut Vec<StatusCause>) {
    if items.is_empty() {
        out.push(field_required(path, ""));
    }
    let mut whole: HashSet<&str> = HashSet::new();
    let mut subs: HashSet<&str> = HashSet::new();
    let mut has_star = false;
    let mut last_plain_is_star = false;
    for (k, item) in items.iter().enumerate() {
        if item.is_empty() {
            out.push(field_required(&format!("{path}[{k}]"), ""));
            continue;
        }
        match item.split_once('/') {
            Some((res, sub)) => {
                if whole.contains(res) {
                    out.push(field_invalid(
                        &format!("{path}[{k}]"),
                        item,
                        &format!("if '{res}/*' is present, must not specify {item}"),
                    ));
                }
                if subs.contains(sub) {
                    out.push(field_invalid(
                        &format!("{path}[{k}]"),
                        item,
                        &format!("if '*/{sub}' is present, must not specify {item}"),
                    ));
                }
                if sub == "*" {
                    whole.insert(res);
                }
                if res == "*" {
                    subs.insert(sub);
                }
            }
            None => {
                has_star |= *item == "*";
                last_plain_is_star = *item == "*";
            }
        }
    }
    if items.len() > 1 && items.contains(&"*/*") {
        out.push(field_invalid_raw(
            path,
            &json_list(items),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if has_star && !last_plain_is_star {
        out.push(field_invalid_raw(
            path,
            &json_list(items),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

fn client_config(cfg: Option<&Value>, path: &str, out: &mut Vec<StatusCause>) {
    let cfg = cfg.unwrap_or(&Value::Null);
    let url = text(cfg, "url");
    let service = cfg.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(u), None) => webhook_url(u, &format!("{path}.url"), out),
        (None, Some(s)) => webhook_service(s, &format!("{path}.service"), out),
        _ => out.push(field_required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

fn webhook_url(url: &str, path: &str, out: &mut Vec<StatusCause>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(url::ParseError::EmptyHost) => {
            out.push(field_invalid(
                path,
                "",
                &format!("host must be specified{FORM}"),
            ));
            return;
        }
        Err(e) => {
            out.push(field_required(
                path,
                &format!("url must be a valid URL: {e}{FORM}"),
            ));
            return;
        }
    };
    if parsed.scheme() != "https" {
        out.push(field_invalid(
            path,
            parsed.scheme(),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if parsed.host_str().unwrap_or("").is_empty() {
        out.push(field_invalid(
            path,
            "",
            &format!("host must be specified{FORM}"),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let user = match parsed.password() {
            Some(p) => format!("{}:{p}", parsed.username()),
            None => parsed.username().to_string(),
        };
        out.push(field_invalid(
            path,
            &user,
            "user information is not permitted in the URL",
        ));
    }
    if let Some(fragment) = parsed.fragment() {
        out.push(field_invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if let Some(q) = parsed.query() {
        out.push(field_invalid(
            path,
            q,
            "query parameters are not permitted in the URL",
        ));
    }
}

fn webhook_service(s: &Value, path: &str, out: &mut Vec<StatusCause>) {
    for key in ["name", "namespace"] {
        if text(s, key).unwrap_or("").is_empty() {
            out.push(field_required(&format!("{path}.{key}"), ""));
        }
    }
    if let Some(port) = s.get("port").and_then(Value::as_i64) {
        if !(1..=65535).contains(&port) {
            out.push(field_invalid_raw(
                &format!("{path}.port"),
                &port.to_string(),
                "port is not valid: must be between 1 and 65535, inclusive",
            ));
        }
    }
    let Some(p) = text(s, "path") else {
        return;
    };
    if p.is_empty() || p == "/" {
        return;
    }
    let field = format!("{path}.path");
    if p == "//" {
        out.push(field_invalid(&field, p, "segment[0] may not be empty"));
        return;
    }
    let rest = match p.strip_prefix('/') {
        Some(r) => r,
        None => {
            out.push(field_invalid(&field, p, "must start with a '/'"));
            &p[1..]
        }
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (n, segment) in rest.split('/').enumerate() {
        if segment.is_empty() {
            out.push(field_invalid(
                &field,
                p,
                &format!("segment[{n}] may not be empty"),
            ));
            continue;
        }
        for e in is_dns1123_subdomain(segment) {
            out.push(field_invalid(&field, p, &format!("segment[{n}]: {e}")));
        }
    }
}

fn match_conditions(h: &Value, path: &str, out: &mut Vec<StatusCause>) {
    let conditions = h
        .get("matchConditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let field = format!("{path}.matchConditions");
    if conditions.len() > 64 {
        out.push(crate::status::StatusCause {
            reason: "FieldValueTooMany".into(),
            message: format!("Too many: {}: must have at most 64 items", conditions.len()),
            field: field.clone(),
        });
    }
    let mut names = HashSet::new();
    for (k, c) in conditions.iter().enumerate() {
        let at = format!("{field}[{k}]");
        let expression = text(c, "expression").unwrap_or("").trim();
        if expression.is_empty() {
            out.push(field_required(&format!("{at}.expression"), ""));
        } else if let Err(e) = Expression::compile(expression, CONDITION_VARIABLES) {
            out.push(field_invalid(&format!("{at}.expression"), expression, &e));
        }
        let name = text(c, "name").unwrap_or("");
        if name.is_empty() {
            out.push(field_required(&format!("{at}.name"), ""));
        } else {
            for e in is_qualified_name(name) {
                out.push(field_invalid(&format!("{at}.name"), name, &e));
            }
            if !names.insert(name) {
                out.push(field_duplicate(&format!("{at}.name"), name));
            }
        }
    }
}

fn review_versions(h: &Value, path: &str, relaxed: &Relaxed, out: &mut Vec<StatusCause>) {
    let field = format!("{path}.admissionReviewVersions");
    let versions = strings(h, "admissionReviewVersions");
    if versions.is_empty() {
        out.push(field_required(&field, "must specify one of v1, v1beta1"));
        return;
    }
    let mut seen = HashSet::new();
    for (k, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            out.push(field_invalid(
                &format!("{field}[{k}]"),
                v,
                "duplicate version",
            ));
            continue;
        }
        for e in is_dns1035_label(v) {
            out.push(field_invalid(&format!("{field}[{k}]"), v, &e));
        }
    }
    if !relaxed.unknown_review_versions && !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
        out.push(field_invalid_raw(
            &field,
            &json_list(&versions),
            "must include at least one of v1, v1beta1",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({"webhooks": [{
            "name": "deny.example.com",
            "clientConfig": {"url": "https://127.0.0.1:8443/deny"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "pods/status"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }]})
    }

    fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
        validate(obj, old, true)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_well_formed_configuration_passes() {
        assert_eq!(messages(&good(), None), Vec::<String>::new());
    }

    #[test]
    fn each_rule_is_worded_as_kube_words_it() {
        let mut bad = good();
        let h = &mut bad["webhooks"][0];
        h["name"] = json!("a.b");
        h["sideEffects"] = json!("Some");
        h["timeoutSeconds"] = json!(31);
        h["failurePolicy"] = json!("Maybe");
        h["reinvocationPolicy"] = json!("Always");
        h["admissionReviewVersions"] = json!(["v2", "v2"]);
        h["clientConfig"] = json!({"url": "http://u@h:1/p?x=1#f"});
        h["rules"][0]["operations"] = json!(["*", "CREATE"]);
        h["rules"][0]["resources"] = json!(["*", "pods"]);
        h["matchConditions"] =
            json!([{"name": "c", "expression": "self.x"}, {"name": "c", "expression": " "}]);
        let m = messages(&bad, None);
        let has = |s: &str| assert!(m.iter().any(|x| x.contains(s)), "{s} not in {m:#?}");
        has("webhooks[0].name: Invalid value: \"a.b\": should be a domain with at least three segments separated by dots");
        has("webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"");
        has("webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds");
        has("webhooks[0].failurePolicy: Unsupported value: \"Maybe\"");
        has("webhooks[0].reinvocationPolicy: Unsupported value: \"Always\"");
        has("webhooks[0].admissionReviewVersions[1]: Invalid value: \"v2\": duplicate version");
        has("webhooks[0].admissionReviewVersions: Invalid value: [\"v2\",\"v2\"]: must include at least one of v1, v1beta1");
        has("webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]");
        has("user information is not permitted in the URL");
        has("query parameters are not permitted in the URL");
        has("webhooks[0].rules[0].operations: Invalid value: [\"*\",\"CREATE\"]: if '*' is present, must not specify other operations");
        has("webhooks[0].rules[0].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources without subresources");
        has("webhooks[0].matchConditions[0].expression: Invalid value: \"self.x\": compilation failed");
        has("webhooks[0].matchConditions[1].expression: Required value");
        has("webhooks[0].matchConditions[1].name: Duplicate value: \"c\"");
    }

    #[test]
    fn resource_rules_depend_on_order_as_in_kube() {
        let mut out = Vec::new();
        resources(&["pods", "*"], "r", &mut out);
        resources(&["pods/status", "pods/*"], "r", &mut out);
        assert!(out.is_empty(), "{out:?}");
        resources(&["pods/*", "pods/status"], "r", &mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0]
            .message
            .contains("if 'pods/*' is present, must not specify pods/status"));
    }

    #[test]
    fn services_and_updates() {
        let mut svc = good();
        svc["webhooks"][0]["clientConfig"] =
            json!({"service": {"name": "", "namespace": "ns", "port": 0, "path": "/Validate"}});
        let m = messages(&svc, None);
        assert!(
            m.iter()
                .any(|x| x == "webhooks[0].clientConfig.service.name: Required value"),
            "{m:?}"
        );
        assert!(
            m.iter()
                .any(|x| x.contains("service.port: Invalid value: 0: port is not valid")),
            "{m:?}"
        );
        assert!(
            m.iter()
                .any(|x| x.contains("segment[0]: a lowercase RFC 1123 subdomain")),
            "{m:?}"
        );
        // Both or neither.
        let mut both = good();
        both["webhooks"][0]["clientConfig"]["service"] = json!({"name": "a", "namespace": "b"});
        assert!(messages(&both, None)
            .iter()
            .any(|x| x.contains("exactly one of url or service is required")));
        // Duplicates are refused, unless the old object had them already.
        let mut dup = good();
        let copy = dup["webhooks"][0].clone();
        dup["webhooks"].as_array_mut().unwrap().push(copy);
        assert!(messages(&dup, None)
            .iter()
            .any(|x| x == "webhooks[1].name: Duplicate value: \"deny.example.com\""));
        assert!(messages(&dup, Some(&dup)).is_empty());
        // Side effects an old webhook had stay allowed.
        let mut some = good();
        some["webhooks"][0]["sideEffects"] = json!("Some");
        assert!(!messages(&some, None).is_empty());
        assert!(messages(&some, Some(&some)).is_empty());
    }
}
