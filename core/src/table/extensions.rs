//! Rows of the kinds added with kube's whole built-in surface: the
//! autoscaler, certificate requests, admission configuration, API
//! extension and flow-control objects, service IP objects and dynamic
//! resource allocation — the columns kubectl prints for each.

use super::format::{array_at, int_at, len_of, or_none, str_at};
use super::kinds::{age, name, row};
use super::{Column, Row};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

fn text(o: &Value, pointer: &str) -> Value {
    json!(str_at(o, pointer))
}

fn unset_or(s: String) -> String {
    if s.is_empty() {
        "<unset>".into()
    } else {
        s
    }
}

pub const HORIZONTAL_POD_AUTOSCALER: &[Column] = &[
    Column::name(),
    Column::new("Reference", "string", "The scaled object, Kind/name.", 0),
    Column::new("Targets", "string", "Each metric: current/target.", 0),
    Column::new("MinPods", "string", "The fewest replicas it scales to.", 0),
    Column::new("MaxPods", "integer", "The most replicas it scales to.", 0),
    Column::new("Replicas", "integer", "The replicas it saw last.", 0),
    Column::age(),
];

/// One metric as kubectl shows it: `cpu: 40%/80%`, `<unknown>` until the
/// autoscaler has measured.
fn hpa_metric(spec: &Value, current: Option<&Value>) -> String {
    let kind = str_at(spec, "/type");
    let key = match kind {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return "<unknown type>".into(),
    };
    let target = spec.pointer(&format!("/{key}/target"));
    let (want, have) = match target.and_then(|t| t.get("averageUtilization")) {
        Some(u) => (
            format!("{u}%"),
            current
                .and_then(|c| c.pointer(&format!("/{key}/current/averageUtilization")))
                .map(|u| format!("{u}%")),
        ),
        None => {
            let field = if target.and_then(|t| t.get("averageValue")).is_some() {
                "averageValue"
            } else {
                "value"
            };
            let show = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
            (
                show(target.and_then(|t| t.get(field))).unwrap_or_default(),
                show(current.and_then(|c| c.pointer(&format!("/{key}/current/{field}")))),
            )
        }
    };
    let have = have.unwrap_or_else(|| "<unknown>".into());
    match kind {
        "Resource" | "ContainerResource" => {
            format!("{}: {have}/{want}", str_at(spec, &format!("/{key}/name")))
        }
        _ => format!("{have}/{want}"),
    }
}

pub fn horizontal_pod_autoscaler_row(o: &Value, now: DateTime<Utc>) -> Row {
    let reference = format!(
        "{}/{}",
        str_at(o, "/spec/scaleTargetRef/kind"),
        str_at(o, "/spec/scaleTargetRef/name")
    );
    let current = array_at(o, "/status/currentMetrics");
    let metrics: Vec<String> = array_at(o, "/spec/metrics")
        .iter()
        .enumerate()
        .map(|(i, m)| hpa_metric(m, current.get(i)))
        .collect();
    let targets = if metrics.is_empty() {
        "<none>".to_string()
    } else {
        metrics.join(", ")
    };
    let min = o
        .pointer("/spec/minReplicas")
        .map(|v| v.to_string())
        .unwrap_or_else(|| "<unset>".into());
    row(vec![
        name(o),
        json!(reference),
        json!(targets),
        json!(min),
        json!(int_at(o, "/spec/maxReplicas")),
        json!(int_at(o, "/status/currentReplicas")),
        age(o, now),
    ])
}

pub const CERTIFICATE_SIGNING_REQUEST: &[Column] = &[
    Column::name(),
    Column::age(),
    Column::new("SignerName", "string", "Who is asked to sign.", 0),
    Column::new("Requestor", "string", "Who asked.", 0),
    Column::new(
        "RequestedDuration",
        "string",
        "The certificate lifetime asked for.",
        0,
    ),
    Column::new(
        "Condition",
        "string",
        "Pending, or its decision and state.",
        0,
    ),
];

pub fn certificate_signing_request_row(o: &Value, now: DateTime<Utc>) -> Row {
    let mut condition: Vec<&str> = array_at(o, "/status/conditions")
        .iter()
        .filter(|c| str_at(c, "/status") == "True")
        .map(|c| str_at(c, "/type"))
        .collect();
    if !str_at(o, "/status/certificate").is_empty() {
        condition.push("Issued");
    }
    let condition = if condition.is_empty() {
        "Pending".to_string()
    } else {
        condition.join(",")
    };
    let duration = o
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .map(super::format::human_duration)
        .unwrap_or_else(|| "<none>".into());
    row(vec![
        name(o),
        age(o, now),
        text(o, "/spec/signerName"),
        text(o, "/spec/username"),
        json!(duration),
        json!(condition),
    ])
}

pub const WEBHOOK_CONFIGURATION: &[Column] = &[
    Column::name(),
    Column::new("Webhooks", "integer", "How many webhooks it configures.", 0),
    Column::age(),
];

pub fn webhook_configuration_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![name(o), json!(len_of(o, "/webhooks")), age(o, now)])
}

pub const VALIDATING_ADMISSION_POLICY: &[Column] = &[
    Column::name(),
    Column::new("Validations", "integer", "How many rules it checks.", 0),
    Column::new("ParamKind", "string", "The kind of its parameters.", 0),
    Column::age(),
];

pub fn validating_admission_policy_row(o: &Value, now: DateTime<Utc>) -> Row {
    let param = o.pointer("/spec/paramKind").map_or(String::new(), |p| {
        format!("{}/{}", str_at(p, "/apiVersion"), str_at(p, "/kind"))
    });
    row(vec![
        name(o),
        json!(len_of(o, "/spec/validations")),
        json!(unset_or(param)),
        age(o, now),
    ])
}

pub const VALIDATING_ADMISSION_POLICY_BINDING: &[Column] = &[
    Column::name(),
    Column::new("PolicyName", "string", "The policy it binds.", 0),
    Column::new("ParamRef", "string", "The parameters it passes.", 0),
    Column::age(),
];

pub fn validating_admission_policy_binding_row(o: &Value, now: DateTime<Utc>) -> Row {
    let param = o.pointer("/spec/paramRef").map_or(String::new(), |p| {
        let (ns, n) = (str_at(p, "/namespace"), str_at(p, "/name"));
        let n = if n.is_empty() { "*" } else { n };
        if ns.is_empty() {
            n.to_string()
        } else {
            format!("{ns}/{n}")
        }
    });
    row(vec![
        name(o),
        text(o, "/spec/policyName"),
        json!(unset_or(param)),
        age(o, now),
    ])
}

pub const CUSTOM_RESOURCE_DEFINITION: &[Column] = &[
    Column::name(),
    Column::new("Created At", "date", "When the object was created.", 0),
];

pub fn custom_resource_definition_row(o: &Value) -> Row {
    row(vec![name(o), text(o, "/metadata/creationTimestamp")])
}

pub const API_SERVICE: &[Column] = &[
    Column::name(),
    Column::new(
        "Service",
        "string",
        "Local, or the Service it proxies to.",
        0,
    ),
    Column::new("Available", "string", "Whether it answers.", 0),
    Column::age(),
];

pub fn api_service_row(o: &Value, now: DateTime<Utc>) -> Row {
    let service = match o.pointer("/spec/service").filter(|s| !s.is_null()) {
        Some(s) => format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name")),
        None => "Local".into(),
    };
    let available = array_at(o, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Available")
        .map_or("Unknown".to_string(), |c| match str_at(c, "/status") {
            "True" => "True".into(),
            s => format!("{s} ({})", str_at(c, "/reason")),
        });
    row(vec![name(o), json!(service), json!(available), age(o, now)])
}

pub const FLOW_SCHEMA: &[Column] = &[
    Column::name(),
    Column::new("PriorityLevel", "string", "Where matched requests go.", 0),
    Column::new("MatchingPrecedence", "string", "Lower matches first.", 0),
    Column::new(
        "DistinguisherMethod",
        "string",
        "How flows are told apart.",
        0,
    ),
    Column::age(),
    Column::new(
        "MissingPL",
        "string",
        "Whether its priority level is missing.",
        0,
    ),
];

pub fn flow_schema_row(o: &Value, now: DateTime<Utc>) -> Row {
    let missing = array_at(o, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Dangling")
        .map_or("?", |c| str_at(c, "/status"));
    row(vec![
        name(o),
        text(o, "/spec/priorityLevelConfiguration/name"),
        json!(int_at(o, "/spec/matchingPrecedence").to_string()),
        json!(or_none(str_at(o, "/spec/distinguisherMethod/type"))),
        age(o, now),
        json!(missing),
    ])
}

pub const PRIORITY_LEVEL_CONFIGURATION: &[Column] = &[
    Column::name(),
    Column::new("Type", "string", "Limited or Exempt.", 0),
    Column::new(
        "NominalConcurrencyShares",
        "string",
        "Its share of the server's concurrency.",
        0,
    ),
    Column::new("Queues", "string", "Queues of waiting requests.", 0),
    Column::new("HandSize", "string", "Queues each flow may use.", 0),
    Column::new("QueueLengthLimit", "string", "Longest a queue gets.", 0),
    Column::age(),
];

pub fn priority_level_configuration_row(o: &Value, now: DateTime<Utc>) -> Row {
    let limited = |p: &str| match o.pointer(&format!("/spec/limited{p}")) {
        Some(v) if !v.is_null() => v.to_string(),
        _ => "<none>".into(),
    };
    let queuing = |field: &str| limited(&format!("/limitResponse/queuing/{field}"));
    row(vec![
        name(o),
        text(o, "/spec/type"),
        json!(limited("/nominalConcurrencyShares")),
        json!(queuing("queues")),
        json!(queuing("handSize")),
        json!(queuing("queueLengthLimit")),
        age(o, now),
    ])
}

pub const IP_ADDRESS: &[Column] = &[
    Column::name(),
    Column::new("ParentRef", "string", "The object holding the address.", 0),
];

pub fn ip_address_row(o: &Value) -> Row {
    let p = |f: &str| str_at(o, &format!("/spec/parentRef/{f}")).to_string();
    let group = p("group");
    let resource = if group.is_empty() {
        p("resource")
    } else {
        format!("{}.{group}", p("resource"))
    };
    let parent = [resource, p("namespace"), p("name")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    row(vec![name(o), json!(parent)])
}

pub const SERVICE_CIDR: &[Column] = &[
    Column::name(),
    Column::new("CIDRs", "string", "The ranges Services draw from.", 0),
    Column::age(),
];

pub fn service_cidr_row(o: &Value, now: DateTime<Utc>) -> Row {
    let cidrs: Vec<&str> = array_at(o, "/spec/cidrs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    row(vec![name(o), json!(cidrs.join(",")), age(o, now)])
}

pub const RESOURCE_CLAIM: &[Column] = &[
    Column::name(),
    Column::new("State", "string", "Allocated and reserved, or pending.", 0),
    Column::age(),
];

pub fn resource_claim_row(o: &Value, now: DateTime<Utc>) -> Row {
    let mut state = Vec::new();
    if o.pointer("/status/allocation")
        .is_some_and(|a| !a.is_null())
    {
        state.push("allocated");
        if len_of(o, "/status/reservedFor") > 0 {
            state.push("reserved");
        }
    } else {
        state.push("pending");
    }
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        state.push("deleted");
    }
    row(vec![name(o), json!(state.join(",")), age(o, now)])
}

pub const RESOURCE_SLICE: &[Column] = &[
    Column::name(),
    Column::new("Node", "string", "The node whose devices it lists.", 0),
    Column::new("Driver", "string", "The driver publishing it.", 0),
    Column::new("Pool", "string", "The pool it belongs to.", 0),
    Column::age(),
];

pub fn resource_slice_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(or_none(str_at(o, "/spec/nodeName"))),
        text(o, "/spec/driver"),
        text(o, "/spec/pool/name"),
        age(o, now),
    ])
}
