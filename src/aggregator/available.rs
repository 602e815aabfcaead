//! Whether a service-backed APIService is available, checked as kube's
//! availability controller checks it — the Service exists and has the
//! port, its EndpointSlices have ready addresses for that port, and a GET
//! of the group version's discovery document answers 2xx within 5 s — and
//! said in kube's reasons and messages. The discovery document fetched by
//! the check is kept: it is what the group's discovery shows.

use super::{transport, Remote};
use crate::context::Api;
use crate::proxy::dial::Endpoint;
use crate::proxy::endpoints;
use crate::proxy::forward;
use crate::storage::Storage;
use bytes::Bytes;
use http::header;
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
    /// The group version's aggregated discovery (v2) entry, converted
    /// from the APIResourceList the check fetched.
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
    let targets = transport::targets(&endpoints, &remote.service.server_name(), remote.trust_hash);
    for target in &targets {
        match get(api, remote, &target.endpoint, &path, "application/json").await {
            Ok((200..=299, body)) => {
                return Verdict {
                    available: true,
                    reason: "Passed",
                    message: "all checks passed".into(),
                    endpoints,
                    discovery: serde_json::from_slice(&body)
                        .ok()
                        .map(|list| super::convert::aggregated_version(&list, &remote.version)),
                };
            }
            Ok((code, _)) => {
                let url = format!("https://{}{path}", target.endpoint.authority());
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
    ep: &Endpoint,
    path: &str,
    accept: &str,
) -> Result<(u16, Bytes), String> {
    let url = format!("https://{}{path}", ep.authority());
    let failed = |e: &dyn std::fmt::Display| {
        format!("failing or missing response from {url}: Get {url:?}: {e}")
    };
    let call = async {
        let stream = transport::connect(api, remote, ep)
            .await
            .map_err(|e| failed(&e))?;
        let headers = [
            (header::ACCEPT.as_str(), accept),
            ("x-remote-user", "system:kube-aggregator"),
            ("x-remote-group", "system:masters"),
        ];
        forward::get_once(stream, ep, path, &headers, MAX_DOCUMENT)
            .await
            .map_err(|e| failed(&e))
    };
    let expired = async {
        glommio::timer::Timer::new(PROBE_TIMEOUT).await;
        Err(format!("timed out waiting for {url}"))
    };
    futures_lite::future::or(call, expired).await
}
