//! Workload defaults (apps/v1, batch/v1 and replication controllers): the
//! kind's own fields, then the pod template's.

use super::pod;
use super::util::{child, set};
use serde_json::{json, Value};

pub fn deployment(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "replicas", 1);
    rolling_update(spec, "strategy", |ru| {
        set(ru, "maxUnavailable", "25%");
        set(ru, "maxSurge", "25%");
    });
    set(spec, "revisionHistoryLimit", 10);
    set(spec, "progressDeadlineSeconds", 600);
    pod::template(spec.get_mut("template"));
}

/// A strategy under `key` defaulting to RollingUpdate, whose
/// `rollingUpdate` parameters `params` fills when that is the type.
fn rolling_update(spec: &mut Value, key: &str, params: impl FnOnce(&mut Value)) {
    let Some(strategy) = child(spec, key) else {
        return;
    };
    set(strategy, "type", "RollingUpdate");
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        if let Some(ru) = child(strategy, "rollingUpdate") {
            params(ru);
        }
    }
}

pub fn replica_set(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "replicas", 1);
    pod::template(spec.get_mut("template"));
}

pub fn replication_controller(obj: &mut Value) {
    replica_set(obj);
}

pub fn stateful_set(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "replicas", 1);
    set(spec, "podManagementPolicy", "OrderedReady");
    rolling_update(spec, "updateStrategy", |ru| set(ru, "partition", 0));
    set(spec, "revisionHistoryLimit", 10);
    set(
        spec,
        "persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
    pod::template(spec.get_mut("template"));
}

pub fn daemon_set(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    rolling_update(spec, "updateStrategy", |ru| {
        set(ru, "maxUnavailable", 1);
        set(ru, "maxSurge", 0);
    });
    set(spec, "revisionHistoryLimit", 10);
    pod::template(spec.get_mut("template"));
}

pub fn job(spec: Option<&mut Value>) {
    let Some(spec) = spec.filter(|s| s.is_object()) else {
        return;
    };
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    set(spec, "parallelism", 1);
    set(spec, "backoffLimit", 6);
    set(spec, "completionMode", "NonIndexed");
    set(spec, "suspend", false);
    set(spec, "podReplacementPolicy", "TerminatingOrFailed");
    pod::template(spec.get_mut("template"));
}

pub fn cron_job(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    set(spec, "concurrencyPolicy", "Allow");
    set(spec, "suspend", false);
    set(spec, "successfulJobsHistoryLimit", 3);
    set(spec, "failedJobsHistoryLimit", 1);
    if let Some(template) = spec.get_mut("jobTemplate") {
        job(template.get_mut("spec"));
    }
}
