//! The `kubernetes` Service in `default`, which kube-apiserver creates at
//! start so that clients inside the cluster (and kube's own e2e
//! framework) find the API server: port 443 (`https`) onto the secure
//! port, on the first address of the service range.
//!
//! Its Endpoints and EndpointSlice name every live API server, as kube's
//! lease endpoint reconciler keeps them: each server renews a lease on
//! its address under `masterleases/<ip>` every 10 s (15 s lifetime), and
//! writes the addresses of all live leases into both objects. Over a store
//! of its own a server is the only one. A loopback or unspecified address,
//! which kube's validation refuses in Endpoints, leaves them alone.

use super::system_objects::{create_missing, ensure_fields};
use crate::context::Api;
use crate::storage::StorageResult;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::time::Duration;

const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// Where API servers' address leases live, under the store's prefix.
const LEASES: &str = "masterleases";
/// kube's endpoint reconciler interval and lease lifetime.
const RENEW_EVERY: Duration = Duration::from_secs(10);
const LEASE_TTL: Duration = Duration::from_secs(15);

/// Creates the Service if missing, and names this server in the
/// endpoints.
pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let port = api.config.bind.port();
    let cluster_ip = api.config.service_cidrs.first_ip().to_string();
    let services = api.builtin("", "services")?;
    create_missing(api, &services, service(&cluster_ip, port)).await?;
    reconcile(api, false).await
}

/// Keeps this server's lease and the endpoints current until shutdown,
/// then takes its address out.
pub async fn run(api: std::rc::Rc<Api>) {
    // Alone on its store, a server's address changes only with a restart.
    if advertised(&api).is_none() || api.storage().shared_keys().is_none() {
        return;
    }
    let shutdown = api.exec.shutdown.clone();
    loop {
        let stop = !shutdown.sleep(RENEW_EVERY).await;
        if let Err(e) = reconcile(&api, stop).await {
            tracing::warn!(error = %e.message, "could not reconcile the kubernetes Service's endpoints");
        }
        if stop {
            return;
        }
    }
}

/// Renews (or, when `leaving`, drops) this server's lease, then writes
/// the live servers' addresses into the Endpoints and EndpointSlice.
async fn reconcile(api: &Api, leaving: bool) -> Result<(), ApiError> {
    let Some(ip) = advertised(api) else {
        return Ok(());
    };
    let port = api.config.bind.port();
    let mut addresses = match api.storage().shared_keys() {
        None if leaving => return Ok(()),
        None => vec![ip.to_string()],
        Some(keys) => {
            let path = format!("{LEASES}/{ip}");
            if leaving {
                keys.raw_delete(&path).await.or_status()?;
            } else {
                keys.raw_put_for(&path, lease(ip), LEASE_TTL)
                    .await
                    .or_status()?;
            }
            let leases = keys.raw_list(LEASES).await.or_status()?;
            leases.iter().filter_map(|(_, v)| leased_ip(v)).collect()
        }
    };
    if addresses.is_empty() && !leaving {
        // Never erase every address while this server is up (its own lease
        // is not visible yet, or was lost); the next round writes it.
        return Ok(());
    }
    addresses.sort();
    addresses.dedup();
    let endpoints = api.builtin("", "endpoints")?;
    ensure_fields(
        api,
        &endpoints,
        endpoints_of(&addresses, port),
        &["subsets"],
    )
    .await?;
    let slices = api.builtin("discovery.k8s.io", "endpointslices")?;
    ensure_fields(
        api,
        &slices,
        slice_of(&addresses, port),
        &["addressType", "endpoints", "ports"],
    )
    .await
}

fn service(cluster_ip: &str, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}],
            "clusterIP": cluster_ip,
            "clusterIPs": [cluster_ip],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilyPolicy": "SingleStack",
        },
    })
}

fn https(port: u16) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

/// The Endpoints: one subset with every address (none when the last
/// server leaves, as kube leaves it).
fn endpoints_of(addresses: &[String], port: u16) -> Value {
    let subsets = if addresses.is_empty() {
        json!([])
    } else {
        let addresses: Vec<Value> = addresses.iter().map(|ip| json!({"ip": ip})).collect();
        json!([{"addresses": addresses, "ports": https(port)}])
    };
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": subsets,
    })
}

/// The EndpointSlice kube derives from those Endpoints (the mirroring
/// controller skips them): the addresses of the slice's family, ready.
fn slice_of(addresses: &[String], port: u16) -> Value {
    let v6 = |a: &String| a.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6());
    let ipv6 = !addresses.is_empty() && addresses.iter().all(v6);
    let endpoints: Vec<Value> = addresses
        .iter()
        .filter(|a| v6(a) == ipv6)
        .map(|a| json!({"addresses": [a], "conditions": {"ready": true}}))
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"kubernetes.io/service-name": NAME},
        },
        "addressType": if ipv6 { "IPv6" } else { "IPv4" },
        "endpoints": endpoints,
        "ports": https(port),
    })
}

/// A lease's value, as kube writes it: an Endpoints named by the address,
/// holding it.
fn lease(ip: IpAddr) -> Vec<u8> {
    let obj = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": ip.to_string()},
        "subsets": [{"addresses": [{"ip": ip.to_string()}]}],
    });
    kubeshard_core::protobuf::encode_object(&obj)
        .map(|e| e.into_object().to_vec())
        .unwrap_or_else(|_| obj.to_string().into_bytes())
}

/// The address a lease holds (kube's or ours; protobuf or JSON).
fn leased_ip(stored: &[u8]) -> Option<String> {
    let obj: Value = if stored.starts_with(kubeshard_core::protobuf::MAGIC) {
        kubeshard_core::protobuf::decode_object(stored).ok()?
    } else {
        serde_json::from_slice(stored).ok()?
    };
    obj.pointer("/subsets/0/addresses/0/ip")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_string)
}

/// The address clients reach this server at, if it is one an Endpoints
/// object may hold.
fn advertised(api: &Api) -> Option<IpAddr> {
    let ip = api.config.advertise.unwrap_or(api.config.bind.ip());
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_hold_their_address_in_either_encoding() {
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(leased_ip(&lease(ip)).as_deref(), Some("192.0.2.7"));
        let json = br#"{"kind":"Endpoints","subsets":[{"addresses":[{"ip":"10.1.2.3"}]}]}"#;
        assert_eq!(leased_ip(json).as_deref(), Some("10.1.2.3"));
        assert_eq!(leased_ip(b"{}"), None);
        assert_eq!(leased_ip(b"k8s\0junk"), None);
    }

    #[test]
    fn the_slice_follows_the_endpoints_family() {
        let v4 = slice_of(&["192.0.2.1".into(), "192.0.2.2".into()], 6443);
        assert_eq!(v4["addressType"], "IPv4");
        assert_eq!(v4["endpoints"].as_array().unwrap().len(), 2);
        assert_eq!(v4["endpoints"][0]["conditions"]["ready"], true);
        assert_eq!(v4["ports"][0]["port"], 6443);
        let v6 = slice_of(&["2001:db8::1".into()], 443);
        assert_eq!(v6["addressType"], "IPv6");
        assert_eq!(endpoints_of(&[], 443)["subsets"], json!([]));
    }
}
