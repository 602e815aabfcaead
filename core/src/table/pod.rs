//! The pod row: READY, STATUS and RESTARTS are computed from the pod's
//! phase, reason, conditions and container states the way kubectl's
//! printer does (init containers first, sidecars counted as containers,
//! Terminating once a deletion is requested).

use super::format::{array_at, or_none, since, str_at};
use super::{Column, Row};
use crate::registry::lifecycle::parse_time;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub const COLUMNS: &[Column] = &[
    Column::name(),
    Column::new(
        "Ready",
        "string",
        "Containers ready out of the containers in the pod.",
        0,
    ),
    Column::new(
        "Status",
        "string",
        "What the pod is doing, summed up from its phase and its containers' states.",
        0,
    ),
    Column::new(
        "Restarts",
        "string",
        "Container restarts, and how long ago the latest one was.",
        0,
    ),
    Column::age(),
    Column::new("IP", "string", "The pod's first IP address.", 1),
    Column::new("Node", "string", "The node the pod is bound to.", 1),
    Column::new(
        "Nominated Node",
        "string",
        "The node the scheduler nominated for a preemption.",
        1,
    ),
    Column::new(
        "Readiness Gates",
        "string",
        "Readiness gates whose condition is true, out of all the pod's gates.",
        1,
    ),
];

/// The node controller's reason for pods on an unreachable node.
const NODE_UNREACHABLE: &str = "NodeLost";

struct Restarts {
    count: i64,
    last: Option<DateTime<Utc>>,
}

impl Restarts {
    fn new() -> Self {
        Self {
            count: 0,
            last: None,
        }
    }

    fn add(&mut self, status: &Value) {
        self.count += status["restartCount"].as_i64().unwrap_or(0);
        let finished = status
            .pointer("/lastState/terminated/finishedAt")
            .and_then(Value::as_str)
            .and_then(parse_time);
        if let Some(t) = finished {
            if self.last.is_none_or(|l| l < t) {
                self.last = Some(t);
            }
        }
    }
}

fn condition_true(pod: &Value, kind: &str) -> bool {
    array_at(pod, "/status/conditions")
        .iter()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// A terminated state's reason, else its signal or exit code.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    match t["reason"].as_str().filter(|r| !r.is_empty()) {
        Some(r) => format!("{prefix}{r}"),
        None => match t["signal"].as_i64().filter(|s| *s != 0) {
            Some(sig) => format!("{prefix}Signal:{sig}"),
            None => format!("{prefix}ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
        },
    }
}

pub fn row(pod: &Value, now: DateTime<Utc>) -> Row {
    let init_specs = array_at(pod, "/spec/initContainers");
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let sidecars = init_specs
        .iter()
        .filter(|c| c["restartPolicy"] == "Always")
        .count();
    let total = array_at(pod, "/spec/containers").len() + sidecars;
    let mut ready = 0usize;
    let phase = str_at(pod, "/status/phase");
    let mut reason = match str_at(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let gated = array_at(pod, "/status/conditions")
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated");
    if gated {
        reason = "SchedulingGated".into();
    }

    let mut restarts = Restarts::new();
    let mut sidecar_restarts = Restarts::new();
    let mut initializing = false;
    let init_statuses = array_at(pod, "/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        restarts.add(c);
        let is_sidecar = sidecar(c["name"].as_str().unwrap_or(""));
        if is_sidecar {
            sidecar_restarts.add(c);
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = str_at(c, "/state/waiting/reason");
        if terminated.is_some_and(|t| t["exitCode"].as_i64().unwrap_or(0) == 0) {
            continue;
        }
        if is_sidecar && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(t) => terminated_reason(t, "Init:"),
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                format!("Init:{waiting_reason}")
            }
            None => format!("Init:{i}/{}", init_specs.len()),
        };
        initializing = true;
        break;
    }

    if !initializing || condition_true(pod, "Initialized") {
        restarts = sidecar_restarts;
        let mut running = false;
        for c in array_at(pod, "/status/containerStatuses").iter().rev() {
            restarts.add(c);
            let waiting = str_at(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = terminated_reason(t, "");
            } else if c["ready"] == true && c.pointer("/state/running").is_some() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            reason = if condition_true(pod, "Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    if deleting && str_at(pod, "/status/reason") == NODE_UNREACHABLE {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_cell = match restarts.last {
        Some(t) if restarts.count != 0 => {
            format!(
                "{} ({} ago)",
                restarts.count,
                super::format::human_duration((now - t).num_seconds())
            )
        }
        _ => restarts.count.to_string(),
    };
    let ip = array_at(pod, "/status/podIPs")
        .first()
        .and_then(|p| p["ip"].as_str())
        .unwrap_or("");
    let gates = array_at(pod, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| condition_true(pod, g["conditionType"].as_str().unwrap_or("")))
            .count();
        format!("{met}/{}", gates.len())
    };
    let conditions = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };
    Row {
        cells: vec![
            json!(str_at(pod, "/metadata/name")),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            json!(since(pod.pointer("/metadata/creationTimestamp"), now)),
            json!(or_none(ip)),
            json!(or_none(str_at(pod, "/spec/nodeName"))),
            json!(or_none(str_at(pod, "/status/nominatedNodeName"))),
            json!(gates_cell),
        ],
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 1, 0, 0).unwrap()
    }

    fn cells(pod: Value) -> Vec<Value> {
        row(&pod, now()).cells
    }

    fn base(status: Value) -> Value {
        json!({"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": status})
    }

    #[test]
    fn pending_pod_without_a_kubelet() {
        let c = cells(base(json!({"phase": "Pending"})));
        assert_eq!(
            c,
            vec![
                json!("p"),
                json!("0/2"),
                json!("Pending"),
                json!("0"),
                json!("60m"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn running_with_restarts_and_waiting_reasons() {
        let c = cells(base(
            json!({"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}], "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}}, "lastState": {"terminated": {"finishedAt": "2026-01-01T00:55:00Z", "exitCode": 1}}},
                {"name": "b", "ready": false, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]}),
        ));
        assert_eq!(c[1], "1/2");
        assert_eq!(c[2], "CrashLoopBackOff");
        assert_eq!(c[3], "5 (5m ago)");
        assert_eq!(c[5], "10.0.0.7");
    }

    #[test]
    fn init_containers_and_sidecars() {
        let mut pod = base(json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "setup", "state": {"terminated": {"exitCode": 0}}},
            {"name": "migrate", "state": {"waiting": {"reason": "PodInitializing"}}}
        ]}));
        pod["spec"]["initContainers"] = json!([{"name": "setup"}, {"name": "migrate"}]);
        assert_eq!(cells(pod.clone())[2], "Init:1/2");
        pod["status"]["initContainerStatuses"][1]["state"] = json!({"terminated": {"exitCode": 3}});
        assert_eq!(cells(pod.clone())[2], "Init:ExitCode:3");
        pod["status"]["initContainerStatuses"][1]["state"] =
            json!({"waiting": {"reason": "ImagePullBackOff"}});
        assert_eq!(cells(pod)[2], "Init:ImagePullBackOff");
        // A started sidecar counts as a ready container, not as initialisation.
        let mut side = base(json!({"phase": "Running", "initContainerStatuses": [
            {"name": "proxy", "started": true, "ready": true, "state": {"running": {}}}],
            "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}, {"name": "b", "ready": true, "state": {"running": {}}}]}));
        side["spec"]["initContainers"] = json!([{"name": "proxy", "restartPolicy": "Always"}]);
        let c = cells(side);
        assert_eq!(
            (c[1].as_str(), c[2].as_str()),
            (Some("3/3"), Some("Running"))
        );
    }

    #[test]
    fn completed_terminating_and_gates() {
        let done = row(
            &base(
                json!({"phase": "Succeeded", "containerStatuses": [{"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
            ),
            now(),
        );
        assert_eq!(done.cells[2], "Completed");
        assert_eq!(done.conditions.unwrap()[0]["reason"], "Succeeded");
        let mut leaving = base(json!({"phase": "Running"}));
        leaving["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
        assert_eq!(cells(leaving.clone())[2], "Terminating");
        leaving["status"]["reason"] = json!("NodeLost");
        assert_eq!(cells(leaving)[2], "Unknown");
        let mut gated = base(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}, {"type": "example.com/ready", "status": "True"}]}),
        );
        gated["spec"]["readinessGates"] =
            json!([{"conditionType": "example.com/ready"}, {"conditionType": "other"}]);
        gated["spec"]["nodeName"] = json!("n1");
        let c = cells(gated);
        assert_eq!(
            (c[2].as_str(), c[6].as_str(), c[8].as_str()),
            (Some("SchedulingGated"), Some("n1"), Some("1/2"))
        );
    }
}
