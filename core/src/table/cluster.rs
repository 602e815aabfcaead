//! Rows of the storage, networking and scheduling kinds: the columns
//! kubectl prints for each, computed as its printers compute them.

use super::format::{array_at, int_at, selector, str_at};
use super::kinds::{age, name, row};
use super::{Column, Row};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// A quantity or int-or-string as kube prints it ("" when absent).
fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn flag(o: &Value, pointer: &str, unset: bool) -> Value {
    json!(o.pointer(pointer).and_then(Value::as_bool).unwrap_or(unset))
}

fn or_unset(s: &str) -> String {
    if s.is_empty() {
        "<unset>".into()
    } else {
        s.to_string()
    }
}

/// Access modes as kubectl abbreviates them, each once, in kube's order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v == m);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The phase, or Terminating once deletion started.
fn phase(o: &Value) -> String {
    if o.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        "Terminating".into()
    } else {
        str_at(o, "/status/phase").to_string()
    }
}

/// A volume's or claim's class: the beta annotation wins over the field.
fn storage_class_of(o: &Value) -> String {
    let annotation = o
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str);
    annotation
        .unwrap_or(str_at(o, "/spec/storageClassName"))
        .to_string()
}

const VOLUME_MODE: Column = Column::new("VolumeMode", "string", "Filesystem or Block.", 1);
const VOLUME_ATTRIBUTES_CLASS: Column = Column::new(
    "VolumeAttributesClass",
    "string",
    "The class of the volume's mutable attributes.",
    0,
);

pub const PERSISTENT_VOLUME_CLAIM: &[Column] = &[
    Column::name(),
    Column::new("Status", "string", "The claim's phase.", 0),
    Column::new("Volume", "string", "The volume bound to the claim.", 0),
    Column::new("Capacity", "string", "The bound volume's size.", 0),
    Column::new(
        "Access Modes",
        "string",
        "How the volume may be mounted.",
        0,
    ),
    Column::new("StorageClass", "string", "The claim's storage class.", 0),
    VOLUME_ATTRIBUTES_CLASS,
    Column::age(),
    VOLUME_MODE,
];

pub fn persistent_volume_claim_row(o: &Value, now: DateTime<Utc>) -> Row {
    let volume = str_at(o, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            text(o.pointer("/status/capacity/storage")),
            access_modes(array_at(o, "/status/accessModes")),
        )
    };
    row(vec![
        name(o),
        json!(phase(o)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class_of(o)),
        json!(or_unset(str_at(o, "/spec/volumeAttributesClassName"))),
        age(o, now),
        json!(or_unset(str_at(o, "/spec/volumeMode"))),
    ])
}

pub const PERSISTENT_VOLUME: &[Column] = &[
    Column::name(),
    Column::new("Capacity", "string", "The volume's size.", 0),
    Column::new(
        "Access Modes",
        "string",
        "How the volume may be mounted.",
        0,
    ),
    Column::new(
        "Reclaim Policy",
        "string",
        "What happens when its claim goes.",
        0,
    ),
    Column::new("Status", "string", "The volume's phase.", 0),
    Column::new("Claim", "string", "The claim bound to the volume.", 0),
    Column::new("StorageClass", "string", "The volume's storage class.", 0),
    VOLUME_ATTRIBUTES_CLASS,
    Column::new("Reason", "string", "Why the volume is in its phase.", 0),
    Column::age(),
    VOLUME_MODE,
];

pub fn persistent_volume_row(o: &Value, now: DateTime<Utc>) -> Row {
    let claim = match o.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        Some(c) => format!(
            "{}/{}",
            c["namespace"].as_str().unwrap_or(""),
            c["name"].as_str().unwrap_or("")
        ),
        None => String::new(),
    };
    row(vec![
        name(o),
        json!(text(o.pointer("/spec/capacity/storage"))),
        json!(access_modes(array_at(o, "/spec/accessModes"))),
        json!(str_at(o, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase(o)),
        json!(claim),
        json!(storage_class_of(o)),
        json!(or_unset(str_at(o, "/spec/volumeAttributesClassName"))),
        json!(str_at(o, "/status/reason")),
        age(o, now),
        json!(or_unset(str_at(o, "/spec/volumeMode"))),
    ])
}

pub const STORAGE_CLASS: &[Column] = &[
    Column::name(),
    Column::new("Provisioner", "string", "Who provisions its volumes.", 0),
    Column::new(
        "ReclaimPolicy",
        "string",
        "What happens to released volumes.",
        0,
    ),
    Column::new("VolumeBindingMode", "string", "When claims are bound.", 0),
    Column::new(
        "AllowVolumeExpansion",
        "string",
        "Whether volumes may grow.",
        0,
    ),
    Column::age(),
];

pub fn storage_class_row(o: &Value, now: DateTime<Utc>) -> Row {
    let annotated = |key: &str| {
        o.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
            .and_then(Value::as_str)
            == Some("true")
    };
    let mut shown = str_at(o, "/metadata/name").to_string();
    if annotated("storageclass.kubernetes.io/is-default-class")
        || annotated("storageclass.beta.kubernetes.io/is-default-class")
    {
        shown.push_str(" (default)");
    }
    let policy = match str_at(o, "/reclaimPolicy") {
        "" => "Delete",
        p => p,
    };
    let binding = match str_at(o, "/volumeBindingMode") {
        "" => "Immediate",
        b => b,
    };
    row(vec![
        json!(shown),
        json!(str_at(o, "/provisioner")),
        json!(policy),
        json!(binding),
        flag(o, "/allowVolumeExpansion", false),
        age(o, now),
    ])
}

pub const CSI_DRIVER: &[Column] = &[
    Column::name(),
    Column::new(
        "AttachRequired",
        "boolean",
        "Whether volumes are attached.",
        0,
    ),
    Column::new(
        "PodInfoOnMount",
        "boolean",
        "Whether mounts get pod info.",
        0,
    ),
    Column::new(
        "StorageCapacity",
        "boolean",
        "Whether capacity is reported.",
        0,
    ),
    Column::new(
        "TokenRequests",
        "string",
        "Audiences of the tokens it gets.",
        0,
    ),
    Column::new(
        "RequiresRepublish",
        "boolean",
        "Whether mounts are redone.",
        0,
    ),
    Column::new("Modes", "string", "The volume lifecycle modes.", 0),
    Column::age(),
];

pub fn csi_driver_row(o: &Value, now: DateTime<Utc>) -> Row {
    let joined = |pointer: &str, field: Option<&str>| {
        array_at(o, pointer)
            .iter()
            .map(|v| match field {
                Some(f) => v[f].as_str().unwrap_or(""),
                None => v.as_str().unwrap_or(""),
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let modes = match joined("/spec/volumeLifecycleModes", None) {
        m if m.is_empty() => "<none>".to_string(),
        m => m,
    };
    row(vec![
        name(o),
        flag(o, "/spec/attachRequired", true),
        flag(o, "/spec/podInfoOnMount", false),
        flag(o, "/spec/storageCapacity", false),
        json!(or_unset(&joined("/spec/tokenRequests", Some("audience")))),
        flag(o, "/spec/requiresRepublish", false),
        json!(modes),
        age(o, now),
    ])
}

pub const CSI_NODE: &[Column] = &[
    Column::name(),
    Column::new("Drivers", "integer", "CSI drivers on the node.", 0),
    Column::age(),
];

pub fn csi_node_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(array_at(o, "/spec/drivers").len()),
        age(o, now),
    ])
}

pub const CSI_STORAGE_CAPACITY: &[Column] = &[
    Column::name(),
    Column::new(
        "StorageClassName",
        "string",
        "The class the capacity is for.",
        0,
    ),
    Column::new("Capacity", "string", "The capacity available.", 0),
];

pub fn csi_storage_capacity_row(o: &Value) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/storageClassName")),
        json!(or_unset(&text(o.pointer("/capacity")))),
    ])
}

pub const VOLUME_ATTACHMENT: &[Column] = &[
    Column::name(),
    Column::new("Attacher", "string", "The driver that attaches it.", 0),
    Column::new("PV", "string", "The volume attached.", 0),
    Column::new("Node", "string", "The node it is attached to.", 0),
    Column::new("Attached", "boolean", "Whether the attach succeeded.", 0),
    Column::age(),
];

pub fn volume_attachment_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/spec/attacher")),
        json!(str_at(o, "/spec/source/persistentVolumeName")),
        json!(str_at(o, "/spec/nodeName")),
        flag(o, "/status/attached", false),
        age(o, now),
    ])
}

pub const VOLUME_ATTRIBUTES_CLASS_COLUMNS: &[Column] = &[
    Column::name(),
    Column::new(
        "DriverName",
        "string",
        "The driver the attributes are for.",
        0,
    ),
    Column::age(),
];

pub fn volume_attributes_class_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![name(o), json!(str_at(o, "/driverName")), age(o, now)])
}

pub const INGRESS: &[Column] = &[
    Column::name(),
    Column::new("Class", "string", "The ingress class.", 0),
    Column::new("Hosts", "string", "The hosts it routes.", 0),
    Column::new("Address", "string", "Where the load balancer listens.", 0),
    Column::new("Ports", "string", "The ports it serves.", 0),
    Column::age(),
];

pub fn ingress_row(o: &Value, now: DateTime<Utc>) -> Row {
    let rules = array_at(o, "/spec/rules");
    let hosts: Vec<&str> = rules
        .iter()
        .filter_map(|r| r["host"].as_str().filter(|h| !h.is_empty()))
        .take(3)
        .collect();
    let hosts = match (hosts.is_empty(), rules.len() > 3) {
        (true, _) => "*".to_string(),
        (false, false) => hosts.join(","),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - 3),
    };
    let addresses: Vec<&str> = array_at(o, "/status/loadBalancer/ingress")
        .iter()
        .flat_map(|i| [i["ip"].as_str(), i["hostname"].as_str()])
        .flatten()
        .filter(|a| !a.is_empty())
        .collect();
    let mut address = addresses.join(",");
    if address.len() > 16 {
        address = format!("{}...", &address[..13]);
    }
    let ports = if array_at(o, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    row(vec![
        name(o),
        json!(match str_at(o, "/spec/ingressClassName") {
            "" => "<none>",
            c => c,
        }),
        json!(hosts),
        json!(address),
        json!(ports),
        age(o, now),
    ])
}

pub const INGRESS_CLASS: &[Column] = &[
    Column::name(),
    Column::new(
        "Controller",
        "string",
        "The controller that implements it.",
        0,
    ),
    Column::new("Parameters", "string", "Its configuration object.", 0),
    Column::age(),
];

pub fn ingress_class_row(o: &Value, now: DateTime<Utc>) -> Row {
    let parameters = match o.pointer("/spec/parameters").filter(|p| p.is_object()) {
        Some(p) => {
            let mut kind = p["kind"].as_str().unwrap_or("").to_string();
            if let Some(group) = p["apiGroup"].as_str() {
                kind = format!("{kind}.{group}");
            }
            format!("{kind}/{}", p["name"].as_str().unwrap_or(""))
        }
        None => "<none>".into(),
    };
    row(vec![
        name(o),
        json!(str_at(o, "/spec/controller")),
        json!(parameters),
        age(o, now),
    ])
}

pub const NETWORK_POLICY: &[Column] = &[
    Column::name(),
    Column::new(
        "Pod-Selector",
        "string",
        "The pods the policy applies to.",
        0,
    ),
    Column::age(),
];

pub fn network_policy_row(o: &Value, now: DateTime<Utc>) -> Row {
    let sel = match selector(o.pointer("/spec/podSelector")) {
        s if s.is_empty() => "<none>".to_string(),
        s => s,
    };
    row(vec![name(o), json!(sel), age(o, now)])
}

pub const ENDPOINT_SLICE: &[Column] = &[
    Column::name(),
    Column::new("AddressType", "string", "IPv4, IPv6 or FQDN.", 0),
    Column::new("Ports", "string", "The ports of the endpoints.", 0),
    Column::new("Endpoints", "string", "The first addresses.", 0),
    Column::age(),
];

pub fn endpoint_slice_row(o: &Value, now: DateTime<Utc>) -> Row {
    let ports: Vec<String> = array_at(o, "/ports")
        .iter()
        .map(|p| match p["port"].as_i64() {
            Some(n) => n.to_string(),
            None => "<unset>".into(),
        })
        .collect();
    let addresses: Vec<&str> = array_at(o, "/endpoints")
        .iter()
        .flat_map(|e| array_at(e, "/addresses").iter().filter_map(Value::as_str))
        .collect();
    let mut endpoints = addresses
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join(",");
    if addresses.len() > 3 {
        endpoints = format!("{endpoints} + {} more...", addresses.len() - 3);
    }
    row(vec![
        name(o),
        json!(str_at(o, "/addressType")),
        json!(or_unset(&ports.join(","))),
        json!(or_unset(&endpoints)),
        age(o, now),
    ])
}

pub const POD_DISRUPTION_BUDGET: &[Column] = &[
    Column::name(),
    Column::new("Min Available", "string", "Pods that must stay up.", 0),
    Column::new("Max Unavailable", "string", "Pods that may be down.", 0),
    Column::new(
        "Allowed Disruptions",
        "integer",
        "Evictions allowed now.",
        0,
    ),
    Column::age(),
];

pub fn pod_disruption_budget_row(o: &Value, now: DateTime<Utc>) -> Row {
    let bound = |p: &str| match text(o.pointer(p)) {
        s if s.is_empty() => "N/A".to_string(),
        s => s,
    };
    row(vec![
        name(o),
        json!(bound("/spec/minAvailable")),
        json!(bound("/spec/maxUnavailable")),
        json!(int_at(o, "/status/disruptionsAllowed")),
        age(o, now),
    ])
}

pub const PRIORITY_CLASS: &[Column] = &[
    Column::name(),
    Column::new("Value", "integer", "The priority of pods of this class.", 0),
    Column::new(
        "Global-Default",
        "boolean",
        "Whether pods without a class get it.",
        0,
    ),
    Column::age(),
    Column::new(
        "PreemptionPolicy",
        "string",
        "Whether its pods preempt others.",
        0,
    ),
];

pub fn priority_class_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![
        name(o),
        json!(int_at(o, "/value")),
        flag(o, "/globalDefault", false),
        age(o, now),
        json!(str_at(o, "/preemptionPolicy")),
    ])
}

pub const RUNTIME_CLASS: &[Column] = &[
    Column::name(),
    Column::new("Handler", "string", "The container runtime handler.", 0),
    Column::age(),
];

pub fn runtime_class_row(o: &Value, now: DateTime<Utc>) -> Row {
    row(vec![name(o), json!(str_at(o, "/handler")), age(o, now)])
}

pub const LIMIT_RANGE: &[Column] = &[
    Column::name(),
    Column::new("Created At", "date", "When the object was created.", 0),
];

pub fn limit_range_row(o: &Value) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/metadata/creationTimestamp")),
    ])
}

pub const RESOURCE_QUOTA: &[Column] = &[
    Column::name(),
    Column::age(),
    Column::new("Request", "string", "Used and hard amounts of requests.", 0),
    Column::new("Limit", "string", "Used and hard amounts of limits.", 0),
];

pub fn resource_quota_row(o: &Value, now: DateTime<Utc>) -> Row {
    let mut names: Vec<&String> = o
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for r in names {
        let hard = text(o.pointer("/status/hard").and_then(|h| h.get(r)));
        let used = match text(o.pointer("/status/used").and_then(|u| u.get(r))) {
            u if u.is_empty() => "0".to_string(),
            u => u,
        };
        let cell = format!("{r}: {used}/{hard}");
        if r.starts_with("limits.") {
            limits.push(cell);
        } else {
            requests.push(cell);
        }
    }
    row(vec![
        name(o),
        age(o, now),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
    ])
}
