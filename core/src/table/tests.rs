use super::*;
use crate::catalog::Catalog;
use chrono::TimeZone;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).unwrap()
}

const CREATED: &str = "2026-01-01T00:00:00Z";

fn cells(printer: Printer, obj: Value) -> Vec<Value> {
    let r = row(&printer, &obj, now());
    assert_eq!(
        r.cells.len(),
        columns(&printer).len(),
        "one cell per column"
    );
    r.cells
}

fn strs(v: &[Value]) -> Vec<String> {
    v.iter()
        .map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn every_builtin_names_columns_kubectl_knows() {
    let heads =
        |p: Printer| -> Vec<String> { columns(&p).iter().map(|c| c.name.to_string()).collect() };
    assert_eq!(
        heads(Printer::Pod),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(
        heads(Printer::Service),
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    assert_eq!(
        heads(Printer::Deployment),
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        heads(Printer::Event),
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    assert_eq!(heads(Printer::Default), ["Name", "Age"]);
    let wide: Vec<&str> = columns(&Printer::Node)
        .iter()
        .filter(|c| c.priority == 1)
        .map(|c| c.name.as_ref())
        .collect();
    assert_eq!(
        wide,
        [
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime"
        ]
    );
    // Create-only kinds (the reviews) are never listed or read back;
    // kubectl prints only a name and an age for these two.
    const NAME_AND_AGE: &[&str] = &["deviceclasses", "resourceclaimtemplates"];
    for info in Catalog::with_builtins()
        .snapshot()
        .resources()
        .filter(|r| r.supports("get") && !NAME_AND_AGE.contains(&r.plural.as_str()))
    {
        assert_ne!(
            info.printer,
            Printer::Default,
            "{} has a printer",
            info.plural
        );
    }
}

#[test]
fn services() {
    let svc = json!({"metadata": {"name": "web", "creationTimestamp": CREATED}, "spec": {"type": "NodePort", "clusterIPs": ["10.0.0.10"], "selector": {"tier": "fe", "app": "web"},
        "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
    assert_eq!(
        strs(&cells(Printer::Service, svc)),
        [
            "web",
            "NodePort",
            "10.0.0.10",
            "<none>",
            "80:30080/TCP,53/UDP",
            "24h",
            "app=web,tier=fe"
        ]
    );
    let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]}});
    assert_eq!(
        strs(&cells(Printer::Service, lb.clone()))[1..5],
        ["LoadBalancer", "<none>", "<pending>", "443/TCP"]
    );
    let mut ready = lb;
    ready["status"] =
        json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example.com"}]}});
    ready["spec"]["externalIPs"] = json!(["5.6.7.8"]);
    assert_eq!(
        cells(Printer::Service, ready)[3],
        "1.2.3.4,lb.example.com,5.6.7.8"
    );
    let bare = json!({"metadata": {"name": "b"}, "spec": {}});
    assert_eq!(
        strs(&cells(Printer::Service, bare)),
        [
            "b",
            "ClusterIP",
            "<none>",
            "<none>",
            "<none>",
            "<unknown>",
            "<none>"
        ]
    );
    let ext = json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
    assert_eq!(cells(Printer::Service, ext)[3], "db.example.com");
}

#[test]
fn nodes() {
    let node = json!({"metadata": {"name": "n1", "creationTimestamp": CREATED, "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
                   "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.1.0.1"}],
                   "nodeInfo": {"kubeletVersion": "v1.34.0", "osImage": "Debian"}}});
    assert_eq!(
        strs(&cells(Printer::Node, node)),
        [
            "n1",
            "NotReady,SchedulingDisabled",
            "control-plane,edge,worker",
            "24h",
            "v1.34.0",
            "10.1.0.1",
            "<none>",
            "Debian",
            "<unknown>",
            "<unknown>"
        ]
    );
    let fresh = json!({"metadata": {"name": "n2"}});
    assert_eq!(
        strs(&cells(Printer::Node, fresh))[1..3],
        ["Unknown", "<none>"]
    );
}

#[test]
fn small_kinds() {
    let cm = json!({"metadata": {"name": "c", "creationTimestamp": CREATED}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(
        cells(Printer::ConfigMap, cm),
        vec![json!("c"), json!(3), json!("24h")]
    );
    let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
    assert_eq!(
        cells(Printer::Secret, secret)[1..3],
        [json!("kubernetes.io/tls"), json!(2)]
    );
    let sa = json!({"metadata": {"name": "robot"}, "secrets": [{"name": "t"}]});
    assert_eq!(cells(Printer::ServiceAccount, sa)[1], json!(1));
    let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "node-1"}});
    assert_eq!(cells(Printer::Lease, lease)[1], "node-1");
    let ns = json!({"metadata": {"name": "n"}, "status": {"phase": "Terminating"}});
    assert_eq!(cells(Printer::Namespace, ns)[1], "Terminating");
}

#[test]
fn endpoints_show_three_addresses_then_a_count() {
    let ep = |n: usize| {
        let addrs: Vec<Value> = (0..n)
            .map(|i| json!({"ip": format!("10.0.0.{i}")}))
            .collect();
        json!({"metadata": {"name": "e"}, "subsets": [{"addresses": addrs, "ports": [{"port": 8080}]}]})
    };
    assert_eq!(
        cells(Printer::Endpoints, ep(2))[1],
        "10.0.0.0:8080,10.0.0.1:8080"
    );
    assert_eq!(
        cells(Printer::Endpoints, ep(5))[1],
        "10.0.0.0:8080,10.0.0.1:8080,10.0.0.2:8080 + 2 more..."
    );
    assert_eq!(
        cells(Printer::Endpoints, json!({"metadata": {"name": "e"}}))[1],
        "<none>"
    );
    let headless =
        json!({"metadata": {"name": "h"}, "subsets": [{"addresses": [{"ip": "fd00::1"}]}]});
    assert_eq!(cells(Printer::Endpoints, headless)[1], "fd00::1");
}

#[test]
fn deployments_and_events() {
    let d = json!({"metadata": {"name": "web", "creationTimestamp": CREATED}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
    assert_eq!(
        cells(Printer::Deployment, d),
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("24h"),
            json!("web,log"),
            json!("nginx:1.27,busybox"),
            json!("app=web")
        ]
    );
    let ev = json!({"metadata": {"name": "web.1"}, "type": "Warning", "reason": "BackOff", "message": " restarting \n",
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{web}"},
        "source": {"component": "kubelet", "host": "n1"}, "firstTimestamp": "2026-01-01T23:00:00Z", "lastTimestamp": "2026-01-01T23:55:00Z", "count": 4});
    assert_eq!(
        strs(&cells(Printer::Event, ev)),
        [
            "5m",
            "Warning",
            "BackOff",
            "pod/web-1",
            "spec.containers{web}",
            "kubelet, n1",
            "restarting",
            "60m",
            "4",
            "web.1"
        ]
    );
    let new_api = json!({"metadata": {"name": "x"}, "eventTime": "2026-01-01T23:59:00.000000Z", "reportingComponent": "sched", "involvedObject": {"kind": "Node"}});
    let c = strs(&cells(Printer::Event, new_api));
    assert_eq!(
        (c[0].as_str(), c[3].as_str(), c[5].as_str(), c[8].as_str()),
        ("60s", "node", "sched", "1")
    );
}

#[test]
fn tables_carry_what_include_object_asks_for() {
    let cat = Catalog::with_builtins().snapshot();
    let info = cat.lookup("", "v1", "configmaps").unwrap();
    let obj = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "resourceVersion": "7"}, "data": {"a": "b"}});
    let list = TableMeta {
        resource_version: "9".into(),
        continue_token: Some("tok".into()),
        remaining: Some(4),
    };
    let opts = |include| TableOptions {
        version: MetaVersion::V1,
        include,
        headers: true,
    };
    let t = table(
        info,
        std::slice::from_ref(&obj),
        &opts(IncludeObject::Metadata),
        &list,
        now(),
    );
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": "9", "continue": "tok", "remainingItemCount": 4})
    );
    assert_eq!(
        t["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "c", "resourceVersion": "7"}})
    );
    assert_eq!(t["columnDefinitions"][0]["format"], "name");
    assert_eq!(
        t["columnDefinitions"][1],
        json!({"name": "Data", "type": "string", "format": "", "description": "How many keys the config map holds (text and binary).", "priority": 0})
    );
    let t = table(
        info,
        std::slice::from_ref(&obj),
        &opts(IncludeObject::Object),
        &list,
        now(),
    );
    assert_eq!(t["rows"][0]["object"], obj);
    let t = table(
        info,
        std::slice::from_ref(&obj),
        &opts(IncludeObject::None),
        &TableMeta::default(),
        now(),
    );
    assert_eq!(t["rows"][0]["object"], Value::Null);
    assert_eq!(t["metadata"], json!({}));
    let quiet = TableOptions {
        headers: false,
        version: MetaVersion::V1beta1,
        include: IncludeObject::Metadata,
    };
    let t = table(
        info,
        std::slice::from_ref(&obj),
        &quiet,
        &TableMeta::default(),
        now(),
    );
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert!(t["columnDefinitions"].is_null());
    let l = partial_list(std::slice::from_ref(&obj), MetaVersion::V1, &list);
    assert_eq!(l["kind"], "PartialObjectMetadataList");
    assert_eq!(l["items"][0]["metadata"]["name"], "c");
    assert_eq!(IncludeObject::parse("Bogus"), None);
}
