//! SelfSubjectRulesReview (`kubectl auth can-i --list`): every rule the
//! requester holds in a namespace.

use super::{answer, Api};
use crate::security::authz;
use kubeshard_core::authn::UserInfo;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};

pub fn review(api: &Api, user: &UserInfo, obj: Value) -> Result<Value, ApiError> {
    let ns = obj
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let (rules, errors) = authz::rules_for(&api.security, user, &ns);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in rules {
        if r.non_resource_urls.is_empty() {
            let mut rule =
                json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                rule["resourceNames"] = json!(r.resource_names);
            }
            resource_rules.push(rule);
        } else {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    Ok(answer(obj, status))
}
