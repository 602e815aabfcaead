//! kube-apiserver's Service repair loops, run by every server after the
//! start-up pass: what a request that died half way left behind (a
//! reservation made, the Service never stored, on a server killed in
//! between) is found and given back, and what a Service holds without a
//! reservation is reserved again.
//!
//! - Cluster IPs: [`service_ips::repair`] (orphaned IPAddresses older than
//!   the request timeout are deleted).
//! - Node ports over a shared store: kube's bitmap repair. A port the
//!   bitmap holds and no Service uses is given back only when three passes
//!   in a row found it unused, since a create may be between reserving it
//!   and storing its Service; a port a Service uses and the bitmap lacks
//!   is taken again. Alone on its store a server's ports are in memory,
//!   rebuilt at start and released exactly, so nothing leaks there.
//!
//! Findings on a Service are reported as Warning Events on it, with
//! kube's reasons.

use super::{node_ports, service_ips};
use crate::context::Api;
use crate::storage::{Storage, StorageResult};
use kubeshard_core::meta;
use kubeshard_core::portpool::{PortPool, Refused};
use kubeshard_core::status::ApiError;
use kubeshard_shards::shared_keys::SharedKeys;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Duration;

/// Passes in a row that must find a port unused before it is given back
/// (kube's `numRepairsBeforeLeakCleanup`).
const LEAK_PASSES: u32 = 3;

/// The Events' reporting controller, kube's name for the node port loop.
const PORT_REPAIR: &str = "portallocator-repair-controller";

/// What a pass found wrong with one of a Service's node ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// Used by the Service, missing from the bitmap: taken again.
    NotAllocated,
    /// Used by an earlier Service of the list as well.
    AlreadyAllocated,
    /// Outside `--service-node-port-range`.
    OutOfRange,
}

impl Finding {
    fn reason(self) -> &'static str {
        match self {
            Finding::NotAllocated => "PortNotAllocated",
            Finding::AlreadyAllocated => "PortAlreadyAllocated",
            Finding::OutOfRange => "PortOutOfRange",
        }
    }

    fn note(self, port: u16, range: &str) -> String {
        match self {
            Finding::NotAllocated => format!("Port {port} is not allocated; repairing"),
            Finding::AlreadyAllocated => {
                format!("Port {port} was assigned to multiple services; please recreate service")
            }
            Finding::OutOfRange => {
                format!("Port {port} is not within the port range {range}; please recreate service")
            }
        }
    }
}

/// The bitmap a pass would store, and why.
#[derive(Debug)]
pub struct Rebuilt {
    pub pool: PortPool,
    /// (index of the Service in the pass's list, port, finding).
    pub findings: Vec<(usize, u16, Finding)>,
    /// Ports given back as leaked.
    pub released: Vec<u16>,
}

/// Ports the bitmap holds that no Service used, with the passes each has
/// left before it is given back.
#[derive(Debug, Default)]
pub struct PortLeaks(HashMap<u16, u32>);

impl PortLeaks {
    /// One pass: `stored` is the bitmap as read before `services` (each
    /// Service's node ports) were listed, so a port reserved after the
    /// read cannot be mistaken for a leak.
    pub fn rebuild(&mut self, stored: &PortPool, services: &[Vec<u16>]) -> Rebuilt {
        let (first, last) = stored.bounds();
        let pool = PortPool::from_bitmap(first, last, &[]);
        let mut unclaimed: BTreeSet<u16> = stored.taken().into_iter().collect();
        let mut findings = Vec::new();
        for (i, ports) in services.iter().enumerate() {
            for &port in ports {
                match pool.reserve(port, false) {
                    Ok(()) => {
                        if !unclaimed.remove(&port) {
                            findings.push((i, port, Finding::NotAllocated));
                        }
                        self.0.remove(&port);
                    }
                    Err(Refused::Taken) => findings.push((i, port, Finding::AlreadyAllocated)),
                    Err(Refused::OutOfRange) => findings.push((i, port, Finding::OutOfRange)),
                }
            }
        }
        let mut released = Vec::new();
        for port in unclaimed {
            let left = self
                .0
                .get(&port)
                .map_or(LEAK_PASSES - 1, |n| n.saturating_sub(1));
            if left > 0 {
                self.0.insert(port, left);
                pool.load([port]);
            } else {
                self.0.remove(&port);
                released.push(port);
            }
        }
        // Forget ports that left the bitmap some other way.
        self.0.retain(|p, _| stored.is_taken(*p));
        Rebuilt {
            pool,
            findings,
            released,
        }
    }
}

/// Runs the repair passes every `interval` until shutdown.
pub async fn run(api: Rc<Api>, interval: Duration) {
    let shutdown = api.exec.shutdown.clone();
    let mut leaks = PortLeaks::default();
    while shutdown.sleep(interval).await {
        if let Err(e) = pass(&api, &mut leaks).await {
            tracing::warn!(error = %e.message, "a Service repair pass failed; next pass in {interval:?}");
        }
    }
}

/// One pass of both repairs over one listing of the Services.
async fn pass(api: &Api, leaks: &mut PortLeaks) -> Result<(), ApiError> {
    let keys = api.storage().shared_keys();
    // The bitmap is read before the Services are listed, so a port
    // reserved after the read cannot be mistaken for a leak.
    let bitmap = match keys {
        Some(keys) => Some(node_ports::shared_pool(keys, &api.config.node_ports).await?),
        None => None,
    };
    // The Services every server stored before now, not just those this
    // server's cache has seen.
    api.storage()
        .consistent_revision(Duration::from_secs(5))
        .await
        .or_status()?;
    let services = service_ips::stored_services(api).await?;
    if let Err(e) = service_ips::repair_listed(api, &services).await {
        tracing::warn!(error = %e.message, "the service IP repair pass failed");
    }
    match (keys, bitmap) {
        (Some(keys), Some(bitmap)) => node_port_pass(api, keys, leaks, bitmap, &services).await,
        _ => Ok(()),
    }
}

/// One pass over the shared bitmap (`stored` at `revision`, read before
/// `services` were listed): stored only if nobody changed it since it
/// was read (a conflict waits for the next pass, as kube's).
async fn node_port_pass(
    api: &Api,
    keys: &SharedKeys,
    leaks: &mut PortLeaks,
    (stored, revision): (PortPool, Option<i64>),
    services: &[Value],
) -> Result<(), ApiError> {
    let range = &api.config.node_ports;
    let held: Vec<Vec<u16>> = services.iter().map(node_ports::held).collect();
    let rebuilt = leaks.rebuild(&stored, &held);
    for &(i, port, finding) in &rebuilt.findings {
        let svc = &services[i];
        tracing::warn!(service = %format!("{}/{}", meta::namespace(svc), meta::name(svc)), port, reason = finding.reason(), "node port repair");
        let note = finding.note(port, &range.range());
        if let Err(e) = warn_on(api, svc, finding.reason(), &note).await {
            tracing::warn!(error = %e.message, "could not record a node port repair Event");
        }
    }
    for port in &rebuilt.released {
        tracing::info!(port, "releasing a leaked node port");
    }
    if rebuilt.pool.taken() == stored.taken() {
        return Ok(());
    }
    let value =
        kubeshard_core::protobuf::encode_range_allocation(&range.range(), &rebuilt.pool.bitmap());
    if !keys
        .raw_swap(node_ports::RANGE_KEY, revision, value)
        .await
        .or_status()?
    {
        tracing::info!("the node port bitmap changed during the repair pass; next pass repairs it");
    }
    Ok(())
}

/// A Warning Event on a Service, as kube's repair loop records it
/// (events.k8s.io/v1, its reporting controller and action).
async fn warn_on(api: &Api, svc: &Value, reason: &str, note: &str) -> Result<(), ApiError> {
    let info = api.builtin("events.k8s.io", "events")?;
    let now = chrono::Utc::now();
    let name = format!(
        "{}.{:x}",
        meta::name(svc),
        now.timestamp_nanos_opt().unwrap_or_default()
    );
    let host = crate::pki::hostname().unwrap_or_default();
    let event = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": meta::namespace(svc)},
        "eventTime": super::strategy::now_micro(),
        "reportingController": PORT_REPAIR,
        "reportingInstance": format!("{PORT_REPAIR}-{host}"),
        "action": "PortAllocation",
        "reason": reason,
        "note": note,
        "type": "Warning",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Service",
            "namespace": meta::namespace(svc),
            "name": meta::name(svc),
            "uid": meta::str_at(svc, "/metadata/uid"),
            "resourceVersion": meta::str_at(svc, "/metadata/resourceVersion"),
        },
    });
    super::create_as(api, &super::APISERVER, &info, event).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitmap(ports: &[u16]) -> PortPool {
        let p = PortPool::from_bitmap(30000, 30009, &[]);
        p.load(ports.iter().copied());
        p
    }

    #[test]
    fn a_port_no_service_uses_is_given_back_on_the_third_pass_in_a_row() {
        let mut leaks = PortLeaks::default();
        let stored = bitmap(&[30001, 30002]);
        let services = [vec![30001]];
        for pass in 1..=2 {
            let r = leaks.rebuild(&stored, &services);
            assert_eq!(r.pool.taken(), [30001, 30002], "pass {pass} keeps it");
            assert!(r.released.is_empty() && r.findings.is_empty());
        }
        let r = leaks.rebuild(&stored, &services);
        assert_eq!((r.pool.taken(), r.released), (vec![30001], vec![30002]));

        // A port seen in use again starts its count over.
        let mut leaks = PortLeaks::default();
        leaks.rebuild(&stored, &services);
        leaks.rebuild(&stored, &services);
        leaks.rebuild(&stored, &[vec![30001, 30002]]);
        let r = leaks.rebuild(&stored, &services);
        assert_eq!(r.pool.taken(), [30001, 30002]);
    }

    #[test]
    fn findings_follow_kube() {
        let mut leaks = PortLeaks::default();
        let stored = bitmap(&[30001]);
        let r = leaks.rebuild(&stored, &[vec![30001, 30003], vec![30001], vec![31000]]);
        assert_eq!(
            r.findings,
            [
                (0, 30003, Finding::NotAllocated),
                (1, 30001, Finding::AlreadyAllocated),
                (2, 31000, Finding::OutOfRange),
            ]
        );
        assert_eq!(
            r.pool.taken(),
            [30001, 30003],
            "a missing port is taken again"
        );
        assert_eq!(
            Finding::OutOfRange.note(31000, "30000-30009"),
            "Port 31000 is not within the port range 30000-30009; please recreate service"
        );
    }
}
