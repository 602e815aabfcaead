//! Defaults of the admission-configuration kinds and of dynamic resource
//! claims: what kube fills in so a webhook or policy behaves the same
//! whether or not its author spelled these out.

use super::util::{child, each, set};
use serde_json::{json, Value};

/// The match settings webhooks and policies share: equivalent versions
/// match, and empty selectors match everything.
fn match_settings(m: &mut Value) {
    set(m, "matchPolicy", "Equivalent");
    set(m, "namespaceSelector", json!({}));
    set(m, "objectSelector", json!({}));
}

/// Rules match both scopes unless they say which.
fn rules(m: &mut Value, key: &str) {
    for rule in each(m, key) {
        set(rule, "scope", "*");
    }
}

/// Validating and mutating webhook configurations (`mutating` adds the
/// reinvocation policy).
pub fn webhook_configuration(obj: &mut Value, mutating: bool) {
    for hook in each(obj, "webhooks") {
        set(hook, "failurePolicy", "Fail");
        set(hook, "timeoutSeconds", 10);
        match_settings(hook);
        rules(hook, "rules");
        if mutating {
            set(hook, "reinvocationPolicy", "Never");
        }
        if let Some(service) = hook.pointer_mut("/clientConfig/service") {
            set(service, "port", 443);
        }
    }
}

pub fn admission_policy(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "failurePolicy", "Fail");
    if let Some(m) = child(spec, "matchConstraints") {
        match_settings(m);
        rules(m, "resourceRules");
        rules(m, "excludeResourceRules");
    }
}

pub fn admission_policy_binding(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec") else {
        return;
    };
    if let Some(m) = spec.get_mut("matchResources").filter(|m| m.is_object()) {
        match_settings(m);
        rules(m, "resourceRules");
        rules(m, "excludeResourceRules");
    }
}

/// A claim's device requests (also inside a claim template): one device,
/// counted exactly, unless they ask otherwise.
pub fn resource_claim_spec(spec: Option<&mut Value>) {
    let Some(devices) = spec.and_then(|s| s.get_mut("devices")) else {
        return;
    };
    for request in each(devices, "requests") {
        if let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) {
            device_count(exactly);
        }
        for sub in each(request, "firstAvailable") {
            device_count(sub);
        }
    }
}

fn device_count(request: &mut Value) {
    set(request, "allocationMode", "ExactCount");
    if request.get("allocationMode").and_then(Value::as_str) == Some("ExactCount") {
        set(request, "count", 1);
    }
    for toleration in each(request, "tolerations") {
        set(toleration, "operator", "Equal");
    }
}
