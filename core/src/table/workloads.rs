//! Rows of the workload kinds (apps and batch, and the core
//! ReplicationController): the columns kubectl prints for each, computed
//! as its printers compute them.

use super::format::{array_at, int_at, label_map, selector, since, str_at};
use super::kinds::{age, containers, name, row};
use super::{Column, Row};
use crate::registry::lifecycle::parse_time;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

const CONTAINERS: Column = Column::new(
    "Containers",
    "string",
    "The names of the pod template's containers.",
    1,
);
const IMAGES: Column = Column::new(
    "Images",
    "string",
    "The images of the pod template's containers.",
    1,
);
const SELECTOR: Column = Column::new(
    "Selector",
    "string",
    "The label selector that picks the controller's pods.",
    1,
);

/// The containers and images of the pod template at `template` (a JSON
/// pointer), as two cells.
fn template_cells(o: &Value, template: &str) -> [Value; 2] {
    let (names, images) = containers(array_at(o, &format!("{template}/spec/containers")));
    [json!(names), json!(images)]
}

pub const REPLICA_SET: &[Column] = &[
    Column::name(),
    Column::new("Desired", "integer", "How many pods are wanted.", 0),
    Column::new("Current", "integer", "How many pods exist.", 0),
    Column::new("Ready", "integer", "How many pods are ready.", 0),
    Column::age(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// ReplicaSets and ReplicationControllers (whose selector is a plain
/// label map).
pub fn replica_set_row(o: &Value, now: DateTime<Utc>) -> Row {
    let desired = o
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let sel = o.pointer("/spec/selector");
    let sel = if sel
        .is_some_and(|s| s.get("matchLabels").is_some() || s.get("matchExpressions").is_some())
    {
        selector(sel)
    } else {
        label_map(sel)
    };
    let mut cells = vec![
        name(o),
        json!(desired),
        json!(int_at(o, "/status/replicas")),
        json!(int_at(o, "/status/readyReplicas")),
        age(o, now),
    ];
    cells.extend(template_cells(o, "/spec/template"));
    cells.push(json!(sel));
    row(cells)
}

pub const STATEFUL_SET: &[Column] = &[
    Column::name(),
    Column::new("Ready", "string", "Ready pods out of those wanted.", 0),
    Column::age(),
    CONTAINERS,
    IMAGES,
];

pub fn stateful_set_row(o: &Value, now: DateTime<Utc>) -> Row {
    let desired = o
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut cells = vec![
        name(o),
        json!(format!("{}/{desired}", int_at(o, "/status/readyReplicas"))),
        age(o, now),
    ];
    cells.extend(template_cells(o, "/spec/template"));
    row(cells)
}

pub const DAEMON_SET: &[Column] = &[
    Column::name(),
    Column::new("Desired", "integer", "Nodes that should run the pod.", 0),
    Column::new("Current", "integer", "Nodes running the pod.", 0),
    Column::new("Ready", "integer", "Nodes whose pod is ready.", 0),
    Column::new(
        "Up-to-date",
        "integer",
        "Nodes running the current template.",
        0,
    ),
    Column::new("Available", "integer", "Nodes whose pod is available.", 0),
    Column::new(
        "Node Selector",
        "string",
        "The nodes the pods may run on.",
        0,
    ),
    Column::age(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub fn daemon_set_row(o: &Value, now: DateTime<Utc>) -> Row {
    let mut cells = vec![
        name(o),
        json!(int_at(o, "/status/desiredNumberScheduled")),
        json!(int_at(o, "/status/currentNumberScheduled")),
        json!(int_at(o, "/status/numberReady")),
        json!(int_at(o, "/status/updatedNumberScheduled")),
        json!(int_at(o, "/status/numberAvailable")),
        json!(label_map(o.pointer("/spec/template/spec/nodeSelector"))),
        age(o, now),
    ];
    cells.extend(template_cells(o, "/spec/template"));
    cells.push(json!(selector(o.pointer("/spec/selector"))));
    row(cells)
}

pub const JOB: &[Column] = &[
    Column::name(),
    Column::new("Status", "string", "Where the job stands.", 0),
    Column::new(
        "Completions",
        "string",
        "Succeeded pods out of those wanted.",
        0,
    ),
    Column::new(
        "Duration",
        "string",
        "How long the job ran or has been running.",
        0,
    ),
    Column::age(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// Whether the job has a condition of `kind` with status True.
fn has_condition(o: &Value, kind: &str) -> bool {
    array_at(o, "/status/conditions")
        .iter()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// kubectl's job status, first match wins.
fn job_status(o: &Value) -> &'static str {
    if has_condition(o, "Complete") {
        "Complete"
    } else if has_condition(o, "Failed") {
        "Failed"
    } else if o
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        "Terminating"
    } else if has_condition(o, "Suspended") {
        "Suspended"
    } else if has_condition(o, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

pub fn job_row(o: &Value, now: DateTime<Utc>) -> Row {
    let succeeded = int_at(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int_at(o, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let time = |p: &str| o.pointer(p).and_then(Value::as_str).and_then(parse_time);
    let duration = match (time("/status/startTime"), time("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => super::format::human_duration((now - start).num_seconds()),
        (Some(start), Some(end)) => super::format::human_duration((end - start).num_seconds()),
    };
    let mut cells = vec![
        name(o),
        json!(job_status(o)),
        json!(completions),
        json!(duration),
        age(o, now),
    ];
    cells.extend(template_cells(o, "/spec/template"));
    cells.push(json!(selector(o.pointer("/spec/selector"))));
    row(cells)
}

pub const CRON_JOB: &[Column] = &[
    Column::name(),
    Column::new(
        "Schedule",
        "string",
        "When jobs are created, in cron syntax.",
        0,
    ),
    Column::new("Timezone", "string", "The time zone of the schedule.", 0),
    Column::new("Suspend", "boolean", "Whether new jobs are held back.", 0),
    Column::new("Active", "integer", "Jobs running now.", 0),
    Column::new("Last Schedule", "string", "When a job was last created.", 0),
    Column::age(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

pub fn cron_job_row(o: &Value, now: DateTime<Utc>) -> Row {
    let timezone = match str_at(o, "/spec/timeZone") {
        "" => "<none>",
        tz => tz,
    };
    let suspend = o.pointer("/spec/suspend").and_then(Value::as_bool);
    let last = match o
        .pointer("/status/lastScheduleTime")
        .filter(|t| !t.is_null())
    {
        Some(t) => since(Some(t), now),
        None => "<none>".into(),
    };
    let mut cells = vec![
        name(o),
        json!(str_at(o, "/spec/schedule")),
        json!(timezone),
        json!(match suspend {
            Some(true) => "True",
            Some(false) => "False",
            None => "<unset>",
        }),
        json!(array_at(o, "/status/active").len()),
        json!(last),
        age(o, now),
    ];
    cells.extend(template_cells(o, "/spec/jobTemplate/spec/template"));
    cells.push(json!(selector(
        o.pointer("/spec/jobTemplate/spec/selector")
    )));
    row(cells)
}

pub const CONTROLLER_REVISION: &[Column] = &[
    Column::name(),
    Column::new(
        "Controller",
        "string",
        "The object that owns this revision.",
        0,
    ),
    Column::new("Revision", "integer", "The revision number.", 0),
    Column::age(),
];

pub fn controller_revision_row(o: &Value, now: DateTime<Utc>) -> Row {
    let controller = array_at(o, "/metadata/ownerReferences")
        .iter()
        .find(|r| r["controller"] == true)
        .map(|r| {
            let group = r["apiVersion"]
                .as_str()
                .and_then(|v| v.split_once('/'))
                .map(|(g, _)| g)
                .unwrap_or("");
            let kind = r["kind"].as_str().unwrap_or("").to_lowercase();
            let kind = if group.is_empty() {
                kind
            } else {
                format!("{kind}.{group}")
            };
            format!("{kind}/{}", r["name"].as_str().unwrap_or(""))
        })
        .unwrap_or_else(|| "<none>".into());
    row(vec![
        name(o),
        json!(controller),
        json!(int_at(o, "/revision")),
        age(o, now),
    ])
}
