//! Dynamic resource allocation (resource.k8s.io/v1, on by default since
//! kube 1.34): the scheduler's DRA plugin and the controller-manager's
//! claim controller watch all four kinds.

use super::{entry, Entry};
use crate::catalog::Printer;

pub(super) fn resources() -> Vec<Entry> {
    let dra = |kind: &str, plural: &str, namespaced: bool| {
        entry("resource.k8s.io", "v1", kind, plural, namespaced)
    };
    vec![
        dra("DeviceClass", "deviceclasses", false).generation(),
        dra("ResourceClaim", "resourceclaims", true)
            .status()
            .initial_status("{}")
            .printer(Printer::ResourceClaim),
        dra("ResourceClaimTemplate", "resourceclaimtemplates", true),
        dra("ResourceSlice", "resourceslices", false)
            .generation()
            .printer(Printer::ResourceSlice)
            .fields(&[
                ("spec.nodeName", &["spec", "nodeName"]),
                ("spec.driver", &["spec", "driver"]),
            ]),
    ]
}
