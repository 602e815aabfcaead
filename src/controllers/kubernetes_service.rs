//! The `kubernetes` Service in `default`, which kube-apiserver creates at
//! start so that clients inside the cluster (and kube's own e2e
//! framework) find the API server: port 443 (`https`) onto the secure
//! port, on the first address of the service range. Its Endpoints name
//! the advertised address; a loopback or unspecified one, which kube's
//! validation refuses in Endpoints, leaves them out.

use super::system_objects::{create_missing, ensure_field};
use crate::context::Api;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::net::IpAddr;

const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";

/// Creates the Service and Endpoints if missing; the Endpoints are
/// rewritten when the address or port changed since the last start.
pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let port = api.config.bind.port();
    let cluster_ip = api.config.service_cidrs.first_ip().to_string();
    let services = api.builtin("", "services")?;
    create_missing(api, &services, service(&cluster_ip, port)).await?;
    let Some(ip) = advertised(api) else {
        return Ok(());
    };
    let endpoints = api.builtin("", "endpoints")?;
    ensure_field(api, &endpoints, endpoints_of(ip, port), "subsets").await
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

fn endpoints_of(ip: IpAddr, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [{
            "addresses": [{"ip": ip.to_string()}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    })
}

/// The address clients reach this server at, if it is one an Endpoints
/// object may hold.
fn advertised(api: &Api) -> Option<IpAddr> {
    let ip = api.config.advertise.unwrap_or(api.config.bind.ip());
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}
