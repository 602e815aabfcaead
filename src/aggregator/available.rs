//! Whether a service-backed APIService is available, checked as kube's
//! availability controller checks it — the Service exists and has the
//! port, its EndpointSlices have ready addresses for that port, and a GET
//! of the group version's discovery document answers 2xx within 5 s — and
//! said in kube's reasons and messages. The discovery document fetched by
//! the check is kept: it is what the group's discovery shows.

use super::{transport, Remote};
use crate::context::Api;
use crate::proxy::endpoints;
use crate::storage::Storage;
use bytes::Bytes;
use http::{header, Request};
use http_body_util::{BodyExt, Empty};
use kubeshard_core::meta;
use serde_json::Value;
use std::time::Duration;

/// How long a probe may take (kube's discovery check timeout).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most a document fetched from an extension server may weigh.
const MAX_DOCUMENT: usize = 32 * 1024 * 1024;

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub available: bool,
    pub reason: &'static str,
    pub message: String,
    pub endpoints: Vec<(String, u16)>,
    pub discovery: Option<Value>,
}

impl Verdict {
    fn unavailable(reason: &'static str, message: String) -> Self {
        Self {
            available: false,
            reason,
            message,
            endpoints: Vec::new(),
            discovery: None,
        }
    }
}

/// Checks `remote` (its endpoints are ignored: they are looked up again).
pub async fn check(api: &Api, remote: &Remote) -> Verdict {
    let endpoints = match resolve(api, remote).await {
        Ok(e) => e,
        Err(v) => return v,
    };
    let path = format!("/apis/{}/{}", remote.group, remote.version);
    let mut last = String::new();
    let targets = transport::targets(&endpoints, &remote.server_name(), remote.trust_hash);
    for (ep, target) in endpoints.iter().zip(&targets) {
        match get(api, remote, &target.endpoint, &path, "application/json").await {
            Ok((200..=299, body)) => {
                return Verdict {
                    available: true,
                    reason: "Passed",
                    message: "all checks passed".into(),
                    endpoints,
                    discovery: serde_json::from_slice(&body).ok(),
                };
            }
            Ok((code, _)) => {
                let url = url(ep, &path);
                last = format!(
                    "failing or missing response from {url}: bad status from {url}: {code}"
                );
            }
            Err(e) => last = e,
        }
    }
    Verdict {
        endpoints,
        ..Verdict::unavailable("FailedDiscoveryCheck", last)
    }
}

fn url((host, port): &(String, u16), path: &str) -> String {
    let host = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(a)) => format!("[{a}]"),
        _ => host.clone(),
    };
    format!("https://{host}:{port}{path}")
}

/// The Service's ready endpoints for the APIService's port, or why there
/// are none.
async fn resolve(api: &Api, remote: &Remote) -> Result<Vec<(String, u16)>, Verdict> {
    let svc = &remote.service;
    let (ns, name) = (&svc.namespace, &svc.name);
    let access = |e: String| {
        Verdict::unavailable(
            "ServiceAccessError",
            format!("service/{name} in {ns:?} cannot be checked due to: {e}"),
        )
    };
    let services = api.builtin("", "services").map_err(|e| access(e.message))?;
    let service = api
        .storage()
        .get(&services.storage_key, ns, name)
        .await
        .map_err(|e| access(format!("{e:?}")))?
        .map(|o| o.to_value())
        .ok_or_else(|| {
            Verdict::unavailable(
                "ServiceNotFound",
                format!("service/{name} in {ns:?} is not present"),
            )
        })?;
    if meta::str_at(&service, "/spec/type") == "ExternalName" {
        let host = meta::str_at(&service, "/spec/externalName").to_string();
        return Ok(vec![(host, svc.port)]);
    }
    let port_name = endpoints::port_name(&service, svc.port).ok_or_else(|| {
        Verdict::unavailable(
            "ServicePortError",
            format!(
                "service/{name} in {ns:?} is not listening on port {}",
                svc.port
            ),
        )
    })?;
    let slices_info = api
        .builtin("discovery.k8s.io", "endpointslices")
        .map_err(|e| access(e.message))?;
    let slices: Vec<Value> = crate::storage::list_in(api.storage(), &slices_info, ns)
        .await
        .map_err(|e| {
            Verdict::unavailable(
                "EndpointsAccessError",
                format!(
                    "service/{name} in {ns:?} cannot be checked due to: {}",
                    e.message
                ),
            )
        })?
        .iter()
        .map(|s| s.to_value())
        .filter(|s| endpoints::of_service(s, name))
        .collect();
    if slices.is_empty() {
        return Err(Verdict::unavailable(
            "EndpointsNotFound",
            format!("cannot find endpointslices for service/{name} in {ns:?}"),
        ));
    }
    let ready = endpoints::ready(&slices, &port_name);
    if ready.is_empty() {
        return Err(Verdict::unavailable(
            "MissingEndpoints",
            format!(
                "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
            ),
        ));
    }
    Ok(ready)
}

/// GETs `path` from the remote at `ep` as the aggregator itself (kube's
/// `system:kube-aggregator` in `system:masters`): the status and body, or
/// kube's words for why there was none.
pub async fn get(
    api: &Api,
    remote: &Remote,
    ep: &crate::proxy::dial::Endpoint,
    path: &str,
    accept: &str,
) -> Result<(u16, Bytes), String> {
    let url = url(&(ep.host.clone(), ep.port), path);
    let failed = |e: &dyn std::fmt::Display| {
        format!("failing or missing response from {url}: Get {url:?}: {e}")
    };
    let call = async {
        let stream = transport::connect(api, remote, ep)
            .await
            .map_err(|e| failed(&e))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(crate::proxy::dial::BackendIo::new(stream))
                .await
                .map_err(|e| failed(&e))?;
        glommio::spawn_local(async move {
            let _ = conn.await;
        })
        .detach();
        let req = Request::get(path)
            .header(header::HOST, ep.authority())
            .header(header::ACCEPT, accept)
            .header("x-remote-user", "system:kube-aggregator")
            .header("x-remote-group", "system:masters")
            .body(Empty::<Bytes>::new())
            .map_err(|e| failed(&e))?;
        let resp = sender.send_request(req).await.map_err(|e| failed(&e))?;
        let status = resp.status().as_u16();
        let body = http_body_util::Limited::new(resp.into_body(), MAX_DOCUMENT)
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        Ok((status, body))
    };
    let expired = async {
        glommio::timer::Timer::new(PROBE_TIMEOUT).await;
        Err(format!("timed out waiting for {url}"))
    };
    futures_lite::future::or(call, expired).await
}
