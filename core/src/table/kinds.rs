//! Rows of the built-in kinds other than pods: the columns kubectl prints
//! for each, computed the way its printers compute them.

use super::format::{array_at, int_at, label_map, len_of, or_none, selector, since, str_at};
use super::{Column, Row};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub(super) fn row(cells: Vec<Value>) -> Row {
    Row {
        cells,
        conditions: None,
    }
}

pub(super) fn name(o: &Value) -> Value {
    json!(str_at(o, "/metadata/name"))
}

pub(super) fn age(o: &Value, now: DateTime<Utc>) -> Value {
    json!(since(o.pointer("/metadata/creationTimestamp"), now))
}

pub const DEFAULT: &[Column] = &[Column::name(), Column::age()];

pub fn default_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![name(o), age(o, now)])
}

pub const NAMESPACE: &[Column] = &[
    Column::name(),
    Column::new(
        "Status",
        "string",
        "The namespace's phase: Active or Terminating.",
        0,
    ),
    Column::age(),
];

pub fn namespace_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/status/phase")),
        age(o, now),
    ])
}

pub const CONFIG_MAP: &[Column] = &[
    Column::name(),
    Column::new(
        "Data",
        "string",
        "How many keys the config map holds (text and binary).",
        0,
    ),
    Column::age(),
];

pub fn config_map_row(o: &Value, now: DateTime<Utc>) -> Row {
    let keys = len_of(o, "/data") + len_of(o, "/binaryData");
    row(vec![name(o), json!(keys), age(o, now)])
}

pub const SECRET: &[Column] = &[
    Column::name(),
    Column::new(
        "Type",
        "string",
        "The kind of secret, which decides what its data must hold.",
        0,
    ),
    Column::new("Data", "string", "How many keys the secret holds.", 0),
    Column::age(),
];

pub fn secret_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/type")),
        json!(len_of(o, "/data")),
        age(o, now),
    ])
}

pub const SERVICE_ACCOUNT: &[Column] = &[
    Column::name(),
    Column::new(
        "Secrets",
        "string",
        "How many secrets the service account lists.",
        0,
    ),
    Column::age(),
];

pub fn service_account_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![name(o), json!(len_of(o, "/secrets")), age(o, now)])
}

pub const LEASE: &[Column] = &[
    Column::name(),
    Column::new("Holder", "string", "Who holds the lease now.", 0),
    Column::age(),
];

pub fn lease_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/spec/holderIdentity")),
        age(o, now),
    ])
}

pub const SERVICE: &[Column] = &[
    Column::name(),
    Column::new(
        "Type",
        "string",
        "How the service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName.",
        0,
    ),
    Column::new(
        "Cluster-IP",
        "string",
        "The service's virtual IP inside the cluster.",
        0,
    ),
    Column::new(
        "External-IP",
        "string",
        "Addresses that reach the service from outside the cluster.",
        0,
    ),
    Column::new(
        "Port(s)",
        "string",
        "The service's ports, with node ports and protocols.",
        0,
    ),
    Column::age(),
    Column::new(
        "Selector",
        "string",
        "Labels of the pods the service sends traffic to.",
        1,
    ),
];

pub fn service_row(o: &Value, now: DateTime<Utc>) -> Row {
    // Objects stored before defaulting may lack the type; kube's default is ClusterIP.
    let kind = match str_at(o, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = array_at(o, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or("");
    let external = array_at(o, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>();
    let external_ip = match kind {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut ingress: Vec<&str> = array_at(o, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    i["ip"]
                        .as_str()
                        .filter(|s| !s.is_empty())
                        .or_else(|| i["hostname"].as_str().filter(|s| !s.is_empty()))
                })
                .collect();
            ingress.sort_unstable();
            ingress.dedup();
            ingress.extend(external.iter().copied());
            if ingress.is_empty() {
                "<pending>".to_string()
            } else {
                ingress.join(",")
            }
        }
        "ExternalName" => str_at(o, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = array_at(o, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n > 0) {
                Some(node) => format!("{}:{node}/{protocol}", int_at(p, "/port")),
                None => format!("{}/{protocol}", int_at(p, "/port")),
            }
        })
        .collect();
    row(vec![
        name(o),
        json!(kind),
        json!(or_none(cluster_ip)),
        json!(external_ip),
        json!(or_none(&ports.join(","))),
        age(o, now),
        json!(label_map(o.pointer("/spec/selector"))),
    ])
}

pub const ENDPOINTS: &[Column] = &[
    Column::name(),
    Column::new(
        "Endpoints",
        "string",
        "The first few addresses the endpoints name, with their ports.",
        0,
    ),
    Column::age(),
];

/// At most three addresses are listed, then how many more there are.
pub fn endpoints_row(o: &Value, now: DateTime<Utc>) -> Row {
    const SHOWN: usize = 3;
    let subsets = array_at(o, "/subsets");
    let cell = if subsets.is_empty() {
        "<none>".to_string()
    } else {
        let mut shown: Vec<String> = Vec::new();
        let mut total = 0usize;
        for ss in subsets {
            let addrs: Vec<&str> = array_at(ss, "/addresses")
                .iter()
                .map(|a| a["ip"].as_str().unwrap_or(""))
                .collect();
            let ports = array_at(ss, "/ports");
            if ports.is_empty() {
                total += addrs.len();
                shown.extend(addrs.iter().map(|a| a.to_string()));
                continue;
            }
            for p in ports {
                total += addrs.len();
                let port = int_at(p, "/port");
                shown.extend(addrs.iter().map(|a| match a.contains(':') {
                    true => format!("[{a}]:{port}"),
                    false => format!("{a}:{port}"),
                }));
            }
        }
        let more = total.saturating_sub(SHOWN);
        shown.truncate(SHOWN);
        let listed = shown.join(",");
        if more > 0 {
            format!("{listed} + {more} more...")
        } else {
            listed
        }
    };
    row(vec![name(o), json!(cell), age(o, now)])
}

pub const NODE: &[Column] = &[
    Column::name(),
    Column::new(
        "Status",
        "string",
        "Whether the node is Ready, and whether scheduling on it is disabled.",
        0,
    ),
    Column::new(
        "Roles",
        "string",
        "Roles from the node's node-role.kubernetes.io labels.",
        0,
    ),
    Column::age(),
    Column::new(
        "Version",
        "string",
        "The kubelet version the node reports.",
        0,
    ),
    Column::new(
        "Internal-IP",
        "string",
        "The node's first internal address.",
        1,
    ),
    Column::new(
        "External-IP",
        "string",
        "The node's first external address.",
        1,
    ),
    Column::new(
        "OS-Image",
        "string",
        "The operating system the node reports.",
        1,
    ),
    Column::new(
        "Kernel-Version",
        "string",
        "The kernel version the node reports.",
        1,
    ),
    Column::new(
        "Container-Runtime",
        "string",
        "The container runtime and version the node reports.",
        1,
    ),
];

pub fn node_row(o: &Value, now: DateTime<Utc>) -> Row {
    let mut status: Vec<&str> = Vec::new();
    if let Some(c) = array_at(o, "/status/conditions")
        .iter()
        .find(|c| c["type"] == "Ready")
    {
        status.push(if c["status"] == "True" {
            "Ready"
        } else {
            "NotReady"
        });
    }
    if status.is_empty() {
        status.push("Unknown");
    }
    if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<String> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
                    Some(role) if !role.is_empty() => Some(role.to_string()),
                    Some(_) => None,
                    None if k == "kubernetes.io/role" => {
                        v.as_str().filter(|r| !r.is_empty()).map(str::to_string)
                    }
                    None => None,
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    roles.dedup();
    let address = |kind: &str| {
        array_at(o, "/status/addresses")
            .iter()
            .find(|a| a["type"] == kind)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let info = |field: &str| match str_at(o, &format!("/status/nodeInfo/{field}")) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    row(vec![
        name(o),
        json!(status.join(",")),
        json!(or_none(&roles.join(","))),
        age(o, now),
        json!(str_at(o, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ])
}

pub const DEPLOYMENT: &[Column] = &[
    Column::name(),
    Column::new(
        "Ready",
        "string",
        "Ready replicas out of the desired ones.",
        0,
    ),
    Column::new(
        "Up-to-date",
        "string",
        "Replicas running the current pod template.",
        0,
    ),
    Column::new("Available", "string", "Replicas available to serve.", 0),
    Column::age(),
    Column::new(
        "Containers",
        "string",
        "The names of the pod template's containers.",
        1,
    ),
    Column::new(
        "Images",
        "string",
        "The images of the pod template's containers.",
        1,
    ),
    Column::new(
        "Selector",
        "string",
        "The label selector that picks the deployment's pods.",
        1,
    ),
];

pub fn deployment_row(o: &Value, now: DateTime<Utc>) -> Row {
    let desired = o
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let (names, images) = containers(array_at(o, "/spec/template/spec/containers"));
    row(vec![
        name(o),
        json!(format!("{}/{desired}", int_at(o, "/status/readyReplicas"))),
        json!(int_at(o, "/status/updatedReplicas")),
        json!(int_at(o, "/status/availableReplicas")),
        age(o, now),
        json!(names),
        json!(images),
        json!(selector(o.pointer("/spec/selector"))),
    ])
}

pub const POD_TEMPLATE: &[Column] = &[
    Column::name(),
    Column::new(
        "Containers",
        "string",
        "The names of the template's containers.",
        0,
    ),
    Column::new(
        "Images",
        "string",
        "The images of the template's containers.",
        0,
    ),
    Column::new(
        "Pod Labels",
        "string",
        "The labels of the template's pods.",
        0,
    ),
];

pub fn pod_template_row(o: &Value) -> Row {
    let (names, images) = containers(array_at(o, "/template/spec/containers"));
    let labels = label_map(o.pointer("/template/metadata/labels"));
    row(vec![name(o), json!(names), json!(images), json!(labels)])
}

/// Container names and images, each joined by commas.
pub(super) fn containers(list: &[Value]) -> (String, String) {
    let names: Vec<&str> = list
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect();
    let images: Vec<&str> = list
        .iter()
        .map(|c| c["image"].as_str().unwrap_or(""))
        .collect();
    (names.join(","), images.join(","))
}

pub const EVENT: &[Column] = &[
    Column::new(
        "Last Seen",
        "string",
        "When the event was last observed.",
        0,
    ),
    Column::new("Type", "string", "Normal or Warning.", 0),
    Column::new(
        "Reason",
        "string",
        "A short, machine-readable reason for the event.",
        0,
    ),
    Column::new("Object", "string", "The object the event is about.", 0),
    Column::new(
        "Subobject",
        "string",
        "The part of the object the event is about.",
        1,
    ),
    Column::new(
        "Source",
        "string",
        "The component that reported the event.",
        1,
    ),
    Column::new("Message", "string", "What happened, for people.", 0),
    Column::new(
        "First Seen",
        "string",
        "When the event was first observed.",
        1,
    ),
    Column::new(
        "Count",
        "string",
        "How many times the event was observed.",
        1,
    ),
    Column::name().wide(),
];

pub fn event_row(o: &Value, now: DateTime<Utc>) -> Row {
    let first = match o.pointer("/firstTimestamp").filter(|v| !v.is_null()) {
        Some(t) => since(Some(t), now),
        None => since(o.pointer("/eventTime"), now),
    };
    let mut last = match o.pointer("/lastTimestamp").filter(|v| !v.is_null()) {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int_at(o, "/count");
    if let Some(series) = o.pointer("/series").filter(|s| s.is_object()) {
        last = since(series.get("lastObservedTime"), now);
        count = int_at(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let kind = str_at(o, "/involvedObject/kind").to_lowercase();
    let target = match str_at(o, "/involvedObject/name") {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty(
        str_at(o, "/source/component"),
        str_at(o, "/reportingComponent"),
    );
    let instance = first_non_empty(str_at(o, "/source/host"), str_at(o, "/reportingInstance"));
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    row(vec![
        json!(last),
        json!(str_at(o, "/type")),
        json!(str_at(o, "/reason")),
        json!(target),
        json!(str_at(o, "/involvedObject/fieldPath")),
        json!(source),
        json!(str_at(o, "/message").trim()),
        json!(first),
        json!(count),
        name(o),
    ])
}

pub const COMPONENT_STATUS: &[Column] = &[
    Column::name(),
    Column::new(
        "Status",
        "string",
        "Whether the component answered healthy.",
        0,
    ),
    Column::new("Message", "string", "What the component answered.", 0),
    Column::new(
        "Error",
        "string",
        "Why the component could not be asked.",
        0,
    ),
];

/// kube's printer: the Healthy condition as Healthy, Unhealthy or Unknown.
pub fn component_status_row(o: &Value) -> Row {
    let healthy = o
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Healthy"));
    let (status, message, error) = match healthy {
        Some(c) => (
            if c["status"] == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            str_at(c, "/message"),
            str_at(c, "/error"),
        ),
        None => ("Unknown", "", ""),
    };
    row(vec![name(o), json!(status), json!(message), json!(error)])
}
