//! Service cluster IPs: drawn from --service-cluster-ip-range, each held
//! as an IPAddress object, never given twice, kept across updates,
//! returned on delete.

mod common;
use common::*;
use serde_json::{json, Value};

const SERVICES: &str = "/api/v1/namespaces/default/services";
const IPS: &str = "/apis/networking.k8s.io/v1/ipaddresses";

fn service(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["ports"] = json!([{"port": 80}]);
    json!({"metadata": {"name": name}, "spec": spec})
}

fn holder(s: &Server, ip: &str) -> Option<Value> {
    let (code, obj) = s.get(&format!("{IPS}/{ip}"));
    (code == 200).then(|| obj["spec"]["parentRef"].clone())
}

#[test]
fn cluster_ips_are_allocated_reserved_and_released() {
    let s = Server::start_with(2, &["--service-cluster-ip-range", "10.96.0.0/28"]);
    // The kubernetes Service holds the range's first address.
    let (_, k) = s.get("/api/v1/namespaces/default/services/kubernetes");
    assert_eq!(k["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(holder(&s, "10.96.0.1").unwrap()["name"], "kubernetes");
    let (_, cidr) = s.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes");
    assert_eq!(cidr["spec"]["cidrs"], json!(["10.96.0.0/28"]));

    let (code, a) = s.post(SERVICES, &service("a", json!({})));
    assert_eq!(code, 201, "{a}");
    let ip = a["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(ip.starts_with("10.96.0."), "{ip}");
    assert_eq!(a["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(
        holder(&s, &ip).unwrap(),
        json!({"group": "", "resource": "services", "namespace": "default", "name": "a"})
    );

    // Asking for a held address, or one outside the range: 422.
    let (code, st) = s.post(SERVICES, &service("b", json!({"clusterIP": ip})));
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("already allocated"),
        "{st}"
    );
    let (code, st) = s.post(SERVICES, &service("b", json!({"clusterIP": "10.97.0.9"})));
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("not in the valid range"),
        "{st}"
    );

    // A specific free address (not the one "a" drew); a headless Service
    // holds none.
    let fixed = if ip == "10.96.0.9" {
        "10.96.0.10"
    } else {
        "10.96.0.9"
    };
    let other = if ip == "10.96.0.11" {
        "10.96.0.12"
    } else {
        "10.96.0.11"
    };
    let (code, b) = s.post(SERVICES, &service("b", json!({"clusterIP": fixed})));
    assert_eq!((code, &b["spec"]["clusterIP"]), (201, &json!(fixed)), "{b}");
    let (code, h) = s.post(SERVICES, &service("h", json!({"clusterIP": "None"})));
    assert_eq!(
        (code, &h["spec"]["clusterIPs"]),
        (201, &json!(["None"])),
        "{h}"
    );

    // An update that leaves the address out keeps it; one that changes it is refused.
    let mut put = b.clone();
    put["spec"].as_object_mut().unwrap().remove("clusterIP");
    put["spec"].as_object_mut().unwrap().remove("clusterIPs");
    let (code, kept) = s.put(&format!("{SERVICES}/b"), &put);
    assert_eq!(
        (code, &kept["spec"]["clusterIP"]),
        (200, &json!(fixed)),
        "{kept}"
    );
    let (code, st) = s.patch(
        &format!("{SERVICES}/b"),
        "application/merge-patch+json",
        &json!({"spec": {"clusterIP": other, "clusterIPs": [other]}}),
    );
    assert_eq!(code, 422, "{st}");

    // Deleting gives the address back.
    assert_eq!(s.delete(&format!("{SERVICES}/b")).0, 200);
    assert!(holder(&s, fixed).is_none());
    let (code, again) = s.post(SERVICES, &service("c", json!({"clusterIP": fixed})));
    assert_eq!(code, 201, "{again}");

    // A PUT that creates a Service allocates as a POST does.
    let (code, d) = s.put(&format!("{SERVICES}/d"), &service("d", json!({})));
    assert_eq!(code, 201, "{d}");
    let d_ip = d["spec"]["clusterIP"].as_str().unwrap();
    assert_eq!(holder(&s, d_ip).unwrap()["name"], "d");

    // The /28 has 14 usable addresses: kubernetes, a, c, d hold four;
    // ten more fit and the next is refused, every address distinct.
    let mut seen: Vec<String> = vec!["10.96.0.1".into(), ip, fixed.into(), d_ip.into()];
    for i in 0..10 {
        let (code, o) = s.post(SERVICES, &service(&format!("f{i}"), json!({})));
        assert_eq!(code, 201, "{o}");
        let got = o["spec"]["clusterIP"].as_str().unwrap().to_string();
        assert!(!seen.contains(&got), "{got} given twice");
        seen.push(got);
    }
    let (code, full) = s.post(SERVICES, &service("full", json!({})));
    assert_eq!(code, 500, "{full}");
    assert!(full["message"].as_str().unwrap().contains("full"), "{full}");
}

#[test]
fn dual_stack_ranges_serve_both_families() {
    let s = Server::start_with(
        1,
        &["--service-cluster-ip-range", "10.96.0.0/24,fd00:10::/112"],
    );
    let (code, o) = s.post(
        SERVICES,
        &service("dual", json!({"ipFamilyPolicy": "PreferDualStack"})),
    );
    assert_eq!(code, 201, "{o}");
    assert_eq!(o["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    let ips = o["spec"]["clusterIPs"].as_array().unwrap();
    assert!(ips[1].as_str().unwrap().starts_with("fd00:10::"), "{o}");
    assert!(holder(&s, ips[1].as_str().unwrap()).is_some());
    let (code, six) = s.post(SERVICES, &service("six", json!({"ipFamilies": ["IPv6"]})));
    assert_eq!(code, 201, "{six}");
    assert!(
        six["spec"]["clusterIP"].as_str().unwrap().contains(':'),
        "{six}"
    );
    let single = Server::start(1);
    let (code, st) = single.post(
        SERVICES,
        &service("dual", json!({"ipFamilyPolicy": "RequireDualStack"})),
    );
    assert_eq!(code, 422, "{st}");
}

/// At start, an address a Service holds without its IPAddress gets one
/// again, and an allocator-managed address whose Service is gone is
/// released once older than the request timeout (a younger one may be a
/// create still under way); later passes release it when it comes of age
/// (kube's repair loop).
#[test]
fn a_restart_repairs_leaked_and_missing_reservations() {
    let data = tempfile::tempdir().unwrap();
    let mut s = Server::launch(1, data.path(), &[]).unwrap();
    let leaked = json!({"metadata": {"name": "10.0.0.200", "labels": {
            "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "ghost"}}});
    assert_eq!(s.post(IPS, &leaked).0, 201);
    let (code, kept) = s.post(
        SERVICES,
        &service("kept", json!({"clusterIP": "10.0.0.201"})),
    );
    assert_eq!(code, 201, "{kept}");
    assert_eq!(s.delete(&format!("{IPS}/10.0.0.201")).0, 200);
    s.stop();
    let mut s = Server::launch(1, data.path(), &[]).unwrap();
    assert_eq!(holder(&s, "10.0.0.201").unwrap()["name"], "kept");
    assert_eq!(
        holder(&s, "10.0.0.200").unwrap()["name"],
        "ghost",
        "younger than the request timeout: kept"
    );
    s.stop();
    let fast = ["--request-timeout", "1s", "--service-repair-interval", "1s"];
    let s = Server::launch(1, data.path(), &fast).unwrap();
    eventually(30, "the leaked address released", || {
        holder(&s, "10.0.0.200").is_none().then_some(())
    });
    assert_eq!(holder(&s, "10.0.0.201").unwrap()["name"], "kept");
}

fn node_port(svc: &Value, i: usize) -> u64 {
    svc["spec"]["ports"][i]["nodePort"]
        .as_u64()
        .unwrap_or_else(|| panic!("no nodePort {i}: {svc}"))
}

fn message(st: &Value) -> &str {
    st["message"].as_str().unwrap_or_default()
}

/// Node ports come from --service-node-port-range, are never held twice,
/// stay with their port across updates, go back when the type stops
/// needing them or the Service is deleted, and are remembered across a
/// restart.
#[test]
fn node_ports_are_allocated_kept_and_released() {
    let data = tempfile::tempdir().unwrap();
    let range = ["--service-node-port-range", "30000-30002"];
    let mut s = Server::launch(2, data.path(), &range).unwrap();
    let node = |name: &str, node_port: Option<u64>| {
        let mut svc = service(name, json!({"type": "NodePort"}));
        if let Some(p) = node_port {
            svc["spec"]["ports"][0]["nodePort"] = json!(p);
        }
        svc
    };
    let (code, a) = s.post(SERVICES, &node("a", Some(30001)));
    assert_eq!(code, 201, "{a}");
    assert_eq!(node_port(&a, 0), 30001);

    let (code, st) = s.post(SERVICES, &node("b", Some(30001)));
    assert_eq!(code, 422, "{st}");
    assert!(
        message(&st).contains(
            "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"
        ),
        "{st}"
    );
    let (code, st) = s.post(SERVICES, &node("b", Some(31000)));
    assert_eq!(code, 422, "{st}");
    assert!(
        message(&st).contains("The range of valid ports is 30000-30002"),
        "{st}"
    );
    let (code, st) = s.post(SERVICES, &{
        let mut c = service("c", json!({}));
        c["spec"]["ports"][0]["nodePort"] = json!(30000);
        c
    });
    assert_eq!(code, 422, "a ClusterIP Service has no node ports: {st}");
    assert!(
        message(&st).contains("may not be used when `type` is 'ClusterIP'"),
        "{st}"
    );

    // Unspecified: any free one; a dry run takes none.
    let (code, dry) = s.post(&format!("{SERVICES}?dryRun=All"), &node("d", None));
    assert_eq!(code, 201, "{dry}");
    let (code, d) = s.post(SERVICES, &node("d", None));
    assert_eq!(code, 201, "{d}");
    let d_port = node_port(&d, 0);
    assert!([30000, 30002].contains(&d_port), "{d}");
    let (code, e) = s.post(SERVICES, &node("e", None));
    assert_eq!(code, 201, "{e}");
    let (code, st) = s.post(SERVICES, &node("f", None));
    assert_eq!(code, 500, "the range is full: {st}");
    assert!(message(&st).contains("range 30000-30002 is full"), "{st}");

    // An update that leaves the node port out keeps it.
    let (_, mut cur) = s.get(&format!("{SERVICES}/a"));
    cur["spec"]["ports"][0]
        .as_object_mut()
        .unwrap()
        .remove("nodePort");
    cur["metadata"]["labels"] = json!({"x": "y"});
    let (code, put) = s.put(&format!("{SERVICES}/a"), &cur);
    assert_eq!(code, 200, "{put}");
    assert_eq!(node_port(&put, 0), 30001);

    // Back to ClusterIP: the node port is dropped and free again.
    let (code, patched) = s.patch(
        &format!("{SERVICES}/a"),
        "application/merge-patch+json",
        &json!({"spec": {"type": "ClusterIP"}}),
    );
    assert_eq!(code, 200, "{patched}");
    assert!(
        patched["spec"]["ports"][0].get("nodePort").is_none(),
        "{patched}"
    );
    let (code, f) = s.post(SERVICES, &node("f", Some(30001)));
    assert_eq!(code, 201, "released on the type change: {f}");

    // Deleting gives the port back.
    assert_eq!(s.delete(&format!("{SERVICES}/e")).0, 200);
    let (code, g) = s.post(SERVICES, &node("g", None));
    assert_eq!(code, 201, "released on delete: {g}");

    // After a restart the stored Services' ports are still taken.
    s.stop();
    let s = Server::launch(2, data.path(), &range).unwrap();
    for p in [30000, 30001, 30002] {
        let (code, st) = s.post(SERVICES, &node("h", Some(p)));
        assert_eq!(code, 422, "{p} is held: {st}");
    }
}

/// A LoadBalancer with a local traffic policy gets a health-check node
/// port; a Service turned ExternalName gives its cluster IP back and one
/// turned back gets a new one.
#[test]
fn type_changes_allocate_and_release() {
    let s = Server::start_with(1, &["--service-cluster-ip-range", "10.96.0.0/29"]);
    let (code, lb) = s.post(
        SERVICES,
        &service(
            "lb",
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local"}),
        ),
    );
    assert_eq!(code, 201, "{lb}");
    let check = lb["spec"]["healthCheckNodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&check), "{lb}");
    assert_ne!(check, node_port(&lb, 0));

    let (code, a) = s.post(SERVICES, &service("a", json!({})));
    assert_eq!(code, 201, "{a}");
    let ip = a["spec"]["clusterIP"].as_str().unwrap().to_string();
    let (code, ext) = s.patch(
        &format!("{SERVICES}/a"),
        "application/merge-patch+json",
        &json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
    );
    assert_eq!(code, 200, "{ext}");
    assert!(ext["spec"].get("clusterIP").is_none(), "{ext}");
    assert!(holder(&s, &ip).is_none(), "{ip} released");
    let (code, back) = s.patch(
        &format!("{SERVICES}/a"),
        "application/merge-patch+json",
        &json!({"spec": {"type": "ClusterIP", "externalName": null}}),
    );
    assert_eq!(code, 200, "{back}");
    let again = back["spec"]["clusterIP"].as_str().unwrap();
    assert_eq!(holder(&s, again).unwrap()["name"], "a", "{back}");
}
