//! The connect subresources against a stand-in kubelet: `kubectl logs`
//! and `kubectl exec` (a WebSocket upgrade tunnelled through the server),
//! a raw protocol upgrade, `nodes/proxy`, `services/proxy` to an endpoint,
//! and the clear errors when there is nothing to reach.

mod common;
use common::kubectl::Kubectl;
use common::kubelet::FakeKubelet;
use common::*;
use serde_json::json;

/// A Node whose kubelet is at `address` (type, address) and `port`.
fn node(s: &Server, name: &str, address: (&str, &str), port: u16) {
    let (code, body) = s.post(
        "/api/v1/nodes",
        &json!({"metadata": {"name": name}, "status": {
            "addresses": [{"type": address.0, "address": address.1}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}),
    );
    assert_eq!(code, 201, "{body}");
}

/// A 503 whose message says `why`.
fn unavailable(code: u16, body: &serde_json::Value, why: &str) {
    assert_eq!(code, 503, "{body}");
    assert!(body["message"].as_str().unwrap().contains(why), "{body}");
}

/// A node "n1" whose kubelet is `kubelet`, and pod "web" on it.
fn cluster(s: &Server, kubelet: &FakeKubelet) {
    namespace(s, "apps");
    node(s, "n1", ("InternalIP", "127.0.0.1"), kubelet.port);
    for (name, node) in [("web", "n1"), ("pending", "")] {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if !node.is_empty() {
            spec["nodeName"] = json!(node);
        }
        let (code, body) = s.post(
            "/api/v1/namespaces/apps/pods",
            &json!({"metadata": {"name": name}, "spec": spec}),
        );
        assert_eq!(code, 201, "{body}");
    }
}

#[test]
fn logs_and_exec_reach_the_kubelet() {
    let kubelet = FakeKubelet::start();
    let s = Server::start(1);
    cluster(&s, &kubelet);
    let k = Kubectl::new(&s);

    let out = k.ok(&["logs", "-n", "apps", "web", "--tail=2"]);
    assert_eq!(out, "log line 1\nlog line 2\n");
    let seen = kubelet.saw("GET /containerLogs/apps/web/c").unwrap();
    assert!(seen.contains("tailLines=2"), "{seen}");

    // kubectl exec: a WebSocket through the server to the kubelet.
    let out = k.ok(&["exec", "-n", "apps", "web", "--", "echo", "hi"]);
    assert_eq!(out, "hello from exec\n");
    let seen = kubelet.saw("GET /exec/apps/web/c").unwrap();
    assert!(
        seen.contains("command=echo&command=hi") && seen.contains("output=1"),
        "{seen}"
    );

    // What cannot be reached says why.
    let (code, body) = s.get("/api/v1/namespaces/apps/pods/pending/exec?command=ls&stdout=true");
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "pod pending does not have a host assigned");
    let (code, body) = s.get("/api/v1/namespaces/apps/pods/web/exec?stdout=true");
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "you must specify at least 1 command");
    let (code, body) = s.get("/api/v1/namespaces/apps/pods/web/log?container=nope");
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "container nope is not valid for pod web");
    // A pod not yet scheduled has no logs, and that is not an error.
    let (code, _, text) = s.get_with("/api/v1/namespaces/apps/pods/pending/log", "*/*");
    assert_eq!((code, text.as_str()), (200, ""));
    let (code, body) = s.get("/api/v1/namespaces/apps/pods/ghost/log");
    assert_eq!(code, 404, "{body}");
    // The kubelet gone: the dial error, not a hang.
    node(&s, "n2", ("InternalIP", "127.0.0.1"), 1);
    let (code, body) = s.get("/api/v1/nodes/n2/proxy/healthz");
    unavailable(code, &body, "error trying to reach service");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("error trying to reach service"),
        "{body}"
    );
}

#[test]
fn upgrades_are_tunnelled_both_ways() {
    let kubelet = FakeKubelet::start();
    let s = Server::start(1);
    cluster(&s, &kubelet);
    upgrade_to_echo(
        &s,
        "POST /api/v1/namespaces/apps/pods/web/attach?stdin=true&stdout=true HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
    );
    assert!(kubelet
        .saw("POST /attach/apps/web/c?input=1&output=1")
        .is_some());
}

#[test]
fn proxies_reach_nodes_and_service_endpoints() {
    let kubelet = FakeKubelet::start();
    let s = Server::start(1);
    cluster(&s, &kubelet);
    let (code, _, text) = s.get_with("/api/v1/nodes/n1/proxy/stats/summary?only=cpu", "*/*");
    assert_eq!(code, 200, "{text}");
    assert_eq!(text, "kubelet saw GET /stats/summary?only=cpu\n");

    // A Service whose endpoint is a pod at the kubelet's address (the
    // stand-in answers HTTPS), reached by port name.
    let (code, body) = s.post(
        "/api/v1/namespaces/apps/services",
        &json!({"metadata": {"name": "web"}, "spec": {"ports": [{"name": "https", "port": 443}]}}),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = s.get("/api/v1/namespaces/apps/services/https:web:https/proxy/");
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        body["message"],
        "no endpoints available for service \"web\""
    );
    let (code, body) = s.patch(
        "/api/v1/namespaces/apps/pods/web/status",
        "application/merge-patch+json",
        &json!({"status": {"podIP": "127.0.0.1"}}),
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = s.post(
        "/api/v1/namespaces/apps/endpoints",
        &json!({"metadata": {"name": "web"}, "subsets": [{
            "addresses": [{"ip": "127.0.0.1", "targetRef": {"kind": "Pod", "name": "web", "namespace": "apps"}}],
            "ports": [{"name": "https", "port": kubelet.port}]}]}),
    );
    assert_eq!(code, 201, "{body}");
    // The endpoint is found (its pod has that address), and then refused:
    // like pods, Service endpoints are reached only at routable
    // addresses, never the server's own loopback (unit tests in
    // core/src/registry/location.rs cover the choice of endpoint).
    let (code, body) = s.get("/api/v1/namespaces/apps/services/https:web:https/proxy/ready");
    unavailable(code, &body, "address not allowed: 127.0.0.1");
    // A path past a name that itself says "proxy" goes where it should.
    node(&s, "proxy", ("InternalIP", "127.0.0.1"), kubelet.port);
    let (code, _, text) = s.get_with("/api/v1/nodes/proxy/proxy/proxy/x", "*/*");
    assert_eq!(code, 200, "{text}");
    assert_eq!(text, "kubelet saw GET /proxy/x\n");
    // A name that resolves to loopback does not reach another port there.
    node(&s, "local", ("Hostname", "localhost"), kubelet.port);
    let (code, body) = s.get("/api/v1/nodes/local:2379/proxy/health");
    unavailable(code, &body, "address not allowed");

    // Pods are reached only at routable addresses: never the server's own
    // loopback.
    let (code, body) = s.get("/api/v1/namespaces/apps/pods/web:8080/proxy/");
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "address not allowed");
    // The plain-HTTP port (system:masters for whoever reaches it) is never
    // a backend, whatever a Node's status says.
    node(&s, "sneaky", ("InternalIP", "127.0.0.1"), s.port);
    let (code, body) = s.get("/api/v1/nodes/sneaky/proxy/api/v1/secrets");
    unavailable(code, &body, "address not allowed");
    // Past the subresource, only a proxy has a path.
    assert_eq!(
        s.get("/api/v1/namespaces/apps/pods/web/status/extra").0,
        404
    );
}

#[test]
fn component_statuses_ask_the_components() {
    let s = Server::start(1);
    let (code, list) = s.get("/api/v1/componentstatuses");
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ComponentStatusList");
    assert_eq!(names(&list), ["controller-manager", "scheduler", "storage"]);
    for item in list["items"].as_array().unwrap() {
        let c = &item["conditions"][0];
        assert_eq!(c["type"], "Healthy", "{item}");
        // Nothing listens on the components' ports in a test run, unless
        // a real control plane does: either way the answer says which.
        if c["status"] == "False" {
            let port = if item["metadata"]["name"] == "scheduler" {
                "10259"
            } else {
                "10257"
            };
            assert!(
                c["error"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("127.0.0.1:{port}/healthz")),
                "{item}"
            );
        }
    }
    let (code, one) = s.get("/api/v1/componentstatuses/storage");
    assert_eq!(code, 200, "{one}");
    assert_eq!(one["conditions"][0]["status"], "True");
    assert_eq!(s.get("/api/v1/componentstatuses/etcd-9").0, 404);
    let (code, body) = s.post(
        "/api/v1/componentstatuses",
        &json!({"metadata": {"name": "x"}}),
    );
    assert_eq!(code, 405, "{body}");

    let k = Kubectl::new(&s);
    let out = k.command(&["get", "cs"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{stderr}"
    );
    let rows = common::kubectl::words(&stdout);
    assert_eq!(rows[0], ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    assert_eq!(rows.last().unwrap()[..3], ["storage", "Healthy", "ok"]);
}
