//! The workload controllers' contract with their pods: a selector that
//! picks the pods the template makes (kube refuses a Deployment whose
//! selector misses its own template's labels, which would otherwise make
//! pods forever), required and non-empty for the apps kinds, and fixed
//! once set.

use crate::selector::LabelSelector;
use crate::status::{field_invalid_raw, field_required, StatusCause};
use serde_json::Value;
use std::collections::BTreeMap;

/// How a kind's selector is written and what kube calls an empty one.
enum SelectorRule {
    /// apps/v1: a `metav1.LabelSelector`, required and non-empty
    /// (`empty` names the kind in kube's message).
    Required { empty: &'static str },
    /// A ReplicationController's label map (defaulted from the template).
    LabelMap,
    /// A Job's: checked only when the Job chose it (`manualSelector`).
    Manual,
}

fn selector_rule(group: &str, kind: &str) -> Option<SelectorRule> {
    Some(match (group, kind) {
        ("apps", "Deployment" | "ReplicaSet") => SelectorRule::Required {
            empty: "deployment",
        },
        ("apps", "StatefulSet") => SelectorRule::Required {
            empty: "statefulset",
        },
        ("apps", "DaemonSet") => SelectorRule::Required { empty: "daemonset" },
        ("", "ReplicationController") => SelectorRule::LabelMap,
        ("batch", "Job") => SelectorRule::Manual,
        _ => return None,
    })
}

fn template_labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Go's `%#v` of a label map, as kube's message shows the labels.
fn go_map(labels: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    format!("map[string]string{{{}}}", pairs.join(", "))
}

fn mismatch(labels: &BTreeMap<String, String>) -> StatusCause {
    field_invalid_raw(
        "spec.template.metadata.labels",
        &go_map(labels),
        "`selector` does not match template `labels`",
    )
}

/// The causes a workload object is refused with.
pub(super) fn validate(group: &str, kind: &str, obj: &Value) -> Vec<StatusCause> {
    let Some(rule) = selector_rule(group, kind) else {
        return vec![];
    };
    let selector = obj.pointer("/spec/selector").filter(|s| !s.is_null());
    let labels = template_labels(obj);
    let parsed = match (rule, selector) {
        (SelectorRule::Manual, _)
            if obj.pointer("/spec/manualSelector") != Some(&Value::Bool(true)) =>
        {
            return vec![]
        }
        (_, None) => return vec![field_required("spec.selector", "")],
        (SelectorRule::LabelMap, Some(Value::Object(m))) => {
            let wanted = serde_json::json!({ "matchLabels": m });
            if m.is_empty() {
                return vec![field_required("spec.selector", "")];
            }
            LabelSelector::from_metav1(&wanted)
        }
        (SelectorRule::Required { empty }, Some(s)) => {
            let has_terms = ["matchLabels", "matchExpressions"].iter().any(|k| {
                s.get(*k).is_some_and(|v| {
                    v.as_object().is_some_and(|m| !m.is_empty())
                        || v.as_array().is_some_and(|a| !a.is_empty())
                })
            });
            if !has_terms {
                return vec![field_invalid_raw(
                    "spec.selector",
                    &s.to_string(),
                    &format!("empty selector is invalid for {empty}"),
                )];
            }
            LabelSelector::from_metav1(s)
        }
        (_, Some(s)) => LabelSelector::from_metav1(s),
    };
    match parsed {
        Err(e) => vec![field_invalid_raw(
            "spec.selector",
            &selector.map(Value::to_string).unwrap_or_default(),
            &e,
        )],
        Ok(sel) if !sel.matches(&labels) => vec![mismatch(&labels)],
        Ok(_) => vec![],
    }
}

/// The causes a workload update is refused with: an apps kind's selector
/// never changes once set.
pub(super) fn validate_update(
    group: &str,
    kind: &str,
    new: &Value,
    old: &Value,
) -> Vec<StatusCause> {
    if !matches!(
        selector_rule(group, kind),
        Some(SelectorRule::Required { .. })
    ) {
        return vec![];
    }
    let (before, after) = (old.pointer("/spec/selector"), new.pointer("/spec/selector"));
    if before.is_none() || before == after {
        return vec![];
    }
    vec![field_invalid_raw(
        "spec.selector",
        &after.map(Value::to_string).unwrap_or_else(|| "null".into()),
        "field is immutable",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(selector: Value, labels: Value) -> Value {
        json!({"spec": {"selector": selector, "template": {"metadata": {"labels": labels}}}})
    }

    #[test]
    fn the_selector_must_pick_the_templates_pods() {
        let ok = deployment(
            json!({"matchLabels": {"app": "web"}}),
            json!({"app": "web", "tier": "a"}),
        );
        assert!(validate("apps", "Deployment", &ok).is_empty());
        let expr = deployment(
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
            json!({"app": "web"}),
        );
        assert!(validate("apps", "StatefulSet", &expr).is_empty());
        let miss = deployment(
            json!({"matchLabels": {"app": "web"}}),
            json!({"app": "api"}),
        );
        let c = validate("apps", "Deployment", &miss);
        assert_eq!(c[0].field, "spec.template.metadata.labels");
        assert!(
            c[0].message.contains(r#"map[string]string{"app":"api"}"#),
            "{c:?}"
        );
        let empty = deployment(json!({}), json!({"app": "web"}));
        assert!(validate("apps", "DaemonSet", &empty)[0]
            .message
            .contains("empty selector is invalid for daemonset"));
        let none = json!({"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}});
        assert_eq!(
            validate("apps", "ReplicaSet", &none)[0].field,
            "spec.selector"
        );
        // A ReplicationController's map; a Job's only when it chose one.
        let rc = json!({"spec": {"selector": {"app": "x"}, "template": {"metadata": {"labels": {"app": "y"}}}}});
        assert_eq!(validate("", "ReplicationController", &rc).len(), 1);
        let job = json!({"spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"c": "d"}}}}});
        assert!(validate("batch", "Job", &job).is_empty());
        let mut manual = job.clone();
        manual["spec"]["manualSelector"] = json!(true);
        assert_eq!(validate("batch", "Job", &manual).len(), 1);
        assert!(validate("", "ConfigMap", &job).is_empty());
    }

    #[test]
    fn an_apps_selector_is_immutable() {
        let old = deployment(
            json!({"matchLabels": {"app": "web"}}),
            json!({"app": "web"}),
        );
        let new = deployment(
            json!({"matchLabels": {"app": "api"}}),
            json!({"app": "api"}),
        );
        assert_eq!(
            validate_update("apps", "Deployment", &new, &old)[0].field,
            "spec.selector"
        );
        assert!(validate_update("apps", "Deployment", &old, &old).is_empty());
        assert!(validate_update("", "ReplicationController", &new, &old).is_empty());
    }
}
