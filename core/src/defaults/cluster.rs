//! Defaults of the storage, networking and scheduling kinds.

use super::util::{child, each, set};
use serde_json::{json, Value};

pub fn persistent_volume_claim(obj: &mut Value) {
    if let Some(spec) = child(obj, "spec") {
        set(spec, "volumeMode", "Filesystem");
    }
}

pub fn persistent_volume(obj: &mut Value) {
    if let Some(spec) = child(obj, "spec") {
        set(spec, "persistentVolumeReclaimPolicy", "Retain");
        set(spec, "volumeMode", "Filesystem");
    }
}

pub fn storage_class(obj: &mut Value) {
    set(obj, "reclaimPolicy", "Delete");
    set(obj, "volumeBindingMode", "Immediate");
}

pub fn csi_driver(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "attachRequired", true);
    set(spec, "podInfoOnMount", false);
    set(spec, "storageCapacity", false);
    set(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
    set(spec, "requiresRepublish", false);
    set(spec, "seLinuxMount", false);
    set(spec, "volumeLifecycleModes", json!(["Persistent"]));
}

/// A Container item's missing defaults come from its maximum; missing
/// default requests from its default, else its minimum.
pub fn limit_range(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    for item in each(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let copy = |item: &mut Value, from: &str, to: &str| {
            let Some(source) = item.get(from).and_then(Value::as_object).cloned() else {
                return;
            };
            let target = item
                .as_object_mut()
                .expect("limit items are objects")
                .entry(to)
                .or_insert_with(|| json!({}));
            if let Some(target) = target.as_object_mut() {
                for (k, v) in source {
                    target.entry(k).or_insert(v);
                }
            }
        };
        copy(item, "max", "default");
        copy(item, "default", "defaultRequest");
        copy(item, "min", "defaultRequest");
        if let Some(m) = item.as_object_mut() {
            for key in ["default", "defaultRequest"] {
                if m.get(key)
                    .and_then(Value::as_object)
                    .is_some_and(|o| o.is_empty())
                {
                    m.remove(key);
                }
            }
        }
    }
}

pub fn priority_class(obj: &mut Value) {
    set(obj, "preemptionPolicy", "PreemptLowerPriority");
}

/// Ports without a protocol are TCP; a policy without policyTypes applies
/// to ingress, and to egress too when it has egress rules.
pub fn network_policy(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for rule in each(spec, direction) {
            for port in each(rule, "ports") {
                set(port, "protocol", "TCP");
            }
        }
    }
    if spec.get("policyTypes").is_none_or(Value::is_null) {
        let mut types = vec![json!("Ingress")];
        if spec.get("egress").is_some_and(|e| !e.is_null()) {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = Value::Array(types);
    }
}

pub fn endpoint_slice(obj: &mut Value) {
    for port in each(obj, "ports") {
        set(port, "protocol", "TCP");
    }
}

/// autoscaling/v2 (the stored form): one replica at least, CPU at 80% when
/// no metric is named, and a behavior, once given, completed with kube's
/// scale-up (4 pods or 100% per 15s, no stabilization) and scale-down
/// (100% per 15s) rules.
pub fn horizontal_pod_autoscaler(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "minReplicas", 1);
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]);
    }
    if !spec.get("behavior").is_some_and(Value::is_object) {
        return;
    }
    let behavior = &mut spec["behavior"];
    let rules = [
        (
            "scaleUp",
            json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
        ),
        (
            "scaleDown",
            json!({"selectPolicy": "Max", "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
        ),
    ];
    for (direction, defaults) in rules {
        let Some(given) = child(behavior, direction) else {
            continue;
        };
        if let Some(d) = defaults.as_object() {
            for (k, v) in d {
                set(given, k, v.clone());
            }
        }
    }
}

/// Sets `key` to `value` when absent, null or zero (Go's zero value, which
/// kube's flowcontrol defaults replace).
fn set_unless_nonzero(obj: &mut Value, key: &str, value: i64) {
    if obj.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
        if let Some(m) = obj.as_object_mut() {
            m.insert(key.into(), json!(value));
        }
    }
}

/// A FlowSchema without a precedence matches at 1000.
pub fn flow_schema(obj: &mut Value) {
    if let Some(spec) = child(obj, "spec") {
        set_unless_nonzero(spec, "matchingPrecedence", 1000);
    }
}

/// A priority level's shares and lending (30 shares for a limited one, 0
/// for an exempt one, lending nothing) and its queues (64 queues, hands
/// of 8, 50 requests each).
pub fn priority_level_configuration(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    for (level, shares) in [("exempt", 0), ("limited", 30)] {
        let Some(l) = spec.get_mut(level).filter(|l| l.is_object()) else {
            continue;
        };
        set(l, "nominalConcurrencyShares", shares);
        set(l, "lendablePercent", 0);
    }
    if let Some(q) = spec
        .pointer_mut("/limited/limitResponse/queuing")
        .filter(|q| q.is_object())
    {
        set_unless_nonzero(q, "handSize", 8);
        set_unless_nonzero(q, "queues", 64);
        set_unless_nonzero(q, "queueLengthLimit", 50);
    }
}
