//! The objects kube-apiserver's post-start hooks keep in place besides
//! the `kubernetes` Service and the RBAC policy: the two system
//! PriorityClasses that critical pods name, the `kubernetes` ServiceCIDR
//! (the range Services draw from), and the kube-system ConfigMaps that
//! components read at start — `extension-apiserver-authentication` (the
//! client CA bundle, which kube-scheduler, kube-controller-manager and
//! aggregated servers authenticate callers with) and the legacy token
//! tracking date.

use crate::context::Api;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;

const KUBE_SYSTEM: &str = "kube-system";
const AUTHENTICATION: &str = "extension-apiserver-authentication";
const TOKEN_TRACKING: &str = "kube-apiserver-legacy-service-account-token-tracking";

pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let priority_classes = api.builtin("scheduling.k8s.io", "priorityclasses")?;
    for (name, value, what) in [
        (
            "system-node-critical",
            2_000_001_000,
            "for pods a node cannot work without; never moved off their node",
        ),
        (
            "system-cluster-critical",
            2_000_000_000,
            "for pods the cluster cannot work without; may move to another node",
        ),
    ] {
        let obj = json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "description": what,
        });
        create_missing(api, &priority_classes, obj).await?;
    }
    let cidrs: Vec<String> = api
        .config
        .service_cidrs
        .0
        .iter()
        .map(|c| c.to_string())
        .collect();
    let service_cidrs = api.builtin("networking.k8s.io", "servicecidrs")?;
    create_missing(
        api,
        &service_cidrs,
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": "kubernetes"}, "spec": {"cidrs": cidrs},
        }),
    )
    .await?;
    let config_maps = api.builtin("", "configmaps")?;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    create_missing(
        api,
        &config_maps,
        config_map(TOKEN_TRACKING, json!({"since": today})),
    )
    .await?;
    let wanted = authentication_data(&api.security.config);
    ensure_fields(
        api,
        &config_maps,
        config_map(AUTHENTICATION, wanted),
        &["data"],
    )
    .await
}

/// What extension API servers read to authenticate callers: the client
/// CA, and when an authenticating proxy is trusted, its CA, allowed names
/// and headers (lists as JSON arrays in strings, as kube writes them).
fn authentication_data(config: &crate::security::SecurityConfig) -> Value {
    let mut data = json!({"client-ca-file": config.client_ca_pem});
    if let Some(rh) = &config.front_proxy.request_header {
        let list = |names: Vec<String>| Value::String(Value::from(names).to_string());
        let header_list = |names: &[http::HeaderName]| {
            // Canonical (X-Remote-User) form, as the flags spell them.
            list(names.iter().map(|n| canonical(n.as_str())).collect())
        };
        data["requestheader-client-ca-file"] = rh.ca_pem.clone().into();
        data["requestheader-allowed-names"] = list(rh.allowed_names.clone());
        data["requestheader-username-headers"] = header_list(&rh.username_headers);
        data["requestheader-group-headers"] = header_list(&rh.group_headers);
        data["requestheader-extra-headers-prefix"] =
            list(rh.extra_prefixes.iter().map(|p| canonical(p)).collect());
        if !rh.uid_headers.is_empty() {
            data["requestheader-uid-headers"] = header_list(&rh.uid_headers);
        }
    }
    data
}

/// `x-remote-user` → `X-Remote-User` (Go's canonical header form).
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn config_map(name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": KUBE_SYSTEM}, "data": data,
    })
}

/// Creates `obj`, or writes its `fields` back into the existing object
/// of its name when they differ (content the server owns).
pub(crate) async fn ensure_fields(
    api: &Api,
    info: &Arc<ResourceInfo>,
    obj: Value,
    fields: &'static [&'static str],
) -> Result<(), ApiError> {
    let (ns, name) = (meta::namespace(&obj), meta::name(&obj));
    let wanted: Vec<Value> = fields
        .iter()
        .map(|f| obj.get(*f).cloned().unwrap_or(Value::Null))
        .collect();
    let differs = |have: &Value| {
        fields
            .iter()
            .zip(&wanted)
            .any(|(f, w)| have.get(*f).unwrap_or(&Value::Null) != w)
    };
    match api
        .storage()
        .get(&info.storage_key, ns, name)
        .await
        .or_status()?
    {
        None => create_missing(api, info, obj).await,
        Some(have) if !differs(&have.to_value()) => Ok(()),
        Some(_) => {
            let at = registry::Addressed::object(info, ns, name);
            let mutation = Box::new(move |new: &mut Value| {
                for (f, w) in fields.iter().zip(&wanted) {
                    match w {
                        Value::Null => new.as_object_mut().map(|o| o.remove(*f)),
                        w => {
                            new[*f] = w.clone();
                            None
                        }
                    };
                }
                Ok(true)
            });
            registry::update_with(api, &registry::APISERVER, at, mutation)
                .await
                .map(|_| ())
        }
    }
}

/// Creates `obj` unless an object of its name exists (whatever it holds:
/// these are the cluster's to change). Over a store other servers share,
/// they create the same objects at start: the check reads consistently,
/// and a create that fails because another server's is under way (its
/// Service IP reserved, the Service not yet stored) counts as done once
/// that object shows up.
pub(crate) async fn create_missing(
    api: &Api,
    info: &Arc<ResourceInfo>,
    obj: Value,
) -> Result<(), ApiError> {
    /// How long another server's create may take to show up.
    const OTHERS_CREATE: std::time::Duration = std::time::Duration::from_secs(5);
    let (ns, name) = (
        meta::namespace(&obj).to_string(),
        meta::name(&obj).to_string(),
    );
    let exists = || async {
        let storage = api.storage();
        storage
            .consistent_revision(OTHERS_CREATE)
            .await
            .or_status()?;
        let found = storage.get(&info.storage_key, &ns, &name).await;
        Ok::<_, ApiError>(found.or_status()?.is_some())
    };
    if exists().await? {
        return Ok(());
    }
    let refused = match registry::create_as(api, &registry::APISERVER, info, obj).await {
        Ok(_) => return Ok(()),
        Err(e) if e.code == 409 => return Ok(()),
        Err(e) => e,
    };
    if !api.storage().sequencer().is_mirrored() {
        return Err(refused);
    }
    let deadline = std::time::Instant::now() + OTHERS_CREATE;
    while std::time::Instant::now() < deadline {
        if exists().await? {
            return Ok(());
        }
        glommio::timer::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(refused)
}
