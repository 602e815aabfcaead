//! The aggregation layer against the real binary: an extension API server
//! (`kubeshard-bench metrics-server`) registered by APIService is served
//! through kubeshard — raw GETs, `kubectl top`, a watch, discovery and
//! OpenAPI — with the caller authorized here first and named to the
//! extension server by the front proxy; it turns unavailable when the
//! extension server stops and recovers when it comes back. Also: local
//! APIServices follow the catalog (CRDs included), APIServices are
//! validated, and kubeshard itself accepts an authenticating proxy's
//! request headers.

mod common;
use common::extension::{available, MetricsServer, APISERVICE};
use common::kubectl::Kubectl;
use common::tls::{rbac, Who};
use common::*;
use serde_json::{json, Value};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn wait_available(s: &Server, status: &str) -> Value {
    eventually(40, &format!("{APISERVICE} Available={status}"), || {
        available(s, APISERVICE).filter(|c| c["status"] == status)
    })
}

fn header(h: &http::HeaderMap, name: &str) -> String {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[test]
fn an_extension_server_is_served_through_the_aggregator() {
    let s = Server::start(2);
    let mut ext = MetricsServer::start(&s, &["node-a", "node-b"], &["shop/web-1"]);
    ext.register(&s);
    let cond = wait_available(&s, "True");
    assert_eq!(cond["reason"], "Passed", "{cond}\n{}", ext.log());
    assert_eq!(cond["message"], "all checks passed");

    // Raw reads through kubectl and kubectl top.
    let k = Kubectl::new(&s);
    let nodes: Value =
        serde_json::from_str(&k.ok(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"]))
            .unwrap();
    assert_eq!(nodes["kind"], "NodeMetricsList");
    assert_eq!(names(&nodes), ["node-a", "node-b"]);
    for n in ["node-a", "node-b"] {
        let (code, out) = s.post(
            "/api/v1/nodes",
            &json!({"metadata": {"name": n}, "status": {
                "capacity": {"cpu": "4", "memory": "8Gi"},
                "allocatable": {"cpu": "4", "memory": "8Gi"}}}),
        );
        assert_eq!(code, 201, "{out}");
    }
    let top = k.ok(&["top", "nodes"]);
    let rows = kubectl::words(&top);
    assert_eq!(rows[0][0], "NAME", "{top}");
    assert!(
        rows.iter().any(|r| r[0] == "node-a" && r[1] == "250m"),
        "{top}"
    );
    let top = k.ok(&["top", "pods", "-n", "shop"]);
    assert!(
        kubectl::words(&top)
            .iter()
            .any(|r| r[0] == "web-1" && r[1] == "10m" && r[2] == "20Mi"),
        "{top}"
    );

    // The extension server sees the caller as the front proxy names it,
    // over a verified front-proxy certificate; what the client sent as
    // identity headers or credentials does not reach it.
    rbac::cluster_role(
        &s,
        "metrics-reader",
        json!({}),
        vec![rbac::rule(
            &["get", "list", "watch"],
            &["metrics.k8s.io"],
            &["nodes", "pods"],
        )],
    );
    rbac::bind(
        &s,
        "",
        "metrics-reader",
        "ClusterRole",
        "metrics-reader",
        vec![rbac::subject("Group", "devs")],
    );
    let alice = s
        .client(&Who::cert("alice", &["devs"]))
        .with_header("X-Remote-User", "mallory")
        .with_header("X-Remote-Group", "system:masters");
    let (code, h, body) = alice.raw("GET", "/apis/metrics.k8s.io/v1beta1/nodes/node-a", vec![]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(header(&h, "x-seen-user"), "alice");
    assert_eq!(header(&h, "x-seen-groups"), "devs,system:authenticated");
    assert_eq!(header(&h, "x-seen-proxy"), "front-proxy-client");
    // Impersonation: the extension server sees whom the caller acts as.
    let (code, h, body) = s
        .client(&Who::cert("root", &["system:masters"]))
        .with_header("Impersonate-User", "carol")
        .with_header("Impersonate-Group", "devs")
        .with_header("Impersonate-Extra-Scopes", "read")
        .raw("GET", "/apis/metrics.k8s.io/v1beta1/nodes/node-b", vec![]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(header(&h, "x-seen-user"), "carol");
    assert_eq!(header(&h, "x-seen-extra"), "scopes=read");
    // A bearer token authenticates here and goes no further.
    let token = common::tls::service_account_token(&s, "default", "default");
    rbac::bind(
        &s,
        "",
        "sa-metrics",
        "ClusterRole",
        "metrics-reader",
        vec![rbac::subject("ServiceAccount", "default/default")],
    );
    let (code, h, body) =
        s.client(&Who::token(&token))
            .raw("GET", "/apis/metrics.k8s.io/v1beta1/nodes", vec![]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        header(&h, "x-seen-user"),
        "system:serviceaccount:default:default"
    );
    assert_eq!(header(&h, "x-seen-authorization"), "");
    // Without RBAC for the group: refused here, never proxied.
    let (code, h, body) =
        s.client(&Who::cert("bob", &[]))
            .raw("GET", "/apis/metrics.k8s.io/v1beta1/nodes", vec![]);
    assert_eq!(code, 403, "{body}");
    assert!(h.get("x-seen-user").is_none());
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"nodes.metrics.k8s.io is forbidden: User "bob" cannot list resource "nodes" in API group "metrics.k8s.io" at the cluster scope"#
    );

    // A watch streams through: the ADDED events, then a MODIFIED one the
    // extension server sends later.
    let mut w = s.watch("/apis/metrics.k8s.io/v1beta1/nodes?watch=true");
    let events = w.until(|e| e["type"] == "MODIFIED");
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[1]["type"], "ADDED");
    assert_eq!(events.last().unwrap()["object"]["kind"], "NodeMetrics");
    drop(w);

    // A protocol upgrade passes through, both ways.
    upgrade_through(&s);

    // Discovery: legacy, aggregated and per group; kubectl api-resources.
    let (_, groups) = s.get("/apis");
    let metrics = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "metrics.k8s.io")
        .cloned()
        .expect("metrics.k8s.io in /apis");
    assert_eq!(
        metrics["preferredVersion"]["groupVersion"],
        "metrics.k8s.io/v1beta1"
    );
    let (code, group) = s.get("/apis/metrics.k8s.io");
    assert_eq!((code, group["kind"].as_str()), (200, Some("APIGroup")));
    // The group version's own document comes from the extension server.
    let (code, list) = s.get("/apis/metrics.k8s.io/v1beta1");
    assert_eq!(
        (code, list["kind"].as_str()),
        (200, Some("APIResourceList"))
    );
    assert_eq!(list["groupVersion"], "metrics.k8s.io/v1beta1");
    let (_, _, agg) = s.get_with("/apis", AGGREGATED);
    let agg: Value = serde_json::from_str(&agg).unwrap();
    let entry = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "metrics.k8s.io")
        .cloned()
        .expect("metrics.k8s.io in aggregated discovery");
    assert_eq!(entry["versions"][0]["freshness"], "Current");
    let resources: Vec<&str> = entry["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource"].as_str().unwrap())
        .collect();
    assert_eq!(resources, ["nodes", "pods"]);
    let api_resources = k.ok(&["api-resources", "--api-group=metrics.k8s.io"]);
    assert!(
        kubectl::words(&api_resources)
            .iter()
            .any(|r| r[0] == "pods" && r.contains(&"PodMetrics".to_string())),
        "{api_resources}"
    );

    // OpenAPI: the group version's v3 document, and v2 paths/definitions.
    let (_, index) = s.get("/openapi/v3");
    let url = index["paths"]["apis/metrics.k8s.io/v1beta1"]["serverRelativeURL"]
        .as_str()
        .expect("metrics.k8s.io in the v3 index")
        .to_string();
    let (code, doc) = s.get(&url);
    assert_eq!(code, 200);
    assert!(doc["components"]["schemas"]
        .get("io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics")
        .is_some());
    let (_, v2) = s.get("/openapi/v2");
    assert!(v2["paths"]
        .get("/apis/metrics.k8s.io/v1beta1/nodes/{name}")
        .is_some());
    assert!(v2["definitions"]
        .get("io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics")
        .is_some());
    let listed = k.ok(&["get", "apiservices"]);
    let rows = kubectl::words(&listed);
    assert!(
        rows.iter()
            .any(|r| r[0] == APISERVICE && r[1] == "kube-system/metrics-server" && r[2] == "True"),
        "{listed}"
    );

    let gauge = |s: &Server| {
        let (_, _, text) = s.get_with("/metrics", "text/plain");
        text.lines()
            .find(|l| {
                l.starts_with(r#"aggregator_unavailable_apiservice{name="v1beta1.metrics.k8s.io"}"#)
            })
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
    };
    assert_eq!(gauge(&s).as_deref(), Some("0"));

    // The extension server goes away: 503, then the condition says why
    // and discovery calls the group version stale.
    ext.stop();
    let (code, _, body) = s.client(&Who::cert("root", &["system:masters"])).raw(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes",
        vec![],
    );
    assert_eq!(code, 503, "{body}");
    let cond = wait_available(&s, "False");
    assert_eq!(cond["reason"], "FailedDiscoveryCheck", "{cond}");
    assert!(
        cond["message"]
            .as_str()
            .unwrap()
            .starts_with("failing or missing response from https://127.0.0.1:"),
        "{cond}"
    );
    let (code, _, body) = s.client(&Who::cert("root", &["system:masters"])).raw(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes",
        vec![],
    );
    assert_eq!((code, body.as_str()), (503, "service unavailable\n"));
    eventually(10, "the unavailable gauge", || {
        (gauge(&s).as_deref() == Some("1")).then_some(())
    });
    eventually(10, "a stale group version in discovery", || {
        let (_, _, agg) = s.get_with("/apis", AGGREGATED);
        agg.contains(r#""freshness":"Stale""#).then_some(())
    });
    // Back again: available, and served.
    ext.restart();
    wait_available(&s, "True");
    let (code, nodes) = s.get("/apis/metrics.k8s.io/v1beta1/nodes");
    assert_eq!(code, 200, "{nodes}");
    assert_eq!(names(&nodes), ["node-a", "node-b"]);
}

/// Switches to the extension server's `echo` protocol through kubeshard
/// and sees bytes come back.
fn upgrade_through(s: &Server) {
    let head = upgrade_to_echo(
        s,
        "POST /apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-1/echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Remote-User: mallory\r\n\r\n",
    );
    assert!(head.contains("x-seen-user: system:unsecured"), "{head}");
}

/// What Python users write to read metrics: the official client's
/// CustomObjectsApi, through kubeshard to the extension server.
#[test]
fn the_python_client_reads_metrics_through_the_aggregator() {
    let py = common::python::python();
    let s = Server::start(1);
    let ext = MetricsServer::start(&s, &["node-a"], &["shop/web-1", "shop/web-2"]);
    ext.register(&s);
    wait_available(&s, "True");
    let script = r#"
import json, sys
from kubernetes import client
c = client.Configuration()
c.host = sys.argv[1]
api = client.ApiClient(c)
groups = [g.name for g in client.ApisApi(api).get_api_versions().groups]
metrics = client.CustomObjectsApi(api)
nodes = metrics.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
pods = metrics.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", "shop", "pods")
one = metrics.get_namespaced_custom_object("metrics.k8s.io", "v1beta1", "shop", "pods", "web-2")
print(json.dumps({
    "metrics_group": "metrics.k8s.io" in groups,
    "nodes": [n["metadata"]["name"] for n in nodes["items"]],
    "pods": [[p["metadata"]["name"], p["containers"][0]["usage"]["cpu"]] for p in pods["items"]],
    "one": one["metadata"]["name"],
}))
"#;
    let out = std::process::Command::new(&py)
        .args(["-c", script, &s.base])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen,
        json!({"metrics_group": true, "nodes": ["node-a"],
               "pods": [["web-1", "10m"], ["web-2", "10m"]], "one": "web-2"})
    );
}

#[test]
fn local_apiservices_follow_the_catalog() {
    let s = Server::start(1);
    let a = eventually(20, "v1.apps registered", || {
        let (code, a) = s.get("/apis/apiregistration.k8s.io/v1/apiservices/v1.apps");
        (code == 200 && a["status"]["conditions"].is_array()).then_some(a)
    });
    assert_eq!(
        a["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    assert_eq!(a["spec"]["groupPriorityMinimum"], 17800);
    assert_eq!(a["status"]["conditions"][0]["reason"], "Local");
    assert_eq!(
        s.get("/apis/apiregistration.k8s.io/v1/apiservices/v1.").0,
        200
    );
    let k = Kubectl::new(&s);
    let rows = kubectl::words(&k.ok(&["get", "apiservices"]));
    assert!(rows
        .iter()
        .any(|r| r[0] == "v1.apps" && r[1] == "Local" && r[2] == "True"));

    // A CRD's group version gets one, and loses it with the CRD.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let (code, out) = s.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(code, 201, "{out}");
    let path = "/apis/apiregistration.k8s.io/v1/apiservices/v1.stable.example.com";
    let a = eventually(20, "the CRD's APIService", || {
        let (code, a) = s.get(path);
        (code == 200).then_some(a)
    });
    assert_eq!(
        a["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(a["spec"]["groupPriorityMinimum"], 1000);
    s.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.stable.example.com");
    s.wait_gone(path);

    // Validation as kube's.
    let (code, out) = s.post(
        "/apis/apiregistration.k8s.io/v1/apiservices",
        &json!({"metadata": {"name": "v1.wrong.example.com"}, "spec": {
            "group": "metrics.example.com", "version": "v1", "groupPriorityMinimum": 0,
            "versionPriority": 100, "insecureSkipTLSVerify": true, "caBundle": "AAAA",
            "service": {"namespace": "default", "name": "x"}}}),
    );
    assert_eq!(code, 422, "{out}");
    assert_eq!(
        cause_fields(&out),
        [
            "metadata.name",
            "spec.groupPriorityMinimum",
            "spec.insecureSkipTLSVerify"
        ]
    );
    // A Service that is not there: unavailable, and said so.
    let (code, out) = s.post(
        "/apis/apiregistration.k8s.io/v1/apiservices",
        &json!({"metadata": {"name": "v1.missing.example.com"}, "spec": {
            "group": "missing.example.com", "version": "v1", "groupPriorityMinimum": 100,
            "versionPriority": 100, "insecureSkipTLSVerify": true,
            "service": {"namespace": "default", "name": "nothing-here"}}}),
    );
    assert_eq!(code, 201, "{out}");
    let cond = eventually(20, "the missing service reported", || {
        available(&s, "v1.missing.example.com").filter(|c| c["status"] == "False")
    });
    assert_eq!(cond["reason"], "ServiceNotFound");
    assert_eq!(
        cond["message"],
        r#"service/nothing-here in "default" is not present"#
    );
    let (code, _, body) = s.client(&Who::cert("root", &["system:masters"])).raw(
        "GET",
        "/apis/missing.example.com/v1/things",
        vec![],
    );
    assert_eq!((code, body.as_str()), (503, "service unavailable\n"));
}

#[test]
fn an_authenticating_proxy_names_the_user() {
    let s = Server::start(1);
    let (_, cm) =
        s.get("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication");
    let data = &cm["data"];
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-client-ca-file"].as_str().unwrap(),
        s.pki("front-proxy-ca.crt")
    );
    let whoami = |who: &Who, headers: &[(&str, &str)]| {
        let mut c = s.client(who);
        for (k, v) in headers {
            c = c.with_header(k, v);
        }
        let (code, r) = c.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        );
        (code, r["status"]["userInfo"].clone())
    };
    let proxy = Who::Issued(
        s.pki("front-proxy-client.crt"),
        s.pki("front-proxy-client.key"),
    );
    let named = [
        ("X-Remote-User", "carol"),
        ("X-Remote-Group", "ops"),
        ("X-Remote-Extra-Reason", "on call"),
    ];
    let (code, u) = whoami(&proxy, &named);
    assert_eq!(code, 201, "{u}");
    assert_eq!(u["username"], "carol");
    assert_eq!(u["groups"], json!(["ops", "system:authenticated"]));
    assert_eq!(u["extra"]["reason"], json!(["on call"]));
    // The proxy's certificate naming nobody is no user.
    assert_eq!(whoami(&proxy, &[]).0, 401);
    // Anyone else's headers are not listened to.
    let (code, u) = whoami(&Who::cert("dave", &[]), &named);
    assert_eq!((code, u["username"].as_str()), (201, Some("dave")));
    // A certificate of the front-proxy CA with another name is no proxy.
    let (cert, key) = common::tls::sign_client_cert(
        &s.pki("front-proxy-ca.crt"),
        &s.pki("front-proxy-ca.key"),
        "intruder",
        &[],
    );
    assert_eq!(whoami(&Who::Issued(cert, key), &named).0, 401);
}

/// The front proxy's certificates and header names from the flags: the
/// proxy client certificate given is what extension servers see, the CA
/// and names given are what `extension-apiserver-authentication`
/// publishes and what kubeshard's own request-header authentication
/// trusts; nothing is generated.
#[test]
fn front_proxy_flags_name_the_certificates_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "my-front-proxy-ca");
    let ca_pem = params.self_signed(&ca_key).unwrap().pem();
    let (cert, key) =
        common::tls::sign_client_cert(&ca_pem, &ca_key.serialize_pem(), "my-proxy", &[]);
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let flags = [
        format!("--proxy-client-cert-file={}", file("proxy.crt", &cert)),
        format!("--proxy-client-key-file={}", file("proxy.key", &key)),
        format!("--requestheader-client-ca-file={}", file("ca.crt", &ca_pem)),
        "--requestheader-allowed-names=my-proxy".to_string(),
        "--requestheader-username-headers=X-Who".to_string(),
        "--requestheader-group-headers=X-Teams".to_string(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let s = Server::start_with(1, &flags);
    assert!(
        !s.data_dir.join("pki/front-proxy-ca.crt").exists(),
        "nothing is generated when the flags name the certificates"
    );
    let (_, cm) =
        s.get("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication");
    assert_eq!(cm["data"]["requestheader-client-ca-file"], ca_pem.as_str());
    assert_eq!(cm["data"]["requestheader-allowed-names"], r#"["my-proxy"]"#);
    assert_eq!(cm["data"]["requestheader-username-headers"], r#"["X-Who"]"#);
    assert_eq!(cm["data"]["requestheader-group-headers"], r#"["X-Teams"]"#);

    let whoami = |headers: &[(&str, &str)]| {
        let mut c = s.client(&Who::Issued(cert.clone(), key.clone()));
        for (k, v) in headers {
            c = c.with_header(k, v);
        }
        c.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        )
    };
    let (code, r) = whoami(&[("X-Who", "erin"), ("X-Teams", "t1")]);
    assert_eq!(code, 201, "{r}");
    assert_eq!(r["status"]["userInfo"]["username"], "erin");
    assert_eq!(
        r["status"]["userInfo"]["groups"],
        json!(["t1", "system:authenticated"])
    );
    // The default names are not read when others are configured.
    assert_eq!(whoami(&[("X-Remote-User", "erin")]).0, 401);

    // Extension servers see the configured certificate.
    let ext = MetricsServer::start(&s, &["node-a"], &[]);
    ext.register(&s);
    wait_available(&s, "True");
    let (code, h, body) = s.client(&Who::cert("root", &["system:masters"])).raw(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes/node-a",
        vec![],
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(header(&h, "x-seen-proxy"), "my-proxy");
    assert_eq!(header(&h, "x-seen-user"), "root");
}
