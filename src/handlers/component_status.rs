//! `componentstatuses` (`kubectl get cs`): asked of the components when
//! read, never stored — the scheduler and controller-manager at their
//! default secure ports on this host, as kube-apiserver asks them, and
//! this server's own storage in place of kube's etcd members.

use super::{Api, HandlerResult};
use crate::proxy::{self, Endpoint, Scheme};
use crate::render::response::{self, Render};
use crate::render::warnings::Warnings;
use crate::request::RequestInfo;
use crate::storage::Storage;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};

pub const DEPRECATED: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// The components kube-apiserver probes (their secure ports' defaults).
const PROBED: &[(&str, u16)] = &[("controller-manager", 10257), ("scheduler", 10259)];
/// This server's storage: answers when its shards do.
const STORAGE: &str = "storage";

pub fn serves(resource: &ResourceInfo) -> bool {
    resource.group.is_empty() && resource.plural == "componentstatuses"
}

fn status(name: &str, healthy: bool, message: &str, error: &str) -> Value {
    let mut condition =
        json!({"type": "Healthy", "status": if healthy { "True" } else { "False" }});
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    if !error.is_empty() {
        condition["error"] = json!(error);
    }
    json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name}, "conditions": [condition]})
}

async fn probe(api: &Api, name: &str, port: u16) -> Value {
    let ep = Endpoint {
        scheme: Scheme::Https,
        host: "127.0.0.1".into(),
        port,
        kubelet: false,
        routable_only: false,
    };
    match proxy::forward::probe(&api.config.backends.dialer, &ep, "/healthz").await {
        Ok((code, body)) if (200..400).contains(&code) => status(name, true, &body, ""),
        Ok((code, body)) => status(name, false, "", &format!("unhealthy (HTTP {code}): {body}")),
        Err(e) => status(name, false, "", &e),
    }
}

pub async fn serve(
    api: &Api,
    info: &RequestInfo,
    resource: &ResourceInfo,
    render: Render,
) -> HandlerResult {
    if !matches!(info.verb.as_str(), "get" | "list") {
        return Err(ApiError::method_not_supported(
            "",
            "componentstatuses",
            &info.verb,
        ));
    }
    let wanted = |name: &str| info.name.is_empty() || info.name == name;
    let mut all = Vec::new();
    for (name, port) in PROBED {
        if wanted(name) {
            all.push(probe(api, name, *port).await);
        }
    }
    if wanted(STORAGE) {
        // A read every shard takes part in routing: the store answers.
        let key = api.config.keys.builtin("", "namespaces");
        all.push(match api.storage().get(&key, "", "default").await {
            Ok(_) => status(STORAGE, true, "ok", ""),
            Err(e) => status(STORAGE, false, "", &format!("{e:?}")),
        });
    }
    if !info.name.is_empty() && all.is_empty() {
        return Err(ApiError::not_found("", "componentstatuses", &info.name));
    }
    let warnings = Warnings::default();
    warnings.extend([DEPRECATED.to_string()]);
    Ok(warnings.apply(response::computed(
        resource,
        &all,
        !info.name.is_empty(),
        render,
    )))
}
