//! Which writes an admission webhook or policy reaches, as kube decides
//! it: the namespace and object selectors, then the rules (operation,
//! group, version, resource and subresource, scope, names) — with
//! `matchPolicy: Equivalent`, also a rule that names another served
//! version of the same resource — minus the excluded ones; and last the
//! CEL match conditions.

use super::namespace_labels::{labels, NamespaceLabels};
use super::Attributes;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::crd::expression::Expression;
use kubeshard_core::crd::expression::{Variables, MATCH_CONDITIONS_BUDGET};
use kubeshard_core::meta;
use kubeshard_core::selector::labels::LabelSelector as Selector;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

/// One entry of a webhook's `rules` (or a policy's `resourceRules`).
pub struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    /// (resource, subresource) patterns: `*`, `pods`, `pods/*`, `*/status`.
    resources: Vec<(String, String)>,
    /// Object names (policies only); empty: any.
    names: Vec<String>,
    scope: String,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    meta::array_at(v, key)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn any(items: &[String], wanted: &str) -> bool {
    items.iter().any(|i| i == "*" || i == wanted)
}

impl Rule {
    pub fn parse(v: &Value) -> Rule {
        Rule {
            operations: strings(v, "/operations"),
            groups: strings(v, "/apiGroups"),
            versions: strings(v, "/apiVersions"),
            resources: strings(v, "/resources")
                .into_iter()
                .map(|r| match r.split_once('/') {
                    Some((res, sub)) => (res.to_string(), sub.to_string()),
                    None => (r, String::new()),
                })
                .collect(),
            names: strings(v, "/resourceNames"),
            scope: meta::str_at(v, "/scope").to_string(),
        }
    }

    /// Whether the rule covers `a` addressed as `resource` (the request's
    /// own resource, or an equivalent version of it).
    fn matches(&self, a: &Attributes<'_>, resource: &ResourceInfo) -> bool {
        let is_namespace = resource.group.is_empty() && resource.plural == "namespaces";
        let scope = match self.scope.as_str() {
            "" | "*" => true,
            "Namespaced" => !is_namespace && !a.namespace.is_empty(),
            "Cluster" => is_namespace || a.namespace.is_empty(),
            _ => false,
        };
        scope
            && any(&self.operations, a.operation.as_str())
            && any(&self.groups, &resource.group)
            && any(&self.versions, &resource.version)
            && self.resources.iter().any(|(res, sub)| {
                (res == "*" || *res == resource.plural) && (sub == "*" || sub == a.subresource)
            })
            && (self.names.is_empty() || self.names.iter().any(|n| n == a.name))
    }
}

/// A webhook's or policy's match settings.
pub struct Matcher {
    pub rules: Vec<Rule>,
    /// Rules that take writes back out (policies' `excludeResourceRules`).
    pub exclude: Vec<Rule>,
    /// `matchPolicy: Equivalent`.
    pub equivalent: bool,
    pub namespace_selector: Result<Selector, String>,
    pub object_selector: Result<Selector, String>,
    /// No rules match every resource (policies' MatchResources); a
    /// webhook without rules matches nothing.
    pub all_without_rules: bool,
}

impl Matcher {
    /// An admission policy's or binding's `MatchResources`: its
    /// `resourceRules` (none: every resource) and `excludeResourceRules`.
    pub fn resources(v: &Value) -> Matcher {
        Matcher {
            all_without_rules: true,
            ..Matcher::parse(v, "/resourceRules", "/excludeResourceRules")
        }
    }

    /// From the object holding the settings, its rules under `rules` and
    /// excluded ones under `exclude`.
    pub fn parse(v: &Value, rules: &str, exclude: &str) -> Matcher {
        let selector = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(Selector::everything()),
            Some(sel) => Selector::from_metav1(sel),
        };
        let list = |k: &str| meta::array_at(v, k).iter().map(Rule::parse).collect();
        Matcher {
            rules: list(rules),
            exclude: list(exclude),
            equivalent: meta::str_at(v, "/matchPolicy") != "Exact",
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
            all_without_rules: false,
        }
    }
}

/// A list of named CEL conditions (`matchConditions`), compiled.
pub type Conditions = Result<Vec<(String, Expression)>, String>;

/// Whether any of the compiled conditions reads the variable `name`.
pub fn conditions_read(conditions: &Conditions, name: &str) -> bool {
    conditions
        .as_ref()
        .is_ok_and(|c| c.iter().any(|(_, e)| e.reads(name)))
}

/// Compiles `matchConditions` for expressions that may read `variables`.
pub fn compile_conditions(list: &[Value], variables: &[&str]) -> Conditions {
    list.iter()
        .map(|c| {
            let name = meta::str_at(c, "/name").to_string();
            Expression::compile(meta::str_at(c, "/expression"), variables).map(|e| (name, e))
        })
        .collect()
}

/// How a matched webhook sees the write: at the request's own resource,
/// or at the equivalent version its rule named.
pub struct Invocation {
    /// The equivalent version the webhook's rule named; None: the
    /// request's own.
    pub equivalent: Option<Arc<ResourceInfo>>,
}

impl Invocation {
    pub fn resource<'b>(&'b self, a: &'b Attributes<'_>) -> &'b ResourceInfo {
        self.equivalent.as_deref().unwrap_or(a.resource)
    }
}

/// Whether `hook`'s selectors and rules reach `a` (whose object is
/// `object`), and at which version; an error refuses the write (kube's
/// fail-closed selector errors).
pub async fn should_call(
    m: &Matcher,
    a: &Attributes<'_>,
    object: Option<&Value>,
    namespaces: &NamespaceLabels,
) -> Result<Option<Invocation>, ApiError> {
    let ns_match = namespace_matches(m, a, object, namespaces).await;
    if matches!(ns_match, Ok(false)) {
        return Ok(None);
    }
    let obj_match = object_matches(m, a, object);
    if matches!(obj_match, Ok(false)) {
        return Ok(None);
    }
    let Some(invocation) = rule_match(m, a) else {
        return Ok(None);
    };
    ns_match?;
    obj_match?;
    Ok(Some(invocation))
}

/// Whether every match condition of `hook` holds for the write (`request`
/// is the AdmissionReview's request, the conditions' `request`). One that
/// cannot be evaluated refuses the write, or passes the webhook over
/// under `failurePolicy: Ignore`.
pub fn conditions_hold(
    conditions: &Conditions,
    ignore_failures: bool,
    a: &Attributes<'_>,
    vars: &Variables<'_>,
) -> Result<bool, ApiError> {
    let conditions = match conditions {
        Ok(c) if c.is_empty() => return Ok(true),
        Ok(c) => c,
        Err(_) if ignore_failures => return Ok(false),
        Err(e) => return Err(condition_refusal(a, e)),
    };
    let mut budget = MATCH_CONDITIONS_BUDGET;
    let mut errors = Vec::new();
    for (_, condition) in conditions {
        match condition.evaluate_bool(vars, &mut budget) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(e),
        }
    }
    match errors.as_slice() {
        [] => Ok(true),
        _ if ignore_failures => Ok(false),
        [one] => Err(condition_refusal(a, one)),
        many => Err(condition_refusal(a, &format!("[{}]", many.join(", ")))),
    }
}

/// kube answers a match condition that cannot be evaluated (under
/// `failurePolicy: Fail`) as Forbidden.
fn condition_refusal(a: &Attributes<'_>, e: &str) -> ApiError {
    ApiError::forbidden(&a.resource.group, &a.resource.plural, a.name, e)
}

async fn namespace_matches(
    m: &Matcher,
    a: &Attributes<'_>,
    object: Option<&Value>,
    namespaces: &NamespaceLabels,
) -> Result<bool, ApiError> {
    let is_namespace = a.resource.group.is_empty() && a.resource.plural == "namespaces";
    if a.namespace.is_empty() && !is_namespace {
        return Ok(true);
    }
    let selector = m
        .namespace_selector
        .as_ref()
        .map_err(|e| ApiError::internal(e))?;
    if selector.is_empty() {
        return Ok(true);
    }
    // A namespace being written is judged by its own (new) labels.
    let own = is_namespace
        && a.subresource.is_empty()
        && matches!(
            a.operation,
            crate::admission::Operation::Create | crate::admission::Operation::Update
        );
    let labels = match (own, object) {
        (true, Some(o)) => std::rc::Rc::new(labels(o)),
        _ => {
            let name = if is_namespace { a.name } else { a.namespace };
            namespaces.of(a.api, name).await?
        }
    };
    Ok(selector.matches(&*labels))
}

fn object_matches(
    m: &Matcher,
    a: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<bool, ApiError> {
    let selector = m
        .object_selector
        .as_ref()
        .map_err(|e| ApiError::internal(e))?;
    if selector.is_empty() {
        return Ok(true);
    }
    Ok([object, a.old_object]
        .into_iter()
        .flatten()
        .any(|o| selector.matches(&labels(o))))
}

/// The request's resource if a rule names it; else, under
/// `matchPolicy: Equivalent`, another served version a rule names.
fn rule_match(m: &Matcher, a: &Attributes<'_>) -> Option<Invocation> {
    if m.exclude.iter().any(|r| r.matches(a, a.resource)) {
        return None;
    }
    if m.rules.iter().any(|r| r.matches(a, a.resource))
        || (m.rules.is_empty() && m.all_without_rules)
    {
        return Some(Invocation { equivalent: None });
    }
    if !m.equivalent {
        return None;
    }
    let catalog = a.api.catalog();
    let equivalents: Vec<Arc<ResourceInfo>> = catalog
        .versions(&a.resource.group)
        .iter()
        .filter(|v| **v != a.resource.version)
        .filter_map(|v| {
            catalog
                .lookup(&a.resource.group, v, &a.resource.plural)
                .cloned()
        })
        .collect();
    m.rules.iter().find_map(|r| {
        equivalents
            .iter()
            .find(|e| r.matches(a, e))
            .map(|e| Invocation {
                equivalent: Some(e.clone()),
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_match_as_kubes() {
        let r = Rule::parse(&json!({
            "operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["*"],
            "resources": ["deployments", "*/scale"], "scope": "Namespaced"}));
        assert_eq!(r.resources[1], ("*".to_string(), "scale".to_string()));
        let all = Rule::parse(&json!({
            "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}));
        assert_eq!(all.resources[0], ("*".to_string(), "*".to_string()));
        assert!(any(&all.operations, "DELETE"));
        assert!(!any(&r.operations, "DELETE"));
    }
}
