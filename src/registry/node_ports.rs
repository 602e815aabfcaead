//! Service node ports, drawn from `--service-node-port-range` (kube's
//! default 30000-32767): every port a NodePort or LoadBalancer Service
//! exposes on the nodes, and the health-check port of a LoadBalancer
//! with `externalTrafficPolicy: Local`.
//!
//! kube keeps the taken ports as a bitmap in storage; kubeshard keeps them
//! in memory, shared by every executor under one lock (writes of Services
//! are rare), and rebuilds them from the stored Services at start — what
//! kube's repair loop does — before any Service write is served. A port
//! is reserved before the Service is stored and given back when the write
//! fails, when the Service stops using it, or when it is deleted.

use crate::context::Api;
use kubeshard_core::status::{field_forbidden, field_invalid_raw, ApiError, StatusCause};
use parking_lot::Mutex;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

/// The taken node ports of one range.
#[derive(Debug)]
pub struct NodePorts {
    first: u16,
    last: u16,
    taken: Mutex<BTreeSet<u16>>,
    /// The stored Services' ports are known (repair done).
    ready: AtomicBool,
}

/// Why a port asked for cannot be had.
enum Refused {
    OutOfRange,
    Taken,
}

impl NodePorts {
    pub fn new(first: u16, last: u16) -> Self {
        Self {
            first,
            last,
            taken: Mutex::new(BTreeSet::new()),
            ready: AtomicBool::new(false),
        }
    }

    /// `30000-32767`, as kube prints the range in its messages.
    pub fn range(&self) -> String {
        format!("{}-{}", self.first, self.last)
    }

    fn reserve(&self, port: u16, dry_run: bool) -> Result<(), Refused> {
        if !(self.first..=self.last).contains(&port) {
            return Err(Refused::OutOfRange);
        }
        let mut taken = self.taken.lock();
        if taken.contains(&port) {
            return Err(Refused::Taken);
        }
        if !dry_run {
            taken.insert(port);
        }
        Ok(())
    }

    /// Any free port: a random start, then the range in order from there.
    fn reserve_any(&self, dry_run: bool) -> Option<u16> {
        let start = rand::thread_rng().gen_range(self.first..=self.last);
        let mut taken = self.taken.lock();
        let port = (start..=self.last)
            .chain(self.first..start)
            .find(|p| !taken.contains(p))?;
        if !dry_run {
            taken.insert(port);
        }
        Some(port)
    }

    pub fn release(&self, ports: &[u16]) {
        let mut taken = self.taken.lock();
        for p in ports {
            taken.remove(p);
        }
    }

    fn check_ready(&self) -> Result<(), ApiError> {
        if self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(ApiError::new(
            503,
            "ServiceUnavailable",
            "the node port allocator is still loading the stored Services; try again",
        ))
    }
}

/// Parses `--service-node-port-range` (`30000-32767`, both ends taken).
pub fn parse_range(s: &str) -> Result<(u16, u16), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("{s:?}: expected FIRST-LAST"))?;
    let first: u16 = a.trim().parse().map_err(|e| format!("{a:?}: {e}"))?;
    let last: u16 = b.trim().parse().map_err(|e| format!("{b:?}: {e}"))?;
    if first == 0 || first > last {
        return Err(format!("{s:?}: not a range of ports"));
    }
    Ok((first, last))
}

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
    pool: &NodePorts,
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
    let pool = &api.config.node_ports;
    {
        let mut taken = pool.taken.lock();
        for svc in &listed {
            taken.extend(held(&svc.to_value()));
        }
    }
    pool.ready.store(true, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_kube_writes_them() {
        assert_eq!(parse_range("30000-32767").unwrap(), (30000, 32767));
        assert!(parse_range("32767-30000").is_err());
        assert!(parse_range("30000").is_err());
        assert!(parse_range("0-10").is_err());
    }

    #[test]
    fn the_pool_never_gives_a_port_twice() {
        let pool = NodePorts::new(30000, 30009);
        assert!(pool.reserve(30005, false).is_ok());
        assert!(matches!(pool.reserve(30005, false), Err(Refused::Taken)));
        assert!(matches!(
            pool.reserve(40000, false),
            Err(Refused::OutOfRange)
        ));
        let mut got: Vec<u16> = (0..9).map(|_| pool.reserve_any(false).unwrap()).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            (30000..=30009).filter(|p| *p != 30005).collect::<Vec<_>>()
        );
        assert!(pool.reserve_any(false).is_none());
        pool.release(&[30001]);
        assert_eq!(pool.reserve_any(true), Some(30001));
        assert_eq!(
            pool.reserve_any(false),
            Some(30001),
            "a dry run keeps nothing"
        );
    }
}
