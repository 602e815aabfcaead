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

/// StatefulSet spec fields an update may change (kube's list).
const STATEFUL_SET_MUTABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

fn immutable(path: &str, after: Option<&Value>) -> StatusCause {
    field_invalid_raw(
        path,
        &after.map(Value::to_string).unwrap_or_else(|| "null".into()),
        "field is immutable",
    )
}

/// The causes a workload update is refused with: an apps kind's or a
/// Job's selector never changes once set; a Job's pod template only while
/// it is suspended; a StatefulSet's spec only in its mutable fields.
pub(super) fn validate_update(
    group: &str,
    kind: &str,
    new: &Value,
    old: &Value,
) -> Vec<StatusCause> {
    let fixed_selector = matches!(
        selector_rule(group, kind),
        Some(SelectorRule::Required { .. } | SelectorRule::Manual)
    );
    // Every update of every kind passes here: kinds without these rules
    // leave at once.
    if !fixed_selector {
        return Vec::new();
    }
    let mut causes = Vec::new();
    let (before, after) = (old.pointer("/spec/selector"), new.pointer("/spec/selector"));
    if before.is_some() && before != after {
        causes.push(immutable("spec.selector", after));
    }
    match (group, kind) {
        ("batch", "Job") => {
            let suspended = old.pointer("/spec/suspend") == Some(&Value::Bool(true));
            let template = new.pointer("/spec/template");
            if !suspended && old.pointer("/spec/template") != template {
                causes.push(immutable("spec.template", template));
            }
        }
        ("apps", "StatefulSet") => {
            let frozen = |o: &Value| {
                let mut spec = o.get("spec").cloned().unwrap_or_default();
                if let Some(m) = spec.as_object_mut() {
                    m.retain(|k, _| !STATEFUL_SET_MUTABLE.contains(&k.as_str()));
                }
                spec
            };
            if frozen(old) != frozen(new) {
                let allowed: Vec<String> = STATEFUL_SET_MUTABLE
                    .iter()
                    .map(|f| format!("'{f}'"))
                    .collect();
                let (last, rest) = allowed.split_last().expect("a non-empty list");
                causes.push(crate::status::field_forbidden(
                    "spec",
                    &format!(
                        "updates to statefulset spec for fields other than {} and {last} are forbidden",
                        rest.join(", ")
                    ),
                ));
            }
        }
        _ => {}
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(selector: Value, labels: Value) -> Value {
        json!({"spec": {"selector": selector, "template": {"metadata": {"labels": labels}}}})
    }

    #[test]
    fn jobs_and_stateful_sets_keep_their_fixed_fields() {
        let job = |image: &str, suspend: bool| {
            json!({"spec": {"suspend": suspend, "selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
        };
        let c = validate_update("batch", "Job", &job("v2", false), &job("v1", false));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].field, "spec.template");
        assert!(validate_update("batch", "Job", &job("v2", true), &job("v1", true)).is_empty());
        let mut moved = job("v1", false);
        moved["spec"]["selector"] = json!({"matchLabels": {"a": "c"}});
        assert_eq!(
            validate_update("batch", "Job", &moved, &job("v1", false))[0].field,
            "spec.selector"
        );

        let sts = |replicas: u32, service: &str| {
            json!({"spec": {"replicas": replicas, "serviceName": service,
            "selector": {"matchLabels": {"a": "b"}}}})
        };
        assert!(validate_update("apps", "StatefulSet", &sts(5, "web"), &sts(3, "web")).is_empty());
        let c = validate_update("apps", "StatefulSet", &sts(3, "other"), &sts(3, "web"));
        assert_eq!(c[0].field, "spec");
        assert!(
            c[0].message.starts_with(
                "Forbidden: updates to statefulset spec for fields other than 'replicas'"
            ),
            "{}",
            c[0].message
        );
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
