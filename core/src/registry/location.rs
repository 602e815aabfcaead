//! Where the connect subresources lead (kube's `ResourceLocation`s): a
//! pod's logs and streams to its node's kubelet, `nodes/proxy` to a
//! kubelet or a port on the node, `pods/proxy` to a pod's address,
//! `services/proxy` to one of the Service's endpoints.

use crate::meta::{array_at, str_at};
use crate::status::ApiError;
use serde_json::Value;
use std::net::IpAddr;

/// kube's default port for kubelets that do not publish theirs.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

fn items<'a>(v: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    array_at(v, pointer).iter()
}

/// `name`, `name:port` or `scheme:name:port` (scheme http or https), as
/// the connect subresources name their target. None when malformed.
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    let scheme_ok = matches!(scheme, "" | "http" | "https");
    (scheme_ok && !name.is_empty()).then_some((scheme, name, port))
}

/// A node's kubelet: the address of the first preferred type the node
/// reports, and the port it publishes.
pub fn kubelet_address(node: &Value, preferred: &[String]) -> Result<(String, u16), ApiError> {
    let name = crate::meta::name(node);
    let addresses: Vec<(&str, &str)> = items(node, "/status/addresses")
        .map(|a| (str_at(a, "/type"), str_at(a, "/address")))
        .filter(|(_, addr)| !addr.is_empty())
        .collect();
    let chosen = preferred
        .iter()
        .find_map(|t| addresses.iter().find(|(kind, _)| kind == t));
    let Some((_, host)) = chosen else {
        let known: Vec<String> = addresses
            .iter()
            .map(|(t, a)| format!("{{{t} {a}}}"))
            .collect();
        return Err(ApiError::bad_request(format!(
            "no preferred addresses found for node {name:?}; known addresses: [{}]",
            known.join(" ")
        )));
    };
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .filter(|p| (1..=65535).contains(p))
        .map_or(DEFAULT_KUBELET_PORT, |p| p as u16);
    Ok((host.to_string(), port))
}

/// The container a log or stream request means: the one named, or the
/// pod's only container.
pub fn container<'a>(pod: &'a Value, asked: &'a str) -> Result<&'a str, ApiError> {
    let name = crate::meta::name(pod);
    let names =
        |list: &str| -> Vec<&'a str> { items(pod, list).map(|c| str_at(c, "/name")).collect() };
    let (main, init, ephemeral) = (
        names("/spec/containers"),
        names("/spec/initContainers"),
        names("/spec/ephemeralContainers"),
    );
    if asked.is_empty() {
        if main.len() == 1 {
            return Ok(main[0]);
        }
        let mut msg = format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            main.join(" ")
        );
        if !init.is_empty() {
            msg.push_str(&format!(
                " or one of the init containers: [{}]",
                init.join(" ")
            ));
        }
        if !ephemeral.is_empty() {
            msg.push_str(&format!(
                " or one of the ephemeral containers: [{}]",
                ephemeral.join(" ")
            ));
        }
        return Err(ApiError::bad_request(msg));
    }
    if main
        .iter()
        .chain(&init)
        .chain(&ephemeral)
        .any(|c| *c == asked)
    {
        return Ok(asked);
    }
    Err(ApiError::bad_request(format!(
        "container {asked} is not valid for pod {name}"
    )))
}

/// The node a stream (exec, attach, port-forward) goes through: a pod
/// not yet scheduled, or finished, has none.
pub fn stream_node<'a>(pod: &'a Value, what: &str) -> Result<&'a str, ApiError> {
    let name = crate::meta::name(pod);
    let node = str_at(pod, "/spec/nodeName");
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let phase = str_at(pod, "/status/phase");
    if what != "portforward" && matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::bad_request(format!(
            "cannot {what} into a container in a completed pod; current phase is {phase}"
        )));
    }
    Ok(node)
}

/// A pod's address and port for `pods/proxy`: the port asked for, or the
/// first its containers declare. Only globally routable addresses: the
/// server must not become a way into its own host.
pub fn pod_address(pod: &Value, port: &str) -> Result<(String, Option<u16>), ApiError> {
    let ip = str_at(pod, "/status/podIP");
    let routable = ip.parse::<IpAddr>().is_ok_and(|a| is_global_unicast(&a));
    if !routable {
        return Err(ApiError::bad_request("address not allowed"));
    }
    let port = if port.is_empty() {
        items(pod, "/spec/containers")
            .flat_map(|c| items(c, "/ports"))
            .find_map(|p| p.get("containerPort").and_then(Value::as_u64))
            .map(|p| p as u16)
    } else {
        Some(parse_port(port)?)
    };
    Ok((ip.to_string(), port))
}

/// Go's `IP.IsGlobalUnicast`: not unspecified, loopback, multicast,
/// link-local or the IPv4 broadcast address.
pub fn is_global_unicast(ip: &IpAddr) -> bool {
    // An IPv4-mapped IPv6 address is judged as the IPv4 address it is.
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_multicast()
                || a.is_link_local()
                || a.is_broadcast())
        }
        IpAddr::V6(a) => {
            let link_local = (a.segments()[0] & 0xffc0) == 0xfe80;
            !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || link_local)
        }
    }
}

fn parse_port(port: &str) -> Result<u16, ApiError> {
    port.parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::bad_request(format!("invalid port {port:?}")))
}

/// One endpoint of a Service for `services/proxy`: the Service port named
/// (or numbered) by `port` (the only one when none is named), then an
/// address of its Endpoints that points at an existing pod with that
/// address (`pod_ips` answers which addresses a pod has). `pick` chooses
/// among the candidates, as kube picks at random.
pub fn service_endpoint(
    service: &Value,
    endpoints: Option<&Value>,
    port: &str,
    pod_ips: impl Fn(&str, &str) -> Vec<String>,
    pick: impl Fn(usize) -> usize,
) -> Result<(String, u16), ApiError> {
    let name = crate::meta::name(service);
    let ns = crate::meta::namespace(service);
    let ports: Vec<&Value> = items(service, "/spec/ports").collect();
    let port_name = if port.is_empty() {
        match ports.as_slice() {
            [only] => str_at(only, "/name"),
            _ => "",
        }
    } else {
        ports
            .iter()
            .find(|p| {
                str_at(p, "/name") == port
                    || p.get("port")
                        .and_then(Value::as_u64)
                        .map(|n| n.to_string())
                        .as_deref()
                        == Some(port)
            })
            .map(|p| str_at(p, "/name"))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "no service port {port:?} found for service {name:?}"
                ))
            })?
    };
    let unavailable = || {
        ApiError::new(
            503,
            "ServiceUnavailable",
            format!("no endpoints available for service {name:?}"),
        )
    };
    let Some(eps) = endpoints else {
        return Err(unavailable());
    };
    for subset in items(eps, "/subsets") {
        let Some(p) = items(subset, "/ports").find(|p| str_at(p, "/name") == port_name) else {
            continue;
        };
        let number = p.get("port").and_then(Value::as_u64).unwrap_or(0) as u16;
        let valid: Vec<&str> = items(subset, "/addresses")
            .filter(|a| {
                let ip = str_at(a, "/ip");
                let r = a.get("targetRef").unwrap_or(&Value::Null);
                str_at(r, "/kind") == "Pod"
                    && pod_ips(
                        if str_at(r, "/namespace").is_empty() {
                            ns
                        } else {
                            str_at(r, "/namespace")
                        },
                        str_at(r, "/name"),
                    )
                    .iter()
                    .any(|x| x == ip)
            })
            .map(|a| str_at(a, "/ip"))
            .collect();
        if !valid.is_empty() && number > 0 {
            return Ok((valid[pick(valid.len()) % valid.len()].to_string(), number));
        }
    }
    Err(unavailable())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_name_scheme_and_port() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(split_scheme_name_port("web:80"), Some(("", "web", "80")));
        assert_eq!(
            split_scheme_name_port("https:web:443"),
            Some(("https", "web", "443"))
        );
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
    }

    #[test]
    fn kubelets_by_preferred_address() {
        let node = json!({"metadata": {"name": "n1"}, "status": {
            "addresses": [{"type": "Hostname", "address": "n1.local"}, {"type": "InternalIP", "address": "10.1.2.3"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10255}}}});
        let prefer = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            kubelet_address(&node, &prefer(&["InternalIP", "Hostname"])).unwrap(),
            ("10.1.2.3".into(), 10255)
        );
        assert_eq!(
            kubelet_address(&node, &prefer(&["Hostname"])).unwrap().0,
            "n1.local"
        );
        let bare = json!({"metadata": {"name": "n2"}});
        let e = kubelet_address(&bare, &prefer(&["InternalIP"])).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.contains("no preferred addresses found"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_container_is_named_or_the_only_one() {
        let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(container(&one, "").unwrap(), "c");
        assert_eq!(
            container(&one, "x").unwrap_err().message,
            "container x is not valid for pod p"
        );
        let two = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}],
                                                           "initContainers": [{"name": "i"}]}});
        assert_eq!(
            container(&two, "").unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
        );
        assert_eq!(container(&two, "i").unwrap(), "i");
    }

    #[test]
    fn streams_need_a_running_pod_on_a_node() {
        let pending = json!({"metadata": {"name": "p"}, "spec": {}});
        assert_eq!(
            stream_node(&pending, "exec").unwrap_err().message,
            "pod p does not have a host assigned"
        );
        let done = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        assert!(stream_node(&done, "exec").is_err());
        assert_eq!(stream_node(&done, "portforward").unwrap(), "n");
    }

    #[test]
    fn pod_proxies_only_reach_routable_addresses() {
        let pod = |ip: &str| json!({"status": {"podIP": ip}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080}]}]}});
        assert_eq!(
            pod_address(&pod("10.0.0.5"), "").unwrap(),
            ("10.0.0.5".into(), Some(8080))
        );
        assert_eq!(pod_address(&pod("10.0.0.5"), "81").unwrap().1, Some(81));
        for bad in [
            "127.0.0.1",
            "169.254.169.254",
            "::1",
            "",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert_eq!(
                pod_address(&pod(bad), "").unwrap_err().message,
                "address not allowed",
                "{bad}"
            );
        }
    }

    #[test]
    fn service_endpoints_must_point_at_their_pods() {
        let svc = json!({"metadata": {"name": "web", "namespace": "ns"},
                         "spec": {"ports": [{"name": "http", "port": 80}]}});
        let eps = json!({"subsets": [{"ports": [{"name": "http", "port": 8080}], "addresses": [
            {"ip": "10.0.0.9"},
            {"ip": "10.0.0.7", "targetRef": {"kind": "Pod", "name": "web-1"}}
        ]}]});
        let ips = |_: &str, pod: &str| {
            if pod == "web-1" {
                vec!["10.0.0.7".to_string()]
            } else {
                vec![]
            }
        };
        assert_eq!(
            service_endpoint(&svc, Some(&eps), "", ips, |_| 0).unwrap(),
            ("10.0.0.7".into(), 8080)
        );
        assert_eq!(
            service_endpoint(&svc, Some(&eps), "http", ips, |_| 0)
                .unwrap()
                .1,
            8080
        );
        assert_eq!(
            service_endpoint(&svc, Some(&eps), "80", ips, |_| 0)
                .unwrap()
                .1,
            8080
        );
        assert_eq!(
            service_endpoint(&svc, None, "", ips, |_| 0)
                .unwrap_err()
                .code,
            503
        );
        assert_eq!(
            service_endpoint(&svc, Some(&eps), "", |_: &str, _: &str| vec![], |_| 0)
                .unwrap_err()
                .code,
            503
        );
        assert_eq!(
            service_endpoint(&svc, Some(&eps), "dns", ips, |_| 0)
                .unwrap_err()
                .code,
            400
        );
    }
}
