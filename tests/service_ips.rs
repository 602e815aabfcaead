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

/// At start, an allocator-managed address whose Service is gone is
/// released, and an address a Service holds without its IPAddress gets one
/// again (kube's repair loop).
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
    let s = Server::launch(1, data.path(), &[]).unwrap();
    assert!(
        holder(&s, "10.0.0.200").is_none(),
        "the leaked address is released"
    );
    assert_eq!(holder(&s, "10.0.0.201").unwrap()["name"], "kept");
}
