//! The pod spec rules users hit first, wherever a pod spec is written (a
//! Pod, or the template of a workload): at least one container, each named
//! (a DNS label, unique in the pod) with an image, ports in range with a
//! known protocol, a known restart policy — with kube's field paths, so
//! `kubectl apply` points at the line.

use crate::status::{
    field_duplicate, field_invalid, field_not_supported, field_required, StatusCause,
};
use crate::validation::is_dns1123_label;
use serde_json::Value;

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];

/// Where the pod spec sits in each kind that has one.
pub fn spec_path(group: &str, kind: &str) -> Option<&'static str> {
    Some(match (group, kind) {
        ("", "Pod") => "spec",
        ("", "PodTemplate") => "template.spec",
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => "spec.template.spec",
        ("batch", "CronJob") => "spec.jobTemplate.spec.template.spec",
        _ => return None,
    })
}

/// The causes for the pod spec of `obj` (a kind from [`spec_path`]).
pub fn validate(group: &str, kind: &str, obj: &Value) -> Vec<StatusCause> {
    let Some(path) = spec_path(group, kind) else {
        return Vec::new();
    };
    let pointer = format!("/{}", path.replace('.', "/"));
    // An RC without a template is refused elsewhere (its selector rule).
    if kind == "ReplicationController" && obj.pointer("/spec/template").is_none() {
        return Vec::new();
    }
    let spec = obj.pointer(&pointer).unwrap_or(&Value::Null);
    validate_spec(spec, path)
}

fn validate_spec(spec: &Value, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let list = |key: &str| -> Vec<&Value> {
        spec.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    };
    let (containers, init) = (list("containers"), list("initContainers"));
    if containers.is_empty() {
        causes.push(field_required(&format!("{path}.containers"), ""));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (key, items) in [("initContainers", &init), ("containers", &containers)] {
        for (i, c) in items.iter().enumerate() {
            let at = format!("{path}.{key}[{i}]");
            validate_container(c, &at, &mut seen, &mut causes);
        }
    }
    if let Some(policy) = spec.get("restartPolicy").and_then(Value::as_str) {
        if !RESTART_POLICIES.contains(&policy) {
            causes.push(field_not_supported(
                &format!("{path}.restartPolicy"),
                policy,
                RESTART_POLICIES,
            ));
        }
    }
    causes
}

fn validate_container<'a>(
    c: &'a Value,
    at: &str,
    seen: &mut Vec<&'a str>,
    causes: &mut Vec<StatusCause>,
) {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        causes.push(field_required(&format!("{at}.name"), ""));
    } else {
        for problem in is_dns1123_label(name) {
            causes.push(field_invalid(&format!("{at}.name"), name, &problem));
        }
        if seen.contains(&name) {
            causes.push(field_duplicate(&format!("{at}.name"), name));
        }
        seen.push(name);
    }
    if c.get("image")
        .and_then(Value::as_str)
        .is_none_or(|i| i.trim().is_empty())
    {
        causes.push(field_required(&format!("{at}.image"), ""));
    }
    let ports = c
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (j, p) in ports.enumerate() {
        let port_at = format!("{at}.ports[{j}]");
        let number = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            causes.push(field_invalid(
                &format!("{port_at}.containerPort"),
                &number.to_string(),
                "must be between 1 and 65535, inclusive",
            ));
        }
        if let Some(proto) = p.get("protocol").and_then(Value::as_str) {
            if !PROTOCOLS.contains(&proto) {
                causes.push(field_not_supported(
                    &format!("{port_at}.protocol"),
                    proto,
                    PROTOCOLS,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(c: &[StatusCause]) -> Vec<(&str, &str)> {
        c.iter()
            .map(|c| (c.field.as_str(), c.reason.as_str()))
            .collect()
    }

    #[test]
    fn a_pod_needs_named_containers_with_images() {
        assert_eq!(
            fields(&validate("", "Pod", &json!({"spec": {}}))),
            [("spec.containers", "FieldValueRequired")]
        );
        let pod = json!({"spec": {
            "initContainers": [{"name": "setup", "image": "busybox"}],
            "containers": [{"name": "setup", "image": "nginx"}, {"name": "Bad_Name"}, {"image": "x"}],
            "restartPolicy": "Sometimes"
        }});
        assert_eq!(
            fields(&validate("", "Pod", &pod)),
            [
                ("spec.containers[0].name", "FieldValueDuplicate"),
                ("spec.containers[1].name", "FieldValueInvalid"),
                ("spec.containers[1].image", "FieldValueRequired"),
                ("spec.containers[2].name", "FieldValueRequired"),
                ("spec.restartPolicy", "FieldValueNotSupported"),
            ]
        );
        let ports = json!({"spec": {"containers": [{"name": "c", "image": "x",
            "ports": [{"containerPort": 0}, {"containerPort": 80, "protocol": "HTTP"}]}]}});
        assert_eq!(
            fields(&validate("", "Pod", &ports)),
            [
                (
                    "spec.containers[0].ports[0].containerPort",
                    "FieldValueInvalid"
                ),
                (
                    "spec.containers[0].ports[1].protocol",
                    "FieldValueNotSupported"
                ),
            ]
        );
    }

    #[test]
    fn templates_are_pod_specs_at_their_paths() {
        let d = json!({"spec": {"template": {"spec": {"containers": []}}}});
        assert_eq!(
            fields(&validate("apps", "Deployment", &d)),
            [("spec.template.spec.containers", "FieldValueRequired")]
        );
        let cj = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}});
        assert_eq!(
            fields(&validate("batch", "CronJob", &cj)),
            [(
                "spec.jobTemplate.spec.template.spec.containers[0].image",
                "FieldValueRequired"
            )]
        );
        assert!(validate("", "ConfigMap", &json!({})).is_empty());
    }
}
