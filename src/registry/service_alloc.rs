//! What a Service write takes from the allocators and gives back (kube's
//! service REST `alloc`): cluster IPs when a Service is created or stops
//! being an ExternalName, node ports whenever its type needs them; what a
//! type change leaves behind is dropped from the object and returned to
//! its pool once the write is stored.

use super::{node_ports, service_ips};
use crate::context::Api;
use kubeshard_core::registry::is_external_name;
use kubeshard_core::status::ApiError;
use serde_json::Value;

/// What one write reserved, to give back if it is not stored.
#[derive(Default)]
pub struct Taken {
    ips: Vec<String>,
    node_ports: Vec<u16>,
}

impl Taken {
    pub fn is_empty(&self) -> bool {
        self.ips.is_empty() && self.node_ports.is_empty()
    }
}

/// Before a Service is stored: `new` (created when `old` is None) gets
/// what it needs and loses what its new type no longer has.
pub async fn before_write(
    api: &Api,
    new: &mut Value,
    old: Option<&Value>,
    dry_run: bool,
) -> Result<Taken, ApiError> {
    let ips = match old {
        None => service_ips::allocate(api, new, dry_run).await?,
        Some(o) if is_external_name(o) && !is_external_name(new) => {
            service_ips::allocate(api, new, dry_run).await?
        }
        Some(o) if !is_external_name(o) && is_external_name(new) => {
            drop_cluster_ips(new, o);
            Vec::new()
        }
        Some(_) => Vec::new(),
    };
    match node_ports::assign(api, new, old, dry_run).await {
        Ok(node_ports) => Ok(Taken { ips, node_ports }),
        Err(e) => {
            let namespace = kubeshard_core::meta::namespace(new).to_string();
            let name = kubeshard_core::meta::name(new).to_string();
            service_ips::release(api, &namespace, &name, &ips).await;
            Err(e)
        }
    }
}

/// A Service turned ExternalName keeps no cluster address: the fields it
/// still carries unchanged from its stored form are cleared (ones it
/// changes are left for validation to refuse).
fn drop_cluster_ips(new: &mut Value, old: &Value) {
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if spec
            .get(field)
            .is_none_or(|v| Some(v) == old.pointer(&format!("/spec/{field}")))
        {
            spec.remove(field);
        }
    }
}

/// The write was not stored: everything it reserved goes back.
pub async fn undo(api: &Api, namespace: &str, name: &str, taken: Taken) {
    service_ips::release(api, namespace, name, &taken.ips).await;
    node_ports::release(api, &taken.node_ports).await;
}

/// An update was stored: what the old Service held and the new one does
/// not goes back.
pub async fn after_update(api: &Api, namespace: &str, name: &str, old: &Value, new: &Value) {
    let now = service_ips::held(new);
    let dropped: Vec<String> = service_ips::held(old)
        .into_iter()
        .filter(|ip| !now.contains(ip))
        .collect();
    service_ips::release(api, namespace, name, &dropped).await;
    node_ports::release_dropped(api, old, new).await;
}

/// A Service is gone: everything it held goes back.
pub async fn after_delete(api: &Api, namespace: &str, name: &str, gone: &Value) {
    service_ips::release(api, namespace, name, &service_ips::held(gone)).await;
    node_ports::release(api, &node_ports::held(gone)).await;
}
