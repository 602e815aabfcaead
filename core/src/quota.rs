//! What an object costs a ResourceQuota, as kube's quota evaluators count
//! it: pods (count, compute requests and limits, with init containers at
//! their peak and the pod overhead), services (count, load balancers,
//! node ports), claims (count and storage, also per storage class) and
//! any other kind by `count/<resource>.<group>`. Also which quotas an
//! object falls under (scopes) and how amounts are written back.
//! Amounts are nano units (as [`crate::quantity::nanos`]).

use crate::meta;
use crate::quantity::nanos;
use serde_json::Value;
use std::collections::BTreeMap;

/// Resource name → amount (nano units).
pub type Usage = BTreeMap<String, i128>;

const ONE: i128 = 1_000_000_000;

/// The compute resources of a pod that quotas may demand be specified.
pub const COMPUTE: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// Kinds whose objects are also counted under a bare legacy name.
const LEGACY_COUNTS: &[&str] = &[
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// Whether the quota evaluator of `group`/`plural` counts `key`.
pub fn covers(group: &str, plural: &str, key: &str) -> bool {
    if key == count_name(group, plural) {
        return true;
    }
    match (group, plural) {
        ("", "pods") => {
            matches!(
                key,
                "pods"
                    | "cpu"
                    | "memory"
                    | "ephemeral-storage"
                    | "requests.cpu"
                    | "requests.memory"
                    | "requests.ephemeral-storage"
                    | "limits.cpu"
                    | "limits.memory"
                    | "limits.ephemeral-storage"
            ) || key.starts_with("hugepages-")
                || key.starts_with("requests.")
        }
        ("", "services") => matches!(
            key,
            "services" | "services.nodeports" | "services.loadbalancers"
        ),
        ("", "persistentvolumeclaims") => {
            matches!(key, "persistentvolumeclaims" | "requests.storage")
                || key.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
                || key.ends_with(".storageclass.storage.k8s.io/requests.storage")
        }
        ("", p) => LEGACY_COUNTS.contains(&p) && key == p,
        _ => false,
    }
}

/// The kind whose objects a quota key counts (group, plural), if any.
pub fn counted_kind(key: &str) -> Option<(String, String)> {
    if let Some(rest) = key.strip_prefix("count/") {
        return Some(match rest.split_once('.') {
            Some((plural, group)) => (group.to_string(), plural.to_string()),
            None => (String::new(), rest.to_string()),
        });
    }
    let kind = if covers("", "pods", key) {
        "pods"
    } else if covers("", "services", key) {
        "services"
    } else if covers("", "persistentvolumeclaims", key) {
        "persistentvolumeclaims"
    } else if LEGACY_COUNTS.contains(&key) {
        key
    } else {
        return None;
    };
    Some((String::new(), kind.to_string()))
}

/// A pod's requests or limits as a whole: containers (and sidecar init
/// containers) summed, at least each regular init container with the
/// sidecars started before it.
pub fn pod_total(pod: &Value, field: &str) -> Usage {
    let add = |into: &mut Usage, c: &Value| {
        if let Some(m) = c
            .pointer(&format!("/resources/{field}"))
            .and_then(Value::as_object)
        {
            for (k, v) in m {
                if let Some(n) = nanos(v) {
                    *into.entry(k.clone()).or_default() += n;
                }
            }
        }
    };
    let mut total = Usage::new();
    let mut sidecars = Usage::new();
    let mut peaks = Vec::new();
    for c in meta::array_at(pod, "/spec/initContainers") {
        if meta::str_at(c, "/restartPolicy") == "Always" {
            add(&mut total, c);
            add(&mut sidecars, c);
        } else {
            let mut peak = sidecars.clone();
            add(&mut peak, c);
            peaks.push(peak);
        }
    }
    for c in meta::array_at(pod, "/spec/containers") {
        add(&mut total, c);
    }
    for peak in peaks {
        for (k, v) in peak {
            let t = total.entry(k).or_default();
            *t = (*t).max(v);
        }
    }
    total
}

/// Whether a pod still counts for compute resources (not finished).
fn pod_counts(pod: &Value) -> bool {
    !matches!(meta::str_at(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// What `obj` of `group`/`plural` costs.
pub fn usage(group: &str, plural: &str, obj: &Value) -> Usage {
    let mut u = Usage::new();
    u.insert(count_name(group, plural), ONE);
    match (group, plural) {
        ("", "pods") => pod_usage(obj, &mut u),
        ("", "services") => {
            u.insert("services".into(), ONE);
            let ty = meta::str_at(obj, "/spec/type");
            let ports = meta::array_at(obj, "/spec/ports");
            let node_ports = match ty {
                "NodePort" => ports.len(),
                "LoadBalancer"
                    if obj.pointer("/spec/allocateLoadBalancerNodePorts")
                        == Some(&Value::Bool(false)) =>
                {
                    ports.iter().filter(|p| p.get("nodePort").is_some()).count()
                }
                "LoadBalancer" => ports.len(),
                _ => 0,
            };
            u.insert("services.nodeports".into(), node_ports as i128 * ONE);
            u.insert(
                "services.loadbalancers".into(),
                if ty == "LoadBalancer" { ONE } else { 0 },
            );
        }
        ("", "persistentvolumeclaims") => {
            u.insert("persistentvolumeclaims".into(), ONE);
            let requested = obj
                .pointer("/spec/resources/requests/storage")
                .and_then(nanos);
            let allocated = obj
                .pointer("/status/allocatedResources/storage")
                .and_then(nanos);
            let storage = requested.max(allocated);
            if let Some(s) = storage {
                // Whole bytes, rounded up.
                let bytes = (s + ONE - 1) / ONE * ONE;
                u.insert("requests.storage".into(), bytes);
            }
            let class = meta::str_at(obj, "/spec/storageClassName");
            if !class.is_empty() {
                let prefix = format!("{class}.storageclass.storage.k8s.io/");
                u.insert(format!("{prefix}persistentvolumeclaims"), ONE);
                if let Some(s) = u.get("requests.storage").copied() {
                    u.insert(format!("{prefix}requests.storage"), s);
                }
            }
        }
        ("", p) if LEGACY_COUNTS.contains(&p) => {
            u.insert(p.to_string(), ONE);
        }
        _ => {}
    }
    u
}

fn pod_usage(pod: &Value, u: &mut Usage) {
    if !pod_counts(pod) {
        return;
    }
    u.insert("pods".into(), ONE);
    let mut requests = pod_total(pod, "requests");
    let mut limits = pod_total(pod, "limits");
    if let Some(overhead) = pod.pointer("/spec/overhead").and_then(Value::as_object) {
        for (k, v) in overhead {
            let Some(n) = nanos(v) else { continue };
            *requests.entry(k.clone()).or_default() += n;
            if let Some(l) = limits.get_mut(k).filter(|l| **l != 0) {
                *l += n;
            }
        }
    }
    for (k, v) in requests {
        match k.as_str() {
            "cpu" | "memory" | "ephemeral-storage" => {
                u.insert(k.clone(), v);
                u.insert(format!("requests.{k}"), v);
            }
            h if h.starts_with("hugepages-") => {
                u.insert(k.clone(), v);
                u.insert(format!("requests.{k}"), v);
            }
            // Extended resources (names with a domain).
            e if e.contains('/') => {
                u.insert(format!("requests.{e}"), v);
            }
            _ => {}
        }
    }
    for (k, v) in limits {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            u.insert(format!("limits.{k}"), v);
        }
    }
}

/// Whether the pod falls under one scope (`values` for PriorityClass's
/// In/NotIn).
fn pod_scope(pod: &Value, scope: &str, operator: &str, values: &[&str]) -> bool {
    let terminating = pod
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0);
    let best_effort = crate::registry::qos_class(pod) == "BestEffort";
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => {
            let class = meta::str_at(pod, "/spec/priorityClassName");
            match operator {
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                "In" => !class.is_empty() && values.contains(&class),
                "NotIn" => class.is_empty() || !values.contains(&class),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => {
            let terms = |path: &str, weighted: bool| {
                meta::array_at(pod, path).iter().any(|t| {
                    let t = if weighted {
                        t.get("podAffinityTerm").unwrap_or(&Value::Null)
                    } else {
                        t
                    };
                    !meta::array_at(t, "/namespaces").is_empty()
                        || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
                })
            };
            ["podAffinity", "podAntiAffinity"].iter().any(|a| {
                terms(
                    &format!("/spec/affinity/{a}/requiredDuringSchedulingIgnoredDuringExecution"),
                    false,
                ) || terms(
                    &format!("/spec/affinity/{a}/preferredDuringSchedulingIgnoredDuringExecution"),
                    true,
                )
            })
        }
        _ => false,
    }
}

/// Whether `obj` falls under every scope of `quota` (only pods have
/// scopes; any scope excludes other kinds).
pub fn scopes_match(quota: &Value, group: &str, plural: &str, obj: &Value) -> bool {
    let scopes: Vec<(&str, &str, Vec<&str>)> = meta::array_at(quota, "/spec/scopes")
        .iter()
        .filter_map(Value::as_str)
        .map(|s| (s, "Exists", Vec::new()))
        .chain(
            meta::array_at(quota, "/spec/scopeSelector/matchExpressions")
                .iter()
                .map(|e| {
                    (
                        meta::str_at(e, "/scopeName"),
                        meta::str_at(e, "/operator"),
                        meta::array_at(e, "/values")
                            .iter()
                            .filter_map(Value::as_str)
                            .collect(),
                    )
                }),
        )
        .collect();
    if scopes.is_empty() {
        return true;
    }
    if (group, plural) != ("", "pods") {
        return false;
    }
    scopes
        .iter()
        .all(|(s, op, values)| pod_scope(obj, s, op, values))
}

/// kube's "must specify" refusal: each compute resource the quota limits
/// must be set on every container.
pub fn unspecified(hard: &[&str], pod: &Value) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut wanted: Vec<&str> = hard
        .iter()
        .copied()
        .filter(|k| COMPUTE.contains(k))
        .collect();
    wanted.sort();
    for res in wanted {
        let (field, name) = match res.split_once('.') {
            Some(("limits", n)) => ("limits", n),
            Some((_, n)) => ("requests", n),
            None => ("requests", res),
        };
        let mut missing: Vec<String> = ["initContainers", "containers"]
            .iter()
            .flat_map(|k| meta::array_at(pod, &format!("/spec/{k}")))
            .filter(|c| c.pointer(&format!("/resources/{field}/{name}")).is_none())
            .map(|c| meta::str_at(c, "/name").to_string())
            .collect();
        missing.sort();
        if !missing.is_empty() {
            out.push((res.to_string(), missing));
        }
    }
    out
}

/// An amount written as kube writes it back: binary (`Ki`…) when `like`
/// is binary and it divides evenly, else decimal (`m` below one unit).
pub fn render(n: i128, like: &str) -> String {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
        .iter()
        .any(|s| like.trim().ends_with(s));
    if binary && n % ONE == 0 && n != 0 {
        let mut bytes = n / ONE;
        let mut suffix = 0;
        while bytes % 1024 == 0 && suffix < 6 {
            bytes /= 1024;
            suffix += 1;
        }
        if suffix > 0 {
            let s = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][suffix];
            return format!("{bytes}{s}");
        }
    }
    if n % ONE == 0 {
        (n / ONE).to_string()
    } else if n % 1_000_000 == 0 {
        format!("{}m", n / 1_000_000)
    } else {
        format!("{n}n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_cost_what_kube_counts() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "64Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}],
            "overhead": {"cpu": "100m"}}});
        let u = usage("", "pods", &pod);
        assert_eq!(u["count/pods"], ONE);
        assert_eq!(u["pods"], ONE);
        // The init container's peak beats the containers' sum.
        assert_eq!(render(u["requests.cpu"], "1"), "2100m");
        assert_eq!(render(u["requests.memory"], "1Gi"), "128Mi");
        assert_eq!(render(u["limits.cpu"], "1"), "1100m");
        let done = json!({"status": {"phase": "Succeeded"}});
        assert_eq!(usage("", "pods", &done).get("pods"), None);
        assert!(covers("", "pods", "requests.nvidia.com/gpu"));
        assert!(!covers("", "pods", "services"));
        assert!(covers("apps", "deployments", "count/deployments.apps"));
        assert!(covers("", "configmaps", "configmaps"));
        assert_eq!(
            counted_kind("requests.cpu"),
            Some((String::new(), "pods".into()))
        );
        assert_eq!(
            counted_kind("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(
            counted_kind("services.nodeports"),
            Some((String::new(), "services".into()))
        );
        assert_eq!(counted_kind("bogus"), None);
    }

    #[test]
    fn services_claims_and_scopes() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        let u = usage("", "services", &lb);
        assert_eq!(
            (u["services.loadbalancers"], u["services.nodeports"]),
            (ONE, 2 * ONE)
        );
        let claim = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1Gi"}}}});
        let u = usage("", "persistentvolumeclaims", &claim);
        assert_eq!(
            render(
                u["gold.storageclass.storage.k8s.io/requests.storage"],
                "10Gi"
            ),
            "1Gi"
        );
        let quota = json!({"spec": {"scopes": ["BestEffort"]}});
        assert!(scopes_match(
            &quota,
            "",
            "pods",
            &json!({"spec": {"containers": [{"name": "c"}]}})
        ));
        assert!(!scopes_match(&quota, "", "services", &lb));
        let by_class = json!({"spec": {"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        assert!(scopes_match(
            &by_class,
            "",
            "pods",
            &json!({"spec": {"priorityClassName": "high"}})
        ));
        assert!(!scopes_match(&by_class, "", "pods", &json!({"spec": {}})));
        let pod = json!({"spec": {"containers": [{"name": "b"}, {"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(
            unspecified(&["limits.cpu", "requests.cpu", "pods"], &pod),
            [
                (
                    "limits.cpu".to_string(),
                    vec!["a".to_string(), "b".to_string()]
                ),
                ("requests.cpu".to_string(), vec!["b".to_string()])
            ]
        );
    }
}
