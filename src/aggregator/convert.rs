//! An extension server's APIResourceList in the aggregated discovery
//! (apidiscovery.k8s.io/v2) form: resources with their subresources
//! folded in, as kube-aggregator converts a backend that only serves the
//! legacy per-version document.

use serde_json::{json, Value};

/// The v2 version entry of `list` (an APIResourceList) at `version`.
pub fn aggregated_version(list: &Value, version: &str) -> Value {
    let entries = list
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let kind_of = |r: &Value| {
        json!({
            "group": r.get("group").and_then(Value::as_str).unwrap_or(""),
            "version": r.get("version").and_then(Value::as_str).unwrap_or(""),
            "kind": r.get("kind").and_then(Value::as_str).unwrap_or(""),
        })
    };
    let mut resources: Vec<Value> = Vec::new();
    for r in entries.iter() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() || name.contains('/') {
            continue;
        }
        let subresources: Vec<Value> = entries
            .iter()
            .filter_map(|s| {
                let full = s.get("name").and_then(Value::as_str)?;
                let sub = full.strip_prefix(name)?.strip_prefix('/')?;
                Some(json!({
                    "subresource": sub,
                    "responseKind": kind_of(s),
                    "verbs": s.get("verbs").cloned().unwrap_or(json!([])),
                }))
            })
            .collect();
        let namespaced = r.get("namespaced").and_then(Value::as_bool) == Some(true);
        let mut entry = json!({
            "resource": name,
            "responseKind": kind_of(r),
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").and_then(Value::as_str).unwrap_or(""),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for key in ["shortNames", "categories"] {
            if let Some(v) = r
                .get(key)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                entry[key] = v.clone();
            }
        }
        if !subresources.is_empty() {
            entry["subresources"] = subresources.into();
        }
        resources.push(entry);
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

/// The entry of a group version whose documents could not be fetched.
pub fn stale_version(version: &str) -> Value {
    json!({"version": version, "freshness": "Stale"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subresources_fold_into_their_resource() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "metrics.k8s.io/v1beta1",
        "resources": [
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics",
             "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics",
             "verbs": ["get", "list"], "shortNames": ["pm"]},
            {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "PodMetrics",
             "verbs": ["get"]},
        ]});
        let v = aggregated_version(&list, "v1beta1");
        assert_eq!(v["freshness"], "Current");
        let rs = v["resources"].as_array().unwrap();
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0]["scope"], "Cluster");
        assert_eq!(rs[1]["shortNames"], json!(["pm"]));
        assert_eq!(rs[1]["subresources"][0]["subresource"], "status");
        assert!(rs[0].get("subresources").is_none());
    }
}
