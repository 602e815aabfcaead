//! The workload controllers' kinds: apps, batch, and the core
//! ReplicationController.

use super::{entry, Entry};
use crate::catalog::{field_path, KindHooks, Printer, ScaleSelector, ScaleSpec, StatusMetadata};

/// The scale of a workload whose selector is a `metav1.LabelSelector` at
/// `spec.selector`.
fn workload_scale() -> ScaleSpec {
    ScaleSpec {
        spec_replicas: field_path(&["spec", "replicas"]),
        status_replicas: field_path(&["status", "replicas"]),
        selector: ScaleSelector::LabelSelector(field_path(&["spec", "selector"])),
    }
}

/// The workload controllers' kinds (apps, batch, and the core
/// ReplicationController). A new one starts with kube's empty status:
/// the fields its status type always serializes, at zero.
pub(super) fn resources() -> Vec<Entry> {
    let workload = |group: &str, kind: &str, plural: &str| {
        entry(group, "v1", kind, plural, true)
            .categories(&["all"])
            .status()
            .generation()
            .status_metadata(StatusMetadata::StoredLabels)
    };
    vec![
        workload("apps", "ReplicaSet", "replicasets")
            .short(&["rs"])
            .initial_status(r#"{"replicas": 0}"#)
            .printer(Printer::ReplicaSet)
            .fields(&[("status.replicas", &["status", "replicas"])])
            .scale(workload_scale()),
        workload("apps", "StatefulSet", "statefulsets")
            .short(&["sts"])
            .initial_status(r#"{"replicas": 0, "availableReplicas": 0}"#)
            .printer(Printer::StatefulSet)
            .scale(workload_scale()),
        workload("apps", "DaemonSet", "daemonsets")
            .short(&["ds"])
            .initial_status(
                r#"{"currentNumberScheduled": 0, "numberMisscheduled": 0,
                    "desiredNumberScheduled": 0, "numberReady": 0}"#,
            )
            .printer(Printer::DaemonSet),
        entry(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            true,
        )
        .printer(Printer::ControllerRevision),
        workload("", "ReplicationController", "replicationcontrollers")
            .short(&["rc"])
            .initial_status(r#"{"replicas": 0}"#)
            .printer(Printer::ReplicaSet)
            .fields(&[("status.replicas", &["status", "replicas"])])
            .scale(ScaleSpec {
                selector: ScaleSelector::LabelMap(field_path(&["spec", "selector"])),
                ..workload_scale()
            }),
        workload("batch", "Job", "jobs")
            .initial_status("{}")
            .hooks(KindHooks::Job)
            .printer(Printer::Job)
            .fields(&[("status.successful", &["status", "succeeded"])]),
        workload("batch", "CronJob", "cronjobs")
            .short(&["cj"])
            .initial_status("{}")
            .printer(Printer::CronJob),
        // The autoscaler that drives the workloads' scale subresources,
        // stored at v2 and served at v1 too.
        hpa("v2"),
        hpa("v1").stored_as("autoscaling", "v2"),
    ]
}

fn hpa(version: &str) -> Entry {
    entry(
        "autoscaling",
        version,
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
    )
    .short(&["hpa"])
    .categories(&["all"])
    .status()
    .initial_status(r#"{"desiredReplicas": 0}"#)
    .printer(Printer::HorizontalPodAutoscaler)
}
