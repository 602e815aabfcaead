//! Service node ports, drawn from `--service-node-port-range` (kube's
//! default 30000-32767): every port a NodePort or LoadBalancer Service
//! exposes on the nodes, and the health-check port of a LoadBalancer
//! with `externalTrafficPolicy: Local`.
//!
//! A port is reserved before the Service is stored and given back when
//! the write fails, when the Service stops using it, or when it is
//! deleted. Where the taken ports live depends on the store:
//!
//! - a store of its own: in memory ([`PortPool`], shared by every
//!   executor), rebuilt from the stored Services at start — what kube's
//!   repair loop does — before any Service write may draw from it;
//! - a store shared with other servers (etcd): where kube-apiserver keeps
//!   them, a RangeAllocation bitmap at `ranges/servicenodeports`, changed
//!   only by compare-and-swap, so replicas (and kube-apiservers) on one
//!   etcd never hand out one port twice.

use crate::context::Api;
use crate::storage::StorageResult;
use kubeshard_core::portpool::{PortPool, Refused};
use kubeshard_core::status::{field_forbidden, field_invalid_raw, ApiError, StatusCause};
use kubeshard_shards::shared_keys::SharedKeys;
use serde_json::{json, Value};

fn spec_str<'a>(svc: &'a Value, key: &str) -> &'a str {
    svc.get("spec")
        .and_then(|s| s.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// NodePort Services, and LoadBalancers unless they opt out.
fn needs_node_ports(svc: &Value) -> bool {
    match spec_str(svc, "type") {
        "NodePort" => true,
        "LoadBalancer" => svc.pointer("/spec/allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    }
}

fn needs_health_check(svc: &Value) -> bool {
    spec_str(svc, "type") == "LoadBalancer" && spec_str(svc, "externalTrafficPolicy") == "Local"
}

fn port_number(v: Option<&Value>) -> Option<u16> {
    v.and_then(Value::as_u64)
        .filter(|p| *p > 0)
        .and_then(|p| u16::try_from(p).ok())
}

/// Every node port a stored Service holds (its ports' and its health
/// check's).
pub fn held(svc: &Value) -> Vec<u16> {
    let mut out: Vec<u16> = ports(svc)
        .iter()
        .filter_map(|p| port_number(p.get("nodePort")))
        .collect();
    out.extend(port_number(svc.pointer("/spec/healthCheckNodePort")));
    out.sort_unstable();
    out.dedup();
    out
}

fn ports(svc: &Value) -> &[Value] {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Fills in the node ports a Service being written needs (keeping those
/// it held before for the same port, as kube does), reserving each new
/// one. Answers the ports reserved, for [`release`] if the
/// write fails.
pub async fn assign(
    api: &Api,
    new: &mut Value,
    old: Option<&Value>,
    dry_run: bool,
) -> Result<Vec<u16>, ApiError> {
    let pool = &api.config.node_ports;
    let name = kubeshard_core::meta::name(new).to_string();
    let invalid = |causes: Vec<StatusCause>| ApiError::invalid("", "Service", &name, causes);
    let before = old.map(held).unwrap_or_default();
    // Defaults come later, in the strategy: no type is a ClusterIP.
    let svc_type = match spec_str(new, "type") {
        "" => "ClusterIP".to_string(),
        t => t.to_string(),
    };
    if !needs_node_ports(new) || !needs_health_check(new) {
        drop_unneeded(new, old, &before);
    }
    let mut causes = Vec::new();
    if !needs_node_ports(new) {
        for (i, p) in ports(new).iter().enumerate() {
            if port_number(p.get("nodePort")).is_some() {
                causes.push(field_forbidden(
                    &format!("spec.ports[{i}].nodePort"),
                    &format!("may not be used when `type` is '{svc_type}'"),
                ));
            }
        }
    }
    if !needs_health_check(new) && port_number(new.pointer("/spec/healthCheckNodePort")).is_some() {
        causes.push(field_invalid_raw(
            "spec.healthCheckNodePort",
            &new.pointer("/spec/healthCheckNodePort")
                .cloned()
                .unwrap_or_default()
                .to_string(),
            "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        ));
    }
    if !causes.is_empty() {
        return Err(invalid(causes));
    }
    if !needs_node_ports(new) && !needs_health_check(new) {
        return Ok(vec![]);
    }
    let refused = |f: Fill| match f {
        Fill::Invalid(c) => invalid(vec![c]),
        Fill::Full => ApiError::internal(&format!(
            "failed to allocate a nodePort: range {} is full",
            pool.range()
        )),
    };
    if let Some(keys) = api.storage().shared_keys() {
        return assign_shared(keys, pool, new, old, &before, dry_run, refused).await;
    }
    pool.check_ready()?;
    let mut reserved: Vec<u16> = Vec::new();
    let result = fill(pool, new, old, &before, dry_run, &mut reserved);
    if result.is_err() && !dry_run {
        pool.release(&reserved);
    }
    result.map_err(refused)?;
    Ok(if dry_run { vec![] } else { reserved })
}

/// Where kube keeps the taken node ports, under the store's prefix.
pub(super) const RANGE_KEY: &str = "ranges/servicenodeports";

/// How often a change to the shared bitmap is tried again after other
/// writers changed it first, before the request fails.
const SWAP_ATTEMPTS: usize = 32;

/// The shared bitmap as a pool (with the revision a swap compares), or
/// an empty one where no server has written it yet.
pub(super) async fn shared_pool(
    keys: &SharedKeys,
    range: &PortPool,
) -> Result<(PortPool, Option<i64>), ApiError> {
    let (first, last) = range.bounds();
    let Some(stored) = keys.raw_get(RANGE_KEY).await.or_status()? else {
        return Ok((PortPool::from_bitmap(first, last, &[]), None));
    };
    let (stored_range, bitmap) =
        kubeshard_core::protobuf::decode_range_allocation(&stored.value)
            .map_err(|e| ApiError::internal(&format!("the stored node port bitmap: {e}")))?;
    if stored_range != range.range() {
        return Err(ApiError::internal(&format!(
            "the stored node port range {stored_range} is not this server's \
             --service-node-port-range {}",
            range.range()
        )));
    }
    Ok((
        PortPool::from_bitmap(first, last, &bitmap),
        Some(stored.revision),
    ))
}

/// Changes the shared bitmap by `change` (which answers None when it
/// changes nothing), retrying on the current bitmap when another writer
/// got in first.
async fn swap_shared<T>(
    keys: &SharedKeys,
    range: &PortPool,
    mut change: impl FnMut(&PortPool) -> Result<Option<T>, ApiError>,
) -> Result<Option<T>, ApiError> {
    for _ in 0..SWAP_ATTEMPTS {
        let (pool, revision) = shared_pool(keys, range).await?;
        let Some(done) = change(&pool)? else {
            return Ok(None);
        };
        let stored =
            kubeshard_core::protobuf::encode_range_allocation(&range.range(), &pool.bitmap());
        if keys
            .raw_swap(RANGE_KEY, revision, stored)
            .await
            .or_status()?
        {
            return Ok(Some(done));
        }
    }
    Err(ApiError::new(
        409,
        "Conflict",
        "the node port bitmap kept changing under this write; try again",
    ))
}

/// [`assign`] over the shared bitmap: the ports are filled in on the
/// bitmap as it is now, and kept only if the bitmap was not changed
/// meanwhile.
async fn assign_shared(
    keys: &SharedKeys,
    range: &PortPool,
    new: &mut Value,
    old: Option<&Value>,
    before: &[u16],
    dry_run: bool,
    refused: impl Fn(Fill) -> ApiError,
) -> Result<Vec<u16>, ApiError> {
    let mut filled = None;
    let reserved = swap_shared(keys, range, |pool| {
        let mut attempt = new.clone();
        let mut reserved = Vec::new();
        fill(pool, &mut attempt, old, before, dry_run, &mut reserved).map_err(&refused)?;
        filled = Some(attempt);
        Ok((!dry_run && !reserved.is_empty()).then_some(reserved))
    })
    .await?;
    if let Some(filled) = filled {
        *new = filled;
    }
    Ok(reserved.unwrap_or_default())
}

/// Gives `ports` back (a write that was not stored, a Service that let
/// them go). A failure leaves them taken, which only wastes them.
pub async fn release(api: &Api, ports: &[u16]) {
    if ports.is_empty() {
        return;
    }
    let pool = &api.config.node_ports;
    let Some(keys) = api.storage().shared_keys() else {
        pool.release(ports);
        return;
    };
    let gave_back = swap_shared(keys, pool, |shared| {
        let held = ports.iter().any(|p| shared.is_taken(*p));
        shared.release(ports);
        Ok(held.then_some(()))
    })
    .await;
    if let Err(e) = gave_back {
        tracing::warn!(?ports, error = %e.message, "node ports could not be given back");
    }
}

enum Fill {
    Invalid(StatusCause),
    Full,
}

fn fill(
    pool: &PortPool,
    new: &mut Value,
    old: Option<&Value>,
    before: &[u16],
    dry_run: bool,
    reserved: &mut Vec<u16>,
) -> Result<(), Fill> {
    let take = |asked: Option<u16>, field: &str, reserved: &mut Vec<u16>| match asked {
        Some(p) if before.contains(&p) || reserved.contains(&p) => Ok(p),
        Some(p) => match pool.reserve(p, dry_run) {
            Ok(()) => {
                reserved.push(p);
                Ok(p)
            }
            Err(Refused::Taken) => Err(Fill::Invalid(field_invalid_raw(
                field,
                &p.to_string(),
                "provided port is already allocated",
            ))),
            Err(Refused::OutOfRange) => Err(Fill::Invalid(field_invalid_raw(
                field,
                &p.to_string(),
                &format!(
                    "provided port is not in the valid range. The range of valid ports is {}",
                    pool.range()
                ),
            ))),
        },
        None => {
            let p = pool.reserve_any(dry_run).ok_or(Fill::Full)?;
            reserved.push(p);
            Ok(p)
        }
    };
    if needs_node_ports(new) {
        let old_ports = old.map(ports).unwrap_or_default().to_vec();
        let count = ports(new).len();
        for i in 0..count {
            let port = &ports(new)[i];
            let asked = port_number(port.get("nodePort")).or_else(|| {
                // The same port of the stored Service keeps its node port.
                old_ports
                    .iter()
                    .find(|o| o.get("port") == port.get("port") && protocol(o) == protocol(port))
                    .and_then(|o| port_number(o.get("nodePort")))
            });
            let got = take(asked, &format!("spec.ports[{i}].nodePort"), reserved)?;
            if let Some(p) = new
                .pointer_mut(&format!("/spec/ports/{i}"))
                .and_then(Value::as_object_mut)
            {
                p.insert("nodePort".into(), json!(got));
            }
        }
    }
    if needs_health_check(new) {
        let asked = port_number(new.pointer("/spec/healthCheckNodePort"))
            .or_else(|| old.and_then(|o| port_number(o.pointer("/spec/healthCheckNodePort"))));
        let got = take(asked, "spec.healthCheckNodePort", reserved)?;
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("healthCheckNodePort".into(), json!(got));
        }
    }
    Ok(())
}

fn protocol(port: &Value) -> &str {
    port.get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP")
}

/// A Service that stops needing node ports (or its health-check port)
/// drops the ones it held, as kube clears what the type change left
/// behind; ports it sets anew are still refused.
fn drop_unneeded(new: &mut Value, old: Option<&Value>, before: &[u16]) {
    if old.is_none() {
        return;
    }
    let keep_ports = needs_node_ports(new);
    let keep_check = needs_health_check(new);
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if !keep_ports {
        for p in spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            if port_number(p.get("nodePort")).is_some_and(|n| before.contains(&n)) {
                p.remove("nodePort");
            }
        }
    }
    if !keep_check
        && port_number(spec.get("healthCheckNodePort")).is_some_and(|n| before.contains(&n))
    {
        spec.remove("healthCheckNodePort");
    }
}

/// After a Service update is stored: the node ports it held before and
/// holds no longer go back to the pool.
pub async fn release_dropped(api: &Api, old: &Value, new: &Value) {
    let now = held(new);
    let dropped: Vec<u16> = held(old).into_iter().filter(|p| !now.contains(p)).collect();
    release(api, &dropped).await;
}

/// At start: every stored Service's node ports are taken, then writes may
/// draw from the pool. Over a shared store they are added to the shared
/// bitmap (which may hold more: other servers' writes under way).
pub async fn repair(api: &Api) -> Result<(), ApiError> {
    let services = api.builtin("", "services")?;
    let listed = crate::storage::list_all(api.storage(), &services).await?;
    let in_use: Vec<u16> = listed
        .iter()
        .flat_map(|svc| held(&svc.to_value()))
        .collect();
    let pool = &api.config.node_ports;
    if let Some(keys) = api.storage().shared_keys() {
        swap_shared(keys, pool, |shared| {
            let missing: Vec<u16> = in_use
                .iter()
                .copied()
                .filter(|p| !shared.is_taken(*p))
                .collect();
            shared.load(missing.iter().copied());
            Ok((!missing.is_empty()).then_some(()))
        })
        .await?;
    }
    pool.load(in_use);
    Ok(())
}
