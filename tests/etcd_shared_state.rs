//! `--storage etcd`: what replicas keep beside the objects, where
//! kube-apiserver keeps it, so that servers on one etcd agree — node
//! ports in the shared bitmap (never one port twice), the `kubernetes`
//! Service's endpoints from every live server's lease, and Events under
//! etcd leases. Skipped, with a message, without an etcd binary.

#![cfg(feature = "etcd")]

mod common;

use common::etcd::EtcdCluster;
use common::{eventually, Server};
use serde_json::{json, Value};
use std::collections::BTreeSet;

const SVCS: &str = "/api/v1/namespaces/default/services";

fn node_port_service(name: &str, node_port: Option<u16>) -> Value {
    let mut port = json!({"port": 80, "protocol": "TCP"});
    if let Some(p) = node_port {
        port["nodePort"] = json!(p);
    }
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": "NodePort", "selector": {"app": name}, "ports": [port]}})
}

fn node_port(svc: &Value) -> u16 {
    svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap() as u16
}

#[test]
fn replicas_never_hand_out_one_node_port_twice() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let range = ["--service-node-port-range", "30000-30009"];
    let a = etcd.replica(2, &range);
    let b = etcd.replica(2, &range);

    // Ten ports, twenty creates racing from both replicas: exactly ten
    // succeed, each with its own port; the rest find the range full.
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let (s, name) = (if i % 2 == 0 { &a } else { &b }, format!("svc-{i}"));
                scope.spawn(move || s.post(SVCS, &node_port_service(&name, None)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let created: Vec<&Value> = answers
        .iter()
        .filter(|(c, _)| *c == 201)
        .map(|(_, v)| v)
        .collect();
    let ports: BTreeSet<u16> = created.iter().map(|s| node_port(s)).collect();
    assert_eq!(created.len(), 10, "{answers:?}");
    assert_eq!(ports, (30000..=30009).collect(), "{answers:?}");
    for (code, status) in answers.iter().filter(|(c, _)| *c != 201) {
        assert_eq!(*code, 500, "{status}");
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains("range 30000-30009 is full"),
            "{status}"
        );
    }

    // A port freed on one replica is taken on the other, and a port asked
    // for by name is refused while another Service holds it.
    let holder = created[0]["metadata"]["name"].as_str().unwrap().to_string();
    let freed = node_port(created[0]);
    let other = node_port(created[1]);
    assert_eq!(a.delete(&format!("{SVCS}/{holder}")).0, 200);
    let (code, status) = b.post(SVCS, &node_port_service("asks-taken", Some(other)));
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("provided port is already allocated"),
        "{status}"
    );
    let (code, svc) = b.post(SVCS, &node_port_service("asks-freed", Some(freed)));
    assert_eq!(code, 201, "{svc}");
    assert_eq!(node_port(&svc), freed);

    // A replica started now agrees on what is taken.
    let c = etcd.replica(1, &range);
    let (code, status) = c.post(SVCS, &node_port_service("late", None));
    assert_eq!(code, 500, "{status}");
    // A type change gives the port back, to every replica.
    let path = format!("{SVCS}/asks-freed");
    let (_, mut svc) = c.get(&path);
    svc["spec"]["type"] = json!("ClusterIP");
    let (code, changed) = c.put(&path, &svc);
    assert_eq!(code, 200, "{changed}");
    assert!(
        changed["spec"]["ports"][0].get("nodePort").is_none(),
        "{changed}"
    );
    let (code, svc) = a.post(SVCS, &node_port_service("after-change", None));
    assert_eq!((code, node_port(&svc)), (201, freed), "{svc}");
}

/// A free port on `ip`, to give replicas one secure port on different
/// loopback addresses (kube's endpoints hold one port for all servers).
fn free_port_on(ip: &str) -> u16 {
    std::net::TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn kubernetes_endpoints(s: &Server) -> (Vec<String>, Vec<String>) {
    let (_, ep) = s.get("/api/v1/namespaces/default/endpoints/kubernetes");
    let from_endpoints = ep
        .pointer("/subsets/0/addresses")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|x| x["ip"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    let (_, slice) =
        s.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes");
    let from_slice = slice["endpoints"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["addresses"][0].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    (from_endpoints, from_slice)
}

#[test]
fn the_kubernetes_service_lists_every_live_replica() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let port = free_port_on("127.0.0.2").to_string();
    let replica = |bind: &str, advertise: &str| {
        etcd.replica(
            1,
            &[
                "--secure-port",
                &port,
                "--bind-address",
                bind,
                "--advertise-address",
                advertise,
            ],
        )
    };
    let a = replica("127.0.0.2", "192.0.2.11");
    let mut b = replica("127.0.0.3", "192.0.2.12");
    let both = vec!["192.0.2.11".to_string(), "192.0.2.12".to_string()];
    eventually(30, "both replicas in the endpoints", || {
        (kubernetes_endpoints(&a) == (both.clone(), both.clone())).then_some(())
    });
    let (_, ep) = a.get("/api/v1/namespaces/default/endpoints/kubernetes");
    assert_eq!(
        ep["subsets"][0]["ports"][0]["port"].as_u64(),
        port.parse().ok(),
        "{ep}"
    );
    assert_eq!(
        ep["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"],
        "true"
    );
    let (_, slice) =
        a.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes");
    assert_eq!(slice["addressType"], "IPv4", "{slice}");
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "kubernetes"
    );
    assert_eq!(
        slice["endpoints"][0]["conditions"]["ready"], true,
        "{slice}"
    );

    // A killed replica's lease runs out (15 s) and the next round of the
    // survivor (every 10 s) takes its address out.
    b.kill();
    let survivor = vec!["192.0.2.11".to_string()];
    eventually(45, "the dead replica out of the endpoints", || {
        (kubernetes_endpoints(&a) == (survivor.clone(), survivor.clone())).then_some(())
    });
}

#[test]
fn events_live_under_etcd_leases() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let a = etcd.replica(1, &["--event-ttl", "2s"]);
    let b = etcd.replica(1, &["--event-ttl", "2s"]);
    let events = "/api/v1/namespaces/default/events";
    let mut watch = b.watch(&format!("{events}?watch=1"));
    let event = json!({"metadata": {"name": "short-lived"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Test", "message": "expires", "type": "Normal"});
    assert_eq!(a.post(events, &event).0, 201);
    let cm = common::configmap("stays", json!({}));
    assert_eq!(a.post("/api/v1/namespaces/default/configmaps", &cm).0, 201);
    // etcd deletes the key when its lease runs out; every replica's watch
    // sees it go.
    let seen = watch.until(|e| e["type"] == "DELETED");
    assert_eq!(
        seen.last().unwrap()["object"]["metadata"]["name"],
        "short-lived"
    );
    for s in [&a, &b] {
        assert_eq!(s.get(&format!("{events}/short-lived")).0, 404);
        assert_eq!(s.get("/api/v1/namespaces/default/configmaps/stays").0, 200);
    }
}

/// kube's repair loop over the shared bitmap: a node port whose Service
/// vanished without giving it back (its server killed half way) is given
/// back once three passes in a row found it unused, and a port a Service
/// holds that the bitmap lost is taken again, with a Warning Event on
/// the Service.
#[test]
fn repair_passes_give_back_leaked_node_ports_and_retake_lost_ones() {
    let Some(etcd) = EtcdCluster::start(1) else {
        return;
    };
    let args = [
        "--service-node-port-range",
        "30000-30001",
        "--service-repair-interval",
        "2s",
    ];
    let a = etcd.replica(1, &args);
    let (code, svc) = a.post(SVCS, &node_port_service("leaky", Some(30000)));
    assert_eq!(code, 201, "{svc}");
    etcd.delete_key("/registry/services/specs/default/leaky");
    a.wait_gone(&format!("{SVCS}/leaky"));
    let (code, st) = a.post(SVCS, &node_port_service("early", Some(30000)));
    assert_eq!(
        code, 422,
        "a port unused for less than three passes stays taken: {st}"
    );
    eventually(60, "the leaked port given back", || {
        let (code, _) = a.post(SVCS, &node_port_service("late", Some(30000)));
        (code == 201).then_some(())
    });

    let (code, held) = a.post(SVCS, &node_port_service("held", Some(30001)));
    assert_eq!(code, 201, "{held}");
    etcd.delete_key("/registry/ranges/servicenodeports");
    let event = eventually(60, "a PortNotAllocated Event on the Service", || {
        let (_, events) = a.get("/apis/events.k8s.io/v1/namespaces/default/events");
        events["items"]
            .as_array()?
            .iter()
            .find(|e| e["reason"] == "PortNotAllocated" && e["regarding"]["name"] == "held")
            .cloned()
    });
    assert_eq!(
        event["note"], "Port 30001 is not allocated; repairing",
        "{event}"
    );
    assert_eq!(event["type"], "Warning");
    assert_eq!(
        event["reportingController"],
        "portallocator-repair-controller"
    );
    assert_eq!(event["regarding"]["uid"], held["metadata"]["uid"]);
    // The pass records its Events before it stores the bitmap (as kube's
    // does): the port is held again once the bitmap is back.
    eventually(60, "the repaired bitmap stored", || {
        etcd.has_key("/registry/ranges/servicenodeports")
            .then_some(())
    });
    let (code, st) = a.post(SVCS, &node_port_service("wants-held", Some(30001)));
    assert_eq!(code, 422, "the lost port is taken again: {st}");
}
