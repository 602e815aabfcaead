//! Discovery, version, health and encodings.

mod common;
use common::*;
use serde_json::{json, Value};

#[test]
fn discovery_documents() {
    let s = Server::start(2);
    let (code, api) = s.get("/api");
    assert_eq!(code, 200);
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"], json!(["v1"]));
    let (code, v1) = s.get("/api/v1");
    assert_eq!(code, 200);
    assert_eq!(v1["kind"], "APIResourceList");
    assert_eq!(v1["groupVersion"], "v1");
    let res = v1["resources"].as_array().unwrap();
    let find = |n: &str| {
        res.iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("{n} missing"))
    };
    assert_eq!(find("configmaps")["shortNames"], json!(["cm"]));
    assert_eq!(find("namespaces")["namespaced"], false);
    assert_eq!(find("pods/status")["kind"], "Pod");
    assert!(find("pods")["verbs"]
        .as_array()
        .unwrap()
        .contains(&json!("watch")));
    let (code, apis) = s.get("/apis");
    assert_eq!(code, 200);
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(
        groups.contains(&"apps") && groups.contains(&"coordination.k8s.io"),
        "{groups:?}"
    );
    let (code, apps) = s.get("/apis/apps");
    assert_eq!(code, 200);
    assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
    let (code, appsv1) = s.get("/apis/apps/v1");
    assert_eq!(code, 200);
    let apps_resources: Vec<&str> = appsv1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for r in [
        "deployments",
        "replicasets/scale",
        "statefulsets/status",
        "daemonsets",
        "controllerrevisions",
    ] {
        assert!(apps_resources.contains(&r), "{r} in {apps_resources:?}");
    }
    assert_eq!(s.get("/apis/nope").0, 404);
    assert_eq!(s.get("/apis/apps/v9").0, 404);
    // Aggregated discovery, as kubectl asks for it.
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    for path in ["/api", "/apis"] {
        let (code, ct, text) = s.get_with(path, accept);
        assert_eq!(code, 200);
        assert_eq!(
            ct,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["kind"], "APIGroupDiscoveryList");
        assert!(!doc["items"].as_array().unwrap().is_empty());
    }
    let (code, version) = s.get("/version");
    assert_eq!(code, 200);
    assert_eq!(version["major"], "1");
    assert_eq!(version["minor"], "34");
    let (code, idx) = s.get("/openapi/v3");
    assert_eq!(code, 200);
    let url = idx["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let (code, doc) = s.get(url);
    assert_eq!(code, 200);
    assert!(doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .any(|k| k.contains("deployments")));
}

#[test]
fn health_endpoints() {
    let s = Server::start(2);
    for p in ["/healthz", "/livez", "/readyz"] {
        let (code, _, text) = s.get_with(p, "*/*");
        assert_eq!((code, text.as_str()), (200, "ok"), "{p}");
        let (code, _, verbose) = s.get_with(&format!("{p}?verbose"), "*/*");
        assert_eq!(code, 200);
        assert!(verbose.contains("[+]ping ok"), "{verbose}");
        assert!(verbose.trim_end().ends_with("check passed"), "{verbose}");
    }
    assert_eq!(s.get_with("/readyz/ping", "*/*").0, 200);
    assert_eq!(s.get_with("/readyz/nope", "*/*").0, 404);
}

#[test]
fn yaml_in_and_out_and_pretty() {
    let s = Server::start(2);
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  labels:\n    a: b\ndata:\n  key: value\n";
    let (code, created) = s.send(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
        yaml,
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["data"]["key"], "value");
    let (code, ct, text) = s.get_with(
        "/api/v1/namespaces/default/configmaps/from-yaml",
        "application/yaml",
    );
    assert_eq!(code, 200);
    assert_eq!(ct, "application/yaml");
    let back: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(
        back["metadata"]["name"],
        serde_yaml::Value::from("from-yaml")
    );
    assert!(text.contains("key: value"), "{text}");
    let (code, _, list_yaml) =
        s.get_with("/api/v1/namespaces/default/configmaps", "application/yaml");
    assert_eq!(code, 200);
    assert!(list_yaml.contains("kind: ConfigMapList"), "{list_yaml}");
    let (_, _, err_yaml) = s.get_with(
        "/api/v1/namespaces/default/configmaps/nope",
        "application/yaml",
    );
    assert!(err_yaml.contains("reason: NotFound"), "{err_yaml}");
    let (_, _, pretty) = s.get_with(
        "/api/v1/namespaces/default/configmaps/from-yaml?pretty=true",
        "application/json",
    );
    assert!(pretty.contains("\n  \"metadata\": {\n"), "{pretty}");
    let (_, _, compact) = s.get_with(
        "/api/v1/namespaces/default/configmaps/from-yaml",
        "application/json",
    );
    // One line, ended by a newline, kind first: kube's encoder.
    assert!(compact.ends_with("}\n"), "{compact:?}");
    assert!(!compact.trim_end().contains('\n'));
    assert!(
        compact.starts_with(r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":"#),
        "{compact}"
    );
    assert!(pretty.ends_with("}\n"), "{pretty:?}");
}

#[test]
fn table_output_for_kubectl() {
    let s = Server::start(2);
    s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("t1", json!({})),
    );
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let (code, ct, text) = s.get_with("/api/v1/namespaces/default/configmaps", accept);
    assert_eq!(code, 200);
    assert!(ct.contains("as=Table"), "{ct}");
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["columnDefinitions"][0]["name"], "Name");
    let row = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cells"][0] == "t1")
        .unwrap();
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["metadata"]["name"], "t1");
}

/// HTTP/2 with prior knowledge (h2c) on the same port: a watch multiplexed
/// beside ordinary requests on one connection (nghttp, from nghttp2-client,
/// which scripts/test.sh installs).
#[test]
fn http2_prior_knowledge() {
    let s = Server::start(2);
    let out = std::process::Command::new("nghttp")
        .args(["-n", "-v"])
        .arg(s.url("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"))
        .arg(s.url("/api/v1/namespaces"))
        .arg(s.url("/version"))
        .output()
        .expect("nghttp is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let statuses = text
        .lines()
        .filter(|l| l.contains("recv (stream_id=") && l.contains(":status: 200"))
        .count();
    assert_eq!(statuses, 3, "{text}");
    let streams: std::collections::HashSet<&str> = text
        .lines()
        .filter(|l| l.contains(":status:"))
        .filter_map(|l| l.split("stream_id=").nth(1))
        .collect();
    assert_eq!(streams.len(), 3, "three streams on one connection: {text}");
}

/// History memory is bounded by the flags and reported on /metrics, along
/// with stored objects and open watchers.
#[test]
fn metrics_report_bounded_history() {
    // Counted exactly: no controller may add service accounts meanwhile.
    let s = Server::start_with(
        2,
        &[
            "--watch-history-max-events",
            "10",
            "--controllers=*,-serviceaccount,-root-ca-cert-publisher",
        ],
    );
    let metric = |text: &str, name: &str| -> Vec<i64> {
        text.lines()
            .filter(|l| l.starts_with(&format!("kubeshard_{name}{{")))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    };
    let w = s.watch("/api/v1/namespaces/default/configmaps?watch=1");
    for i in 0..50 {
        s.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap(&format!("m{i}"), json!({})),
        );
    }
    let (code, ct, text) = s.get_with("/metrics", "*/*");
    assert_eq!(code, 200);
    assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
    let objects: i64 = metric(&text, "store_objects").iter().sum();
    use kubeshard_core::rbac::bootstrap;
    let rbac = bootstrap::cluster_roles().len()
        + bootstrap::cluster_role_bindings().len()
        + bootstrap::roles().len()
        + bootstrap::role_bindings().len();
    let (_, apiservices) = s.get("/apis/apiregistration.k8s.io/v1/apiservices");
    let apiservices = apiservices["items"].as_array().unwrap().len();
    assert!(apiservices > 20, "a local APIService per group version");
    assert_eq!(
        objects,
        80 + (rbac + apiservices) as i64,
        "50 configmaps, 4 namespaces, the kubernetes Service and its IPAddress, the ServiceCIDR, \
         2 system PriorityClasses, 2 kube-system ConfigMaps, 19 APF bootstrap objects, the \
         bootstrap RBAC policy and the local APIServices: {text}"
    );
    assert_eq!(metric(&text, "watchers").iter().sum::<i64>(), 1, "{text}");
    // The resources written so far (namespaces, configmaps, services,
    // ipaddresses, servicecidrs, priorityclasses, the four RBAC kinds,
    // apiservices), at most 10 events each, per shard and per executor
    // ring.
    let bound = 11 * 10;
    assert!(
        metric(&text, "store_history_events")
            .iter()
            .all(|n| *n <= bound),
        "{text}"
    );
    assert!(
        metric(&text, "watch_cache_events")
            .iter()
            .all(|n| *n <= bound),
        "{text}"
    );
    assert!(metric(&text, "store_object_bytes").iter().sum::<i64>() > 50 * 100);
    drop(w);
}

/// HTTP/2 writes are combined per connection turn (serving/combine.rs):
/// large bodies on many concurrent streams of one connection, well past the
/// combining buffer's high-water mark, arrive whole and identical to what
/// HTTP/1.1 serves.
#[test]
fn http2_concurrent_large_bodies_arrive_whole() {
    let s = Server::start(2);
    let big = "x".repeat(8 * 1024);
    for i in 0..200 {
        let (code, _) = s.post(
            "/api/v1/namespaces/default/configmaps",
            &serde_json::json!({"metadata": {"name": format!("big-{i}")}, "data": {"k": big}}),
        );
        assert_eq!(code, 201);
    }
    let (_, _, h1) = s.get_with("/api/v1/namespaces/default/configmaps", "application/json");
    assert!(h1.len() > 1_600_000, "{}", h1.len());
    let nghttp = |args: &[&str]| {
        let out = std::process::Command::new("nghttp")
            .args(args)
            .arg(s.url("/api/v1/namespaces/default/configmaps"))
            .output()
            .expect("nghttp is installed");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // One stream: the very same bytes.
    assert_eq!(nghttp(&[]), h1);
    // Eight at once on one connection (their frames interleave in the
    // output): every byte of each arrives.
    let all = nghttp(&["-m", "8"]);
    assert_eq!(all.len(), 8 * h1.len());
    assert_eq!(all.matches("\"kind\":\"ConfigMapList\"").count(), 8);
    assert_eq!(all.matches("\"name\":\"big-199\"").count(), 8);
}
