//! A pod's quality-of-service class (`status.qosClass`), which kube
//! computes when the pod is created: Guaranteed when every container
//! limits both cpu and memory and requests exactly its limits, BestEffort
//! when nothing requests or limits cpu or memory, Burstable otherwise.
//! Pod-level resources, when given, decide instead of the containers.

use crate::quantity::nanos;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The resources the class is computed from.
const COMPUTE: [&str; 2] = ["cpu", "memory"];

pub fn qos_class(pod: &Value) -> &'static str {
    let mut requests: BTreeMap<&'static str, i128> = BTreeMap::new();
    let mut limits: BTreeMap<&'static str, i128> = BTreeMap::new();
    let mut guaranteed = true;
    let mut account = |resources: &Value| {
        add_positive(resources.get("requests"), &mut requests);
        let found = add_positive(resources.get("limits"), &mut limits);
        if !COMPUTE.iter().all(|r| found.contains(r)) {
            guaranteed = false;
        }
    };
    match pod.pointer("/spec/resources").filter(|r| r.is_object()) {
        Some(pod_level) => account(pod_level),
        None => {
            for list in ["containers", "initContainers"] {
                let containers = pod.pointer(&format!("/spec/{list}"));
                for c in containers.and_then(Value::as_array).into_iter().flatten() {
                    account(c.get("resources").unwrap_or(&Value::Null));
                }
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let matched = requests
        .iter()
        .all(|(name, req)| limits.get(name) == Some(req));
    if guaranteed && matched && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Adds the positive cpu and memory amounts of a resource list to `sums`;
/// returns the names it found positive.
fn add_positive(
    list: Option<&Value>,
    sums: &mut BTreeMap<&'static str, i128>,
) -> Vec<&'static str> {
    let mut found = Vec::new();
    let map: Option<&Map<String, Value>> = list.and_then(Value::as_object);
    for (name, q) in map.into_iter().flatten() {
        let Some(&resource) = COMPUTE.iter().find(|r| **r == name.as_str()) else {
            continue;
        };
        let Some(amount) = nanos(q).filter(|n| *n > 0) else {
            continue;
        };
        let sum = sums.entry(resource).or_insert(0);
        *sum = sum.saturating_add(amount);
        found.push(resource);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(containers: Value) -> Value {
        json!({"spec": {"containers": containers}})
    }

    #[test]
    fn quantities_in_nano_units() {
        for (q, n) in [
            (json!("500m"), 500_000_000i128),
            (json!("0.5"), 500_000_000),
            (json!(1), 1_000_000_000),
            (json!(1.5), 1_500_000_000),
            (json!("1Ki"), 1024 * 1_000_000_000),
            (json!("1e3"), 1_000_000_000_000),
            (json!("1k"), 1_000_000_000_000),
            (json!("1n"), 1),
            (json!("0.1n"), 1),
            (json!("-2"), -2_000_000_000),
            (json!("128Mi"), 128 * 1024 * 1024 * 1_000_000_000),
        ] {
            assert_eq!(nanos(&q), Some(n), "{q}");
        }
        assert_eq!(nanos(&json!("1000m")), nanos(&json!("1")));
        assert_eq!(nanos(&json!("1Gi")), nanos(&json!("1024Mi")));
        for bad in [json!("lots"), json!(""), json!(true), json!("1Qi")] {
            assert_eq!(nanos(&bad), None, "{bad}");
        }
    }

    #[test]
    fn classes_as_kube_computes_them() {
        assert_eq!(qos_class(&pod(json!([{"name": "a"}]))), "BestEffort");
        assert_eq!(
            qos_class(&pod(
                json!([{"name": "a", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}])
            )),
            "BestEffort",
            "only cpu and memory count"
        );
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(
            qos_class(&pod(
                json!([{"name": "a", "resources": {"requests": both, "limits": {"cpu": "1000m", "memory": "1024Mi"}}}])
            )),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&pod(json!([
                {"name": "a", "resources": {"requests": both, "limits": both}},
                {"name": "b"}
            ]))),
            "Burstable",
            "a container without limits breaks the guarantee"
        );
        assert_eq!(
            qos_class(&pod(
                json!([{"name": "a", "resources": {"limits": {"cpu": "1"}}}])
            )),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(
                json!([{"name": "a", "resources": {"requests": {"cpu": "500m"}, "limits": both}}])
            )),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(
                json!([{"name": "a", "resources": {"requests": {"cpu": "0"}, "limits": {"cpu": "0"}}}])
            )),
            "BestEffort",
            "zero amounts count as none"
        );
        let pod_level = json!({"spec": {"resources": {"requests": both, "limits": both},
            "containers": [{"name": "a"}]}});
        assert_eq!(qos_class(&pod_level), "Guaranteed");
    }
}
