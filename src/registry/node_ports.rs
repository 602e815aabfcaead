//! Service node ports, drawn from `--service-node-port-range` (kube's
//! default 30000-32767): every port a NodePort or LoadBalancer Service
//! exposes on the nodes, and the health-check port of a LoadBalancer
//! with `externalTrafficPolicy: Local`.
//!
//! kube keeps the taken ports as a bitmap in storage; kubeshard keeps them
//! in memory ([`PortPool`], shared by every executor) and rebuilds them
//! from the stored Services at start — what kube's repair loop does —
//! before any Service write may draw from them. A port
//! is reserved before the Service is stored and given back when the write
//! fails, when the Service stops using it, or when it is deleted.

use crate::context::Api;
use kubeshard_core::portpool::{PortPool, Refused};
use kubeshard_core::status::{field_forbidden, field_invalid_raw, ApiError, StatusCause};
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
/// one. Answers the ports reserved, for [`NodePorts::release`] if the
/// write fails.
pub fn assign(
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
    pool.check_ready()?;
    let mut reserved: Vec<u16> = Vec::new();
    let result = fill(pool, new, old, &before, dry_run, &mut reserved);
    if result.is_err() && !dry_run {
        pool.release(&reserved);
    }
    result.map_err(|c| match c {
        Fill::Invalid(c) => invalid(vec![c]),
        Fill::Full => ApiError::internal(&format!(
            "failed to allocate a nodePort: range {} is full",
            pool.range()
        )),
    })?;
    Ok(if dry_run { vec![] } else { reserved })
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
pub fn release_dropped(api: &Api, old: &Value, new: &Value) {
    let now = held(new);
    let dropped: Vec<u16> = held(old).into_iter().filter(|p| !now.contains(p)).collect();
    api.config.node_ports.release(&dropped);
}

/// At start: every stored Service's node ports are taken, then writes may
/// draw from the pool.
pub async fn repair(api: &Api) -> Result<(), ApiError> {
    let services = api.builtin("", "services")?;
    let listed = crate::storage::list_all(api.storage(), &services).await?;
    api.config
        .node_ports
        .load(listed.iter().flat_map(|svc| held(&svc.to_value())));
    Ok(())
}
