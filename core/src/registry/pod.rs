//! What may change in a stored pod, and through which part of it: an
//! update of the pod itself may change only images, a shorter active
//! deadline, added tolerations and removed scheduling gates (kube's
//! `ValidatePodUpdate`); ephemeral containers are only added, through
//! `/ephemeralcontainers`; container cpu and memory change only through
//! `/resize`, and never the pod's QoS class.

use super::qos::qos_class;
use crate::status::StatusCause;
use crate::status::{field_duplicate, field_forbidden, field_invalid_raw, field_required};
use serde_json::{Map, Value};

const UPDATABLE: &str = "pod updates may not change fields other than \
`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
`spec.tolerations` (only additions to existing tolerations),\
`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Go's semantic equality treats absent, null and empty alike; stored
/// pods differ in which of those they carry.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !is_empty(v))
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn list<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The causes an update of the pod itself (not a subresource) is refused
/// with: the spec is immutable but for kube's few updatable fields.
pub fn spec_update_causes(new: &Value, old: &Value) -> Vec<StatusCause> {
    let (Some(spec), Some(before)) = (new.get("spec"), old.get("spec")) else {
        return vec![];
    };
    if spec == before || normalized(spec) == normalized(before) {
        return vec![];
    }
    let mut causes = Vec::new();
    let mut munged = spec.clone();
    // Images may change, container by container.
    for key in ["containers", "initContainers"] {
        let old_list = list(before, key);
        if let Some(items) = munged.get_mut(key).and_then(Value::as_array_mut) {
            for (c, o) in items.iter_mut().zip(old_list) {
                if let (Some(c), Some(image)) = (c.as_object_mut(), o.get("image")) {
                    c.insert("image".into(), image.clone());
                }
            }
        }
    }
    let deadline = |s: &Value| s.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(spec), deadline(before)) {
        (Some(n), Some(o)) if n > o => causes.push(field_invalid_raw(
            "spec.activeDeadlineSeconds",
            &n.to_string(),
            "must be less than or equal to previous value",
        )),
        (None, Some(_)) => causes.push(field_invalid_raw(
            "spec.activeDeadlineSeconds",
            "null",
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    let key_of = |t: &Value| {
        let mut t = normalized(t);
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let added: Vec<Value> = list(spec, "tolerations").iter().map(key_of).collect();
    for (i, t) in list(before, "tolerations").iter().enumerate() {
        if !added.contains(&key_of(t)) {
            causes.push(field_forbidden(
                &format!("spec.tolerations[{i}]"),
                "existing toleration can not be modified except its tolerationSeconds",
            ));
        }
    }
    let gates = list(before, "schedulingGates");
    for (i, g) in list(spec, "schedulingGates").iter().enumerate() {
        if !gates.contains(g) {
            let name = g.get("name").and_then(Value::as_str).unwrap_or("");
            causes.push(field_forbidden(
                &format!("spec.schedulingGates[{i}]"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            ));
        }
    }
    if let Some(m) = munged.as_object_mut() {
        for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
            restore(m, before, key);
        }
        let grace = |s: &Value| {
            s.get("terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        };
        if grace(before).is_some_and(|g| g < 0) && grace(spec) == Some(1) {
            restore(m, before, "terminationGracePeriodSeconds");
        }
        // A gated pod may gain node selector terms.
        if !gates.is_empty() {
            let old_sel = before.get("nodeSelector").and_then(Value::as_object);
            let new_sel = m.get("nodeSelector").and_then(Value::as_object);
            let kept = old_sel.is_none_or(|o| {
                o.iter()
                    .all(|(k, v)| new_sel.and_then(|n| n.get(k)) == Some(v))
            });
            if kept {
                restore(m, before, "nodeSelector");
            }
        }
    }
    if normalized(&munged) != normalized(before) {
        causes.push(field_forbidden("spec", UPDATABLE));
    }
    causes
}

/// Sets `key` of `m` to what `before` has (removing it when absent).
fn restore(m: &mut Map<String, Value>, before: &Value, key: &str) {
    match before.get(key) {
        Some(v) => {
            m.insert(key.into(), v.clone());
        }
        None => {
            m.remove(key);
        }
    }
}

/// Fields an ephemeral container may not have (it gets no guarantees).
const NOT_FOR_EPHEMERAL: [&str; 7] = [
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
    "resizePolicy",
];

/// `/ephemeralcontainers`: the stored pod with the requested ephemeral
/// containers, and what is wrong with them (existing ones removed or
/// changed, names taken, fields ephemeral containers cannot have).
pub fn with_ephemeral_containers(requested: &Value, old: &Value) -> (Value, Vec<StatusCause>) {
    let mut new = old.clone();
    let wanted = requested
        .pointer("/spec/ephemeralContainers")
        .cloned()
        .unwrap_or(Value::Array(vec![]));
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("ephemeralContainers".into(), wanted.clone());
    }
    let mut causes = Vec::new();
    let wanted = wanted.as_array().map_or(&[][..], Vec::as_slice);
    let before = old
        .get("spec")
        .map_or(&[][..], |s| list(s, "ephemeralContainers"));
    let name = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for o in before {
        match wanted.iter().find(|c| name(c) == name(o)) {
            None => causes.push(field_forbidden(
                "spec.ephemeralContainers",
                &format!(
                    "existing ephemeral containers {:?} may not be removed",
                    name(o)
                ),
            )),
            Some(c) if normalized(c) != normalized(o) => causes.push(field_forbidden(
                "spec.ephemeralContainers",
                &format!(
                    "existing ephemeral containers {:?} may not be changed",
                    name(o)
                ),
            )),
            Some(_) => {}
        }
    }
    let mut taken: Vec<String> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| old.get("spec").map_or(&[][..], |s| list(s, k)))
        .map(name)
        .collect();
    for (i, c) in wanted.iter().enumerate() {
        let path = format!("spec.ephemeralContainers[{i}]");
        let n = name(c);
        if n.is_empty() {
            causes.push(field_required(&format!("{path}.name"), ""));
        } else if taken.contains(&n) {
            causes.push(field_duplicate(&format!("{path}.name"), &n));
        }
        taken.push(n);
        if c.get("image")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(field_required(&format!("{path}.image"), ""));
        }
        for f in NOT_FOR_EPHEMERAL {
            if c.get(f).is_some_and(|v| !is_empty(v)) {
                causes.push(field_forbidden(
                    &format!("{path}.{f}"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    (new, causes)
}

/// `/resize`: the stored pod with each container's resources and resize
/// policy as requested (nothing else is taken), and what is wrong with
/// that (resources other than cpu and memory changed, a QoS class
/// change).
pub fn resized(requested: &Value, old: &Value) -> (Value, Vec<StatusCause>) {
    let mut new = old.clone();
    let mut causes = Vec::new();
    for key in ["containers", "initContainers"] {
        let asked = requested
            .get("spec")
            .map_or(&[][..], |s| list(s, key))
            .to_vec();
        let Some(items) = new
            .get_mut("spec")
            .and_then(|s| s.get_mut(key))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in items.iter_mut().filter_map(Value::as_object_mut) {
            let Some(a) = asked.iter().find(|a| a.get("name") == c.get("name")) else {
                continue;
            };
            let before = c.get("resources").cloned().unwrap_or_default();
            for field in ["resources", "resizePolicy"] {
                match a.get(field) {
                    Some(v) => c.insert(field.into(), v.clone()),
                    None => c.remove(field),
                };
            }
            let after = c.get("resources").cloned().unwrap_or_default();
            if beyond_compute(&before) != beyond_compute(&after) {
                causes.push(field_forbidden(
                    "spec",
                    "only cpu and memory resources are mutable",
                ));
            }
        }
    }
    let (was, is) = (qos_class(old), qos_class(&new));
    if was != is {
        causes.push(field_invalid_raw(
            "spec",
            &format!("{is:?}"),
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    (new, causes)
}

/// A container's resources without cpu and memory.
fn beyond_compute(resources: &Value) -> Value {
    let mut r = normalized(resources);
    for part in ["requests", "limits"] {
        if let Some(m) = r.get_mut(part).and_then(Value::as_object_mut) {
            m.remove("cpu");
            m.remove("memory");
        }
    }
    normalized(&r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"spec": {"containers": [{"name": "a", "image": "nginx:1",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 30}],
            "activeDeadlineSeconds": 100, "nodeName": "n1"}})
    }

    #[test]
    fn only_kubes_updatable_fields_change() {
        let old = pod();
        let mut ok = old.clone();
        ok["spec"]["containers"][0]["image"] = json!("nginx:2");
        ok["spec"]["activeDeadlineSeconds"] = json!(50);
        ok["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists", "tolerationSeconds": 10},
            {"key": "new", "operator": "Exists"}]);
        assert!(spec_update_causes(&ok, &old).is_empty());
        let mut bad = old.clone();
        bad["spec"]["nodeName"] = json!("n2");
        let causes = spec_update_causes(&bad, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec");
        let mut longer = old.clone();
        longer["spec"]["activeDeadlineSeconds"] = json!(500);
        assert_eq!(
            spec_update_causes(&longer, &old)[0].field,
            "spec.activeDeadlineSeconds"
        );
        let mut dropped = old.clone();
        dropped["spec"]["tolerations"] = json!([]);
        assert_eq!(
            spec_update_causes(&dropped, &old)[0].field,
            "spec.tolerations[0]"
        );
        let mut resources = old.clone();
        resources["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("200m");
        assert!(!spec_update_causes(&resources, &old).is_empty());
    }

    #[test]
    fn ephemeral_containers_are_only_added() {
        let old = pod();
        let debug =
            json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
        let (new, causes) = with_ephemeral_containers(&debug, &old);
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(new["spec"]["ephemeralContainers"][0]["name"], "debug");
        assert_eq!(new["spec"]["containers"], old["spec"]["containers"]);
        let (_, causes) = with_ephemeral_containers(&json!({"spec": {}}), &new);
        assert!(
            causes[0].message.contains("may not be removed"),
            "{causes:?}"
        );
        let clash = json!({"spec": {"ephemeralContainers": [
            {"name": "debug", "image": "busybox"},
            {"name": "a", "image": "x", "ports": [{"containerPort": 80}]}]}});
        let (_, causes) = with_ephemeral_containers(&clash, &new);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.ephemeralContainers[1].name",
                "spec.ephemeralContainers[1].ports"
            ]
        );
    }

    #[test]
    fn resize_takes_only_resources_and_keeps_the_qos_class() {
        let old = pod();
        let asked = json!({"spec": {"containers": [{"name": "a", "image": "ignored",
            "resources": {"requests": {"cpu": "300m", "memory": "64Mi"}}}]}});
        let (new, causes) = resized(&asked, &old);
        assert!(causes.is_empty(), "{causes:?}");
        assert_eq!(new["spec"]["containers"][0]["image"], "nginx:1");
        assert_eq!(
            new["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "300m"
        );
        let storage = json!({"spec": {"containers": [{"name": "a", "resources":
            {"requests": {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"}}}]}});
        assert!(!resized(&storage, &old).1.is_empty());
        let guaranteed = json!({"spec": {"containers": [{"name": "a", "resources":
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        let causes = resized(&guaranteed, &old).1;
        assert!(causes[0].message.contains("QOS Class"), "{causes:?}");
    }
}
