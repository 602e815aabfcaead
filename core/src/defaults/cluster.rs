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
