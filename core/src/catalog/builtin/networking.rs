//! How traffic reaches pods: Ingresses and their classes, network
//! policies, EndpointSlices, and the IP
//! addresses and ranges Services draw from.

use super::{entry, Entry};
use crate::catalog::{NameRule, Printer};

pub(super) fn resources() -> Vec<Entry> {
    let net = |kind: &str, plural: &str, namespaced: bool| {
        entry("networking.k8s.io", "v1", kind, plural, namespaced)
    };
    vec![
        net("Ingress", "ingresses", true)
            .short(&["ing"])
            .status()
            .generation()
            .initial_status(r#"{"loadBalancer": {}}"#)
            .printer(Printer::Ingress),
        net("IngressClass", "ingressclasses", false)
            .generation()
            .printer(Printer::IngressClass),
        net("NetworkPolicy", "networkpolicies", true)
            .short(&["netpol"])
            .generation()
            .printer(Printer::NetworkPolicy),
        entry(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
        )
        .generation()
        .printer(Printer::EndpointSlice),
        // The objects of the allocator behind Service cluster IPs.
        net("IPAddress", "ipaddresses", false)
            .short(&["ip"])
            .name_rule(NameRule::IpAddress)
            .printer(Printer::IpAddress),
        net("ServiceCIDR", "servicecidrs", false)
            .status()
            .initial_status("{}")
            .printer(Printer::ServiceCidr),
    ]
}
