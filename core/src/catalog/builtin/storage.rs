//! Volumes and what provides them: the kinds a scheduler and the volume
//! controllers watch (core PersistentVolumes and claims, storage.k8s.io).

use super::{entry, Entry};
use crate::catalog::Printer;

pub(super) fn resources() -> Vec<Entry> {
    let storage = |kind: &str, plural: &str, namespaced: bool| {
        entry("storage.k8s.io", "v1", kind, plural, namespaced)
    };
    vec![
        // A claim and a volume start Pending (kube's defaulting of an
        // emptied status).
        entry(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            true,
        )
        .short(&["pvc"])
        .status()
        .initial_status(r#"{"phase": "Pending"}"#)
        .printer(Printer::PersistentVolumeClaim),
        entry("", "v1", "PersistentVolume", "persistentvolumes", false)
            .short(&["pv"])
            .status()
            .initial_status(r#"{"phase": "Pending"}"#)
            .printer(Printer::PersistentVolume),
        storage("StorageClass", "storageclasses", false)
            .short(&["sc"])
            .printer(Printer::StorageClass),
        storage("CSIDriver", "csidrivers", false).printer(Printer::CsiDriver),
        storage("CSINode", "csinodes", false).printer(Printer::CsiNode),
        storage("CSIStorageCapacity", "csistoragecapacities", true)
            .printer(Printer::CsiStorageCapacity),
        storage("VolumeAttachment", "volumeattachments", false)
            .status()
            .initial_status("{\"attached\": false}")
            .printer(Printer::VolumeAttachment),
        storage("VolumeAttributesClass", "volumeattributesclasses", false)
            .short(&["vac"])
            .printer(Printer::VolumeAttributesClass),
    ]
}
