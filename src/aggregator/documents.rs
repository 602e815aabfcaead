//! An extension server's OpenAPI documents, fetched by the controller
//! when its APIService becomes available and once a minute after: the
//! swagger document's paths under `/apis/<group>/<version>/` and its
//! definitions (merged into `/openapi/v2`), and the group version's v3
//! document (served under `/openapi/v3/apis/<group>/<version>`). A
//! backend without one of them (404) simply contributes nothing there.

use super::available::get;
use super::Remote;
use crate::context::Api;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// (filtered v2 `{"paths", "definitions"}`, v3 document).
pub async fn fetch(api: &Api, remote: &Remote) -> (Option<Arc<Value>>, Option<Arc<Vec<u8>>>) {
    let Some(target) = super::transport::pick(remote) else {
        return (None, None);
    };
    let ep = &target.endpoint;
    let v2 = match get(api, remote, ep, "/openapi/v2", "application/json").await {
        Ok((200, body)) => serde_json::from_slice::<Value>(&body)
            .ok()
            .map(|doc| Arc::new(filtered_v2(&doc, &remote.group, &remote.version))),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(apiservice = %remote.name, error = %e, "no OpenAPI v2 document");
            None
        }
    };
    (v2, fetch_v3(api, remote, ep).await)
}

/// The v3 document the backend's index names for the group version.
async fn fetch_v3(
    api: &Api,
    remote: &Remote,
    ep: &crate::proxy::dial::Endpoint,
) -> Option<Arc<Vec<u8>>> {
    let (status, index) = get(api, remote, ep, "/openapi/v3", "application/json")
        .await
        .ok()?;
    if status != 200 {
        return None;
    }
    let index: Value = serde_json::from_slice(&index).ok()?;
    let key = format!("apis/{}/{}", remote.group, remote.version);
    let url = index
        .pointer(&format!(
            "/paths/{}",
            key.replace('~', "~0").replace('/', "~1")
        ))?
        .get("serverRelativeURL")?
        .as_str()?
        .to_string();
    if !url.starts_with('/') {
        return None;
    }
    match get(api, remote, ep, &url, "application/json").await {
        Ok((200, body)) if serde_json::from_slice::<Value>(&body).is_ok() => {
            Some(Arc::new(body.to_vec()))
        }
        _ => None,
    }
}

/// The paths of `doc` under the group version, and its definitions.
fn filtered_v2(doc: &Value, group: &str, version: &str) -> Value {
    let prefix = format!("/apis/{group}/{version}/");
    let paths: Map<String, Value> = doc
        .get("paths")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(k, v)| k.starts_with(&prefix) && v.is_object())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    // Only what a swagger document can hold goes into ours: one odd
    // extension must not break every client's OpenAPI.
    let definitions: Map<String, Value> = doc
        .get("definitions")
        .and_then(Value::as_object)
        .map(|d| {
            d.iter()
                .filter(|(_, v)| v.is_object())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    json!({"paths": paths, "definitions": definitions})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_group_versions_paths_are_kept() {
        let doc = json!({"paths": {
            "/apis/metrics.k8s.io/v1beta1/nodes": {},
            "/apis/metrics.k8s.io/v1beta1/": {},
            "/apis/metrics.k8s.io/v1beta2/nodes": {},
            "/api/v1/pods": {},
        }, "definitions": {"io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics": {}}});
        let f = filtered_v2(&doc, "metrics.k8s.io", "v1beta1");
        let mut keys: Vec<&String> = f["paths"].as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "/apis/metrics.k8s.io/v1beta1/",
                "/apis/metrics.k8s.io/v1beta1/nodes"
            ]
        );
        assert!(f["definitions"]
            .get("io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics")
            .is_some());
    }
}
