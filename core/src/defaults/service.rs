//! Service, Endpoints and Node defaults.

use super::util::{child, each, set, str_of};
use serde_json::{json, Value};

pub fn service(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "sessionAffinity", "None");
    match str_of(spec, "sessionAffinity") {
        Some("None") => {
            if let Some(m) = spec.as_object_mut() {
                m.shift_remove("sessionAffinityConfig");
            }
        }
        Some("ClientIP") => {
            if let Some(c) = child(spec, "sessionAffinityConfig").and_then(|c| child(c, "clientIP"))
            {
                set(c, "timeoutSeconds", 10800);
            }
        }
        _ => {}
    }
    set(spec, "type", "ClusterIP");
    for port in each(spec, "ports") {
        set(port, "protocol", "TCP");
        let unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if unset {
            if let Some(p) = port.get("port").cloned() {
                port["targetPort"] = p;
            }
        }
    }
    let ty = str_of(spec, "type").unwrap_or("").to_string();
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let externally_accessible =
        ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && external_ips);
    if externally_accessible {
        set(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        set(spec, "internalTrafficPolicy", "Cluster");
        // What kube's IP allocation records on a single-stack IPv4 cluster.
        set(spec, "ipFamilyPolicy", "SingleStack");
        set(spec, "ipFamilies", json!(["IPv4"]));
    }
    if ty == "LoadBalancer" {
        set(spec, "allocateLoadBalancerNodePorts", true);
    }
}

pub fn endpoints(obj: &mut Value) {
    for subset in each(obj, "subsets") {
        for port in each(subset, "ports") {
            set(port, "protocol", "TCP");
        }
    }
}

/// Allocatable defaults to capacity.
pub fn node(obj: &mut Value) {
    let Some(capacity) = obj.pointer("/status/capacity").cloned() else {
        return;
    };
    if let Some(status) = obj.get_mut("status") {
        set(status, "allocatable", capacity);
    }
}
