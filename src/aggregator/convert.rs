//! An extension server's APIResourceList in the aggregated discovery
//! (apidiscovery.k8s.io/v2) form: resources with their subresources
//! folded in, as kube-aggregator converts a backend that only serves the
//! legacy per-version document.

use serde_json::{json, Value};
use std::collections::HashMap;

/// The most resources (subresources included) an extension server's
/// document may list: past it the group version is reported stale.
const MAX_RESOURCES: usize = 10_000;

/// The v2 version entry of `list` (an APIResourceList) at `version`.
/// Built once when the document is fetched; a document that is not what
/// an APIResourceList must be (entries without names, lists that are
/// not lists of strings) gives a stale entry rather than a discovery
/// document clients cannot decode.
pub fn aggregated_version(list: &Value, version: &str) -> Value {
    let Some(entries) = list.get("resources").and_then(Value::as_array) else {
        return stale_version(version);
    };
    if entries.len() > MAX_RESOURCES {
        return stale_version(version);
    }
    let kind_of = |r: &Value| {
        json!({
            "group": r.get("group").and_then(Value::as_str).unwrap_or(""),
            "version": r.get("version").and_then(Value::as_str).unwrap_or(""),
            "kind": r.get("kind").and_then(Value::as_str).unwrap_or(""),
        })
    };
    let strings = |r: &Value, key: &str| -> Option<Vec<Value>> {
        match r.get(key) {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => Some(a.clone()),
            Some(_) => None,
        }
    };
    // Subresources by their parent, in one pass.
    let mut subresources: HashMap<&str, Vec<Value>> = HashMap::new();
    for s in entries {
        let Some((parent, sub)) = s
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| n.split_once('/'))
        else {
            continue;
        };
        let Some(verbs) = strings(s, "verbs") else {
            return stale_version(version);
        };
        subresources.entry(parent).or_default().push(json!({
            "subresource": sub,
            "responseKind": kind_of(s),
            "verbs": verbs,
        }));
    }
    let mut resources: Vec<Value> = Vec::new();
    for r in entries {
        let Some(name) = r.get("name").and_then(Value::as_str) else {
            return stale_version(version);
        };
        if name.is_empty() || name.contains('/') {
            continue;
        }
        let (Some(verbs), Some(short), Some(categories)) = (
            strings(r, "verbs"),
            strings(r, "shortNames"),
            strings(r, "categories"),
        ) else {
            return stale_version(version);
        };
        let namespaced = r.get("namespaced").and_then(Value::as_bool) == Some(true);
        let mut entry = json!({
            "resource": name,
            "responseKind": kind_of(r),
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").and_then(Value::as_str).unwrap_or(""),
            "verbs": verbs,
        });
        if !short.is_empty() {
            entry["shortNames"] = short.into();
        }
        if !categories.is_empty() {
            entry["categories"] = categories.into();
        }
        if let Some(subs) = subresources.remove(name) {
            entry["subresources"] = subs.into();
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
        let bad = json!({"resources": [{"name": "nodes", "verbs": "get"}]});
        assert_eq!(aggregated_version(&bad, "v1")["freshness"], "Stale");
        assert_eq!(aggregated_version(&json!({}), "v1")["freshness"], "Stale");
    }
}
