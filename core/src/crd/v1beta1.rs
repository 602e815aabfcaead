//! CustomResourceDefinitions as kube-apiserver stores them in etcd:
//! still `apiextensions.k8s.io/v1beta1`, whose spec keeps the schema,
//! subresources and printer columns once for every version. Read back,
//! they become the v1 form this server works with: each version carries
//! its own, taken from the shared fields where it has none.

use serde_json::{json, Map, Value};

pub const API_VERSION: &str = "apiextensions.k8s.io/v1beta1";

/// Turns a v1beta1 CustomResourceDefinition into its v1 form in place;
/// anything else is left alone.
pub fn to_v1(crd: &mut Value) {
    if crd.get("apiVersion").and_then(Value::as_str) != Some(API_VERSION)
        || crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
    {
        return;
    }
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let schema = spec
        .remove("validation")
        .filter(|v| v.get("openAPIV3Schema").is_some());
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let selectable = spec.remove("selectableFields");
    let only = spec.remove("version");
    let versions = spec
        .entry("versions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if versions.as_array().is_some_and(Vec::is_empty) {
        if let Some(name) = only {
            *versions = json!([{"name": name, "served": true, "storage": true}]);
        }
    }
    for version in versions.as_array_mut().into_iter().flatten() {
        let Some(v) = version.as_object_mut() else {
            continue;
        };
        for (key, shared) in [
            ("schema", &schema),
            ("subresources", &subresources),
            ("additionalPrinterColumns", &columns),
            ("selectableFields", &selectable),
        ] {
            if let (None, Some(value)) = (v.get(key), shared) {
                v.insert(key.to_string(), value.clone());
            }
        }
        if let Some(cols) = v
            .get_mut("additionalPrinterColumns")
            .and_then(Value::as_array_mut)
        {
            for col in cols.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(path) = col.remove("JSONPath") {
                    col.insert("jsonPath".into(), path);
                }
            }
        }
    }
    if let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        let client = conversion.remove("webhookClientConfig");
        let reviews = conversion.remove("conversionReviewVersions");
        if conversion.get("strategy").and_then(Value::as_str) == Some("Webhook") {
            let mut webhook = Map::new();
            if let Some(c) = client {
                webhook.insert("clientConfig".into(), c);
            }
            webhook.insert(
                "conversionReviewVersions".into(),
                reviews.unwrap_or_else(|| json!(["v1beta1"])),
            );
            conversion.insert("webhook".into(), Value::Object(webhook));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_fields_move_into_each_version() {
        let mut crd = json!({"apiVersion": API_VERSION, "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "version": "v1",
                "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
                "validation": {"openAPIV3Schema": {"type": "object"}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}],
                "versions": [{"name": "v1", "served": true, "storage": true},
                             {"name": "v2", "served": true, "storage": false,
                              "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
                "conversion": {"strategy": "Webhook", "conversionReviewVersions": ["v1"],
                               "webhookClientConfig": {"url": "https://x"}}},
            "status": {"storedVersions": ["v1"]}});
        to_v1(&mut crd);
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
        let spec = &crd["spec"];
        for gone in [
            "version",
            "validation",
            "subresources",
            "additionalPrinterColumns",
        ] {
            assert!(spec.get(gone).is_none(), "{gone}");
        }
        let v1 = &spec["versions"][0];
        assert_eq!(v1["schema"], json!({"openAPIV3Schema": {"type": "object"}}));
        assert_eq!(v1["subresources"], json!({"status": {}}));
        assert_eq!(v1["additionalPrinterColumns"][0]["jsonPath"], ".spec.size");
        let v2 = &spec["versions"][1];
        assert_eq!(
            v2["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert_eq!(
            spec["conversion"],
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x"},
                                                     "conversionReviewVersions": ["v1"]}})
        );
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    }

    #[test]
    fn a_single_version_becomes_the_versions_list() {
        let mut crd = json!({"apiVersion": API_VERSION, "kind": "CustomResourceDefinition",
            "spec": {"version": "v1alpha1", "validation": {"openAPIV3Schema": {"type": "object"}}}});
        to_v1(&mut crd);
        assert_eq!(
            crd["spec"]["versions"],
            json!([{"name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}])
        );
        let mut other = json!({"apiVersion": "v1", "kind": "ConfigMap", "spec": {"version": "x"}});
        let before = other.clone();
        to_v1(&mut other);
        assert_eq!(other, before);
    }
}
