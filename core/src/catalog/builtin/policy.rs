//! What bounds pods: disruption budgets, priorities, runtime classes,
//! and a namespace's limit ranges and quotas.

use super::{entry, Entry};
use crate::catalog::Printer;

pub(super) fn resources() -> Vec<Entry> {
    vec![
        entry(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            true,
        )
        .short(&["pdb"])
        .status()
        .generation()
        .initial_status(
            r#"{"disruptionsAllowed": 0, "currentHealthy": 0,
                    "desiredHealthy": 0, "expectedPods": 0}"#,
        )
        .printer(Printer::PodDisruptionBudget),
        entry(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            false,
        )
        .short(&["pc"])
        .generation()
        .printer(Printer::PriorityClass),
        entry("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false)
            .printer(Printer::RuntimeClass),
        entry("", "v1", "LimitRange", "limitranges", true)
            .short(&["limits"])
            .printer(Printer::LimitRange),
        entry("", "v1", "ResourceQuota", "resourcequotas", true)
            .short(&["quota"])
            .status()
            .initial_status("{}")
            .printer(Printer::ResourceQuota),
    ]
}
