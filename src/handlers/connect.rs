//! The connect subresources: `pods/log`, `pods/exec`, `pods/attach` and
//! `pods/portforward` go to the pod's kubelet; `nodes/proxy`,
//! `pods/proxy` and `services/proxy` forward any request to a kubelet, a
//! pod or one of a Service's endpoints. Each answers a clear Status when
//! there is nothing to reach (a pod not scheduled, a node without an
//! address, a Service without endpoints), and passes protocol upgrades
//! through (see `crate::proxy`).

use super::{Api, HandlerResult, ResourceRequest};
use crate::proxy::{self, Endpoint, Scheme};
use crate::storage::{Storage, StorageResult};
use http::Request;
use hyper::body::Incoming;
use kubeshard_core::registry::location;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::rc::Rc;

/// The subresources this handler serves, with the verbs each takes.
pub fn serves(subresource: &str, verb: &str) -> Option<bool> {
    let ok = match subresource {
        "log" => verb == "get",
        "exec" | "attach" | "portforward" => matches!(verb, "get" | "create"),
        "proxy" => matches!(verb, "get" | "create" | "update" | "patch" | "delete"),
        _ => return None,
    };
    Some(ok)
}

/// Log options kube passes on to the kubelet.
const LOG_PARAMS: &[&str] = &[
    "follow",
    "previous",
    "timestamps",
    "sinceSeconds",
    "sinceTime",
    "limitBytes",
    "tailLines",
];

/// Exec and attach options, renamed as the kubelet reads them.
const STREAM_PARAMS: &[(&str, &str)] = &[
    ("stdin", "input"),
    ("stdout", "output"),
    ("stderr", "error"),
    ("tty", "tty"),
];

fn truthy(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

/// Every query parameter, repeated ones included (`command`).
fn query_pairs(req: &Request<Incoming>) -> Vec<(String, String)> {
    form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn encode(pairs: &[(String, String)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

fn with_query(path: String, query: &str) -> String {
    if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    }
}

fn enc(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC).to_string()
}

pub async fn serve(api: &Rc<Api>, rr: &ResourceRequest, req: Request<Incoming>) -> HandlerResult {
    let kind = (rr.resource.group.as_str(), rr.resource.plural.as_str());
    match (kind, rr.info.subresource.as_str()) {
        (("", "pods" | "nodes" | "services"), "proxy") => proxy_subresource(api, rr, req).await,
        (("", "pods"), sub) => kubelet_stream(api, rr, sub, req).await,
        _ => Err(super::not_found_path()),
    }
}

async fn fetch(api: &Api, plural: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
    let key = api.config.keys.builtin("", plural);
    api.storage()
        .get(&key, namespace, name)
        .await
        .or_status()?
        .map(|o| o.to_value())
        .ok_or_else(|| ApiError::not_found("", plural, name))
}

async fn kubelet_of(api: &Api, node_name: &str) -> Result<Endpoint, ApiError> {
    let node = fetch(api, "nodes", "", node_name).await?;
    let backends = &api.config.backends;
    let (host, port) = location::kubelet_address(&node, &backends.preferred_address_types)?;
    Ok(Endpoint {
        scheme: Scheme::Https,
        host,
        port,
        kubelet: true,
        routable_only: false,
    })
}

/// Logs, exec, attach and port-forward: the kubelet's own paths.
async fn kubelet_stream(
    api: &Api,
    rr: &ResourceRequest,
    sub: &str,
    req: Request<Incoming>,
) -> HandlerResult {
    let (ns, name) = (rr.info.namespace.as_str(), rr.info.name.as_str());
    let pod = fetch(api, "pods", ns, name).await?;
    let pairs = query_pairs(&req);
    let param = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let path = match sub {
        "log" => {
            let container = location::container(&pod, param("container"))?;
            let node = kubeshard_core::meta::str_at(&pod, "/spec/nodeName");
            if node.is_empty() {
                // Not scheduled: no logs yet, and no error (as kube).
                return Ok(crate::render::response::text(""));
            }
            let kept: Vec<(String, String)> = pairs
                .iter()
                .filter(|(k, _)| LOG_PARAMS.contains(&k.as_str()))
                .cloned()
                .collect();
            let path = format!(
                "/containerLogs/{}/{}/{}",
                enc(ns),
                enc(name),
                enc(container)
            );
            let ep = kubelet_of(api, node).await?;
            return proxy::forward(
                &api.config.backends.dialer,
                &ep,
                &with_query(path, &encode(&kept)),
                req,
                &proxy::KUBELET,
            )
            .await;
        }
        "exec" | "attach" => {
            let container = location::container(&pod, param("container"))?;
            let mut kept = Vec::new();
            if sub == "exec" {
                let commands: Vec<&(String, String)> =
                    pairs.iter().filter(|(k, _)| k == "command").collect();
                if commands.is_empty() {
                    return Err(ApiError::bad_request("you must specify at least 1 command"));
                }
                kept.extend(commands.into_iter().cloned());
            }
            let mut any_stream = false;
            for (ours, theirs) in STREAM_PARAMS {
                if truthy(param(ours)) {
                    any_stream |= *ours != "tty";
                    kept.push((theirs.to_string(), "1".to_string()));
                }
            }
            if !any_stream {
                return Err(ApiError::bad_request(
                    "you must specify at least one of stdin, stdout, stderr",
                ));
            }
            format!(
                "/{sub}/{}/{}/{}?{}",
                enc(ns),
                enc(name),
                enc(container),
                encode(&kept)
            )
        }
        "portforward" => {
            let kept: Vec<(String, String)> = pairs
                .iter()
                .filter(|(k, _)| k == "ports")
                .cloned()
                .collect();
            with_query(
                format!("/portForward/{}/{}", enc(ns), enc(name)),
                &encode(&kept),
            )
        }
        _ => return Err(super::not_found_path()),
    };
    let node = location::stream_node(&pod, sub)?;
    let ep = kubelet_of(api, node).await?;
    proxy::forward(
        &api.config.backends.dialer,
        &ep,
        &path,
        req,
        &proxy::KUBELET,
    )
    .await
}

/// What follows `/proxy` in the request path (kept as sent, trailing
/// slash included), plus the query.
fn proxied_path(rr: &ResourceRequest, req: &Request<Incoming>) -> String {
    let path = req.uri().path();
    // Segments before the forwarded path: /api/v1 or /apis/{g}/{v},
    // /namespaces/{ns} when namespaced, then {resource}/{name}/proxy —
    // counted, not searched for: a name may well contain "proxy".
    let prefix = if rr.info.api_prefix == "api" { 2 } else { 3 };
    let scoped = if rr.info.namespace.is_empty() { 0 } else { 2 };
    let skip = prefix + scoped + 3;
    let rest = path
        .match_indices('/')
        .nth(skip)
        .map_or("", |(i, _)| &path[i..]);
    let rest = if rest.is_empty() { "/" } else { rest };
    match req.uri().query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    }
}

/// The target a proxy subresource names: `name`, `name:port` or
/// `scheme:name:port`.
fn target<'a>(kind: &str, id: &'a str) -> Result<(Scheme, &'a str, &'a str), ApiError> {
    let invalid = || ApiError::bad_request(format!("invalid {kind} request {id:?}"));
    let (scheme, name, port) = location::split_scheme_name_port(id).ok_or_else(invalid)?;
    Ok((Scheme::parse(scheme).ok_or_else(invalid)?, name, port))
}

/// `nodes/proxy`, `pods/proxy`, `services/proxy`: where to, then forward.
async fn proxy_subresource(
    api: &Api,
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> HandlerResult {
    let ep = match rr.resource.plural.as_str() {
        "nodes" => node_target(api, rr).await?,
        "pods" => pod_target(api, rr).await?,
        _ => service_target(api, rr).await?,
    };
    let path = proxied_path(rr, &req);
    proxy::forward(
        &api.config.backends.dialer,
        &ep,
        &path,
        req,
        &proxy::PROXIED,
    )
    .await
}

async fn node_target(api: &Api, rr: &ResourceRequest) -> Result<Endpoint, ApiError> {
    let (scheme, name, port) = target("node", &rr.info.name)?;
    let kubelet = kubelet_of(api, name).await?;
    if port.is_empty() || port.parse::<u16>().ok() == Some(kubelet.port) {
        return Ok(kubelet);
    }
    // Another port on the node: plain by default, no kubelet credentials,
    // and never (once resolved) the node's own loopback or link-local.
    Ok(Endpoint {
        scheme,
        host: kubelet.host,
        port: port
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid port {port:?}")))?,
        kubelet: false,
        routable_only: true,
    })
}

async fn pod_target(api: &Api, rr: &ResourceRequest) -> Result<Endpoint, ApiError> {
    let (scheme, name, port) = target("pod", &rr.info.name)?;
    let pod = fetch(api, "pods", &rr.info.namespace, name).await?;
    let (host, port) = location::pod_address(&pod, port)?;
    Ok(Endpoint {
        scheme,
        host,
        port: port.unwrap_or(if scheme == Scheme::Https { 443 } else { 80 }),
        kubelet: false,
        routable_only: true,
    })
}

async fn service_target(api: &Api, rr: &ResourceRequest) -> Result<Endpoint, ApiError> {
    let ns = rr.info.namespace.as_str();
    let (scheme, name, port) = target("service", &rr.info.name)?;
    let service = fetch(api, "services", ns, name).await?;
    let endpoints = fetch(api, "endpoints", ns, name).await.ok();
    // The pods the endpoints name, for checking each address is theirs.
    let mut pods = std::collections::HashMap::new();
    if let Some(eps) = &endpoints {
        let targets = eps
            .pointer("/subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|s| {
                s.get("addresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter_map(|a| a.pointer("/targetRef/name").and_then(Value::as_str));
        for pod_name in targets {
            if !pods.contains_key(pod_name) {
                let ips = match fetch(api, "pods", ns, pod_name).await {
                    Ok(p) => pod_ips(&p),
                    Err(_) => Vec::new(),
                };
                pods.insert(pod_name.to_string(), ips);
            }
        }
    }
    let (host, port) = location::service_endpoint(
        &service,
        endpoints.as_ref(),
        port,
        |_, pod| pods.get(pod).cloned().unwrap_or_default(),
        |n| rand::random::<usize>() % n,
    )?;
    Ok(Endpoint {
        scheme,
        host,
        port,
        kubelet: false,
        routable_only: true,
    })
}

fn pod_ips(pod: &Value) -> Vec<String> {
    let mut ips: Vec<String> = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("ip").and_then(Value::as_str).map(str::to_string))
        .collect();
    if let Some(ip) = pod.pointer("/status/podIP").and_then(Value::as_str) {
        if !ips.iter().any(|x| x == ip) {
            ips.push(ip.to_string());
        }
    }
    ips
}
