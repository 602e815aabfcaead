//! How traffic reaches pods: Ingresses and their classes, network
//! policies, EndpointSlices.

use super::{entry, Entry};
use crate::catalog::Printer;

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
        net("IngressClass", "ingressclasses", false).printer(Printer::IngressClass),
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
        .printer(Printer::EndpointSlice),
    ]
}
