//! Table output and PartialObjectMetadata over HTTP: the columns per kind
//! (wide ones included), includeObject, lists, single objects and watches.

mod common;
use common::*;
use serde_json::{json, Value};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn table(s: &Server, path: &str) -> Value {
    let (code, ct, text) = s.get_with(path, TABLE);
    assert_eq!(code, 200, "{text}");
    assert_eq!(ct, "application/json;as=Table;v=v1;g=meta.k8s.io");
    serde_json::from_str(&text).unwrap()
}

fn heads(t: &Value) -> Vec<(String, i64)> {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn row(t: &Value, i: usize) -> Vec<Value> {
    t["rows"][i]["cells"].as_array().unwrap().clone()
}

each_shard_count!(columns_per_kind, |shards| {
    let s = Server::start(shards);
    s.post("/api/v1/nodes", &json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                   "nodeInfo": {"kubeletVersion": "v1.34.0", "osImage": "Debian GNU/Linux 12", "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7"}}}));
    let t = table(&s, "/api/v1/nodes/n1");
    assert_eq!(
        t["metadata"]["resourceVersion"].as_str().map(|_| ()),
        Some(())
    );
    assert_eq!(
        heads(&t)
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime"
        ]
    );
    let r = row(&t, 0);
    assert_eq!(
        r[..3],
        [json!("n1"), json!("Ready"), json!("control-plane")]
    );
    assert_eq!(
        r[4..],
        [
            json!("v1.34.0"),
            json!("10.0.0.1"),
            json!("<none>"),
            json!("Debian GNU/Linux 12"),
            json!("6.1.0"),
            json!("containerd://1.7")
        ]
    );

    s.post("/api/v1/namespaces/default/pods", &json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "a", "image": "i"}]}}));
    s.patch("/api/v1/namespaces/default/pods/p/status", "application/merge-patch+json", &json!({"status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}],
        "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}]}}));
    let t = table(&s, "/api/v1/namespaces/default/pods");
    assert_eq!(
        heads(&t),
        [
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ]
        .map(|(n, p)| (n.to_string(), p))
    );
    let r = row(&t, 0);
    assert_eq!(
        (r[1].as_str(), r[2].as_str(), r[3].as_str()),
        (Some("1/1"), Some("Running"), Some("0"))
    );
    assert_eq!(
        r[5..],
        [
            json!("10.1.0.5"),
            json!("n1"),
            json!("<none>"),
            json!("<none>")
        ]
    );

    s.post("/api/v1/namespaces/default/services", &json!({"metadata": {"name": "web"}, "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.80", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}}));
    let r = row(&table(&s, "/api/v1/namespaces/default/services/web"), 0);
    assert_eq!(
        r[1..5],
        [
            json!("LoadBalancer"),
            json!("10.0.0.80"),
            json!("<pending>"),
            json!("80:30080/TCP")
        ]
    );
    assert_eq!(r[6], "app=web");

    s.post("/apis/apps/v1/namespaces/default/deployments", &json!({"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}));
    let r = row(
        &table(&s, "/apis/apps/v1/namespaces/default/deployments"),
        0,
    );
    assert_eq!(r[..4], [json!("web"), json!("0/3"), json!(0), json!(0)]);
    assert_eq!(
        r[5..],
        [json!("web"), json!("nginx:1.27"), json!("app=web")]
    );

    s.post(
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "s"}, "stringData": {"a": "1", "b": "2"}}),
    );
    assert_eq!(
        row(&table(&s, "/api/v1/namespaces/default/secrets/s"), 0)[1..3],
        [json!("Opaque"), json!(2)]
    );
    s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("c", json!({})),
    );
    assert_eq!(
        row(&table(&s, "/api/v1/namespaces/default/configmaps/c"), 0)[1],
        json!(1)
    );
    s.post(
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        &json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "n1"}}),
    );
    assert_eq!(
        row(
            &table(
                &s,
                "/apis/coordination.k8s.io/v1/namespaces/default/leases/l"
            ),
            0
        )[1],
        "n1"
    );
    s.post(
        "/api/v1/namespaces/default/serviceaccounts",
        &json!({"metadata": {"name": "robot"}, "secrets": [{"name": "x"}]}),
    );
    assert_eq!(
        row(
            &table(&s, "/api/v1/namespaces/default/serviceaccounts/robot"),
            0
        )[1],
        json!(1)
    );
    s.post("/api/v1/namespaces/default/endpoints", &json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.1.0.5"}], "ports": [{"port": 8080}]}]}));
    assert_eq!(
        row(&table(&s, "/api/v1/namespaces/default/endpoints/web"), 0)[1],
        "10.1.0.5:8080"
    );
    s.post("/api/v1/namespaces/default/events", &json!({"metadata": {"name": "e1"}, "type": "Normal", "reason": "Started", "message": "ok",
        "involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"}, "count": 2}));
    let e = row(&table(&s, "/api/v1/namespaces/default/events/e1"), 0);
    assert_eq!(e[1..4], [json!("Normal"), json!("Started"), json!("pod/p")]);
    assert_eq!(e[8..], [json!(2), json!("e1")]);
    let ns = table(&s, "/api/v1/namespaces/default");
    assert_eq!(row(&ns, 0)[..2], [json!("default"), json!("Active")]);
});

each_shard_count!(include_object_and_list_metadata, |shards| {
    let s = Server::start(shards);
    for i in 0..3 {
        s.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap(&format!("c{i}"), json!({})),
        );
    }
    let t = table(&s, "/api/v1/namespaces/default/configmaps?limit=2");
    assert_eq!(t["rows"].as_array().unwrap().len(), 2);
    assert!(t["metadata"]["continue"].is_string());
    assert_eq!(t["metadata"]["remainingItemCount"], 1);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "c0");
    assert!(t["rows"][0]["object"].get("data").is_none());
    let t = table(
        &s,
        "/api/v1/namespaces/default/configmaps?includeObject=Object",
    );
    assert_eq!(t["rows"][0]["object"]["kind"], "ConfigMap");
    assert_eq!(t["rows"][0]["object"]["data"], json!({"k": "v"}));
    let t = table(
        &s,
        "/api/v1/namespaces/default/configmaps?includeObject=None",
    );
    assert_eq!(t["rows"][0]["object"], Value::Null);
    let (code, _, text) = s.get_with(
        "/api/v1/namespaces/default/configmaps?includeObject=Some",
        TABLE,
    );
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("unrecognized includeObject value"));
    // The deprecated v1beta1 Table.
    let (_, ct, text) = s.get_with(
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
    );
    assert_eq!(ct, "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
});

each_shard_count!(partial_object_metadata, |shards| {
    let s = Server::start(shards);
    let (_, c) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("c", json!({"x": "y"})),
    );
    for v in ["v1", "v1beta1"] {
        let one = format!("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v={v}");
        let (code, ct, text) = s.get_with("/api/v1/namespaces/default/configmaps/c", &one);
        assert_eq!(code, 200, "{text}");
        assert_eq!(
            ct,
            format!("application/json;as=PartialObjectMetadata;v={v};g=meta.k8s.io")
        );
        let p: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            p,
            json!({"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{v}"), "metadata": c["metadata"]})
        );
        let list = format!("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v={v},application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v={v},application/json");
        // client-go's metadata informers list protobuf first: served for
        // v1; v1beta1 (whose list numbers its fields differently) falls
        // back to JSON.
        let (code, ct, body) = s.get_bytes("/api/v1/namespaces/default/configmaps", &list);
        assert_eq!(code, 200);
        let l: Value = if v == "v1" {
            assert!(
                ct.starts_with("application/vnd.kubernetes.protobuf;"),
                "{ct}"
            );
            kubeshard_core::protobuf::decode_object(&body).unwrap()
        } else {
            assert!(ct.starts_with("application/json;"), "{ct}");
            serde_json::from_slice(&body).unwrap()
        };
        assert_eq!(l["kind"], "PartialObjectMetadataList");
        assert_eq!(l["items"][0]["metadata"]["labels"], json!({"x": "y"}));
        assert!(l["metadata"]["resourceVersion"].is_string());
        // Asking for the wrong shape is 406.
        let (code, _, text) = s.get_with("/api/v1/namespaces/default/configmaps", &one);
        assert_eq!(code, 406, "{text}");
        assert!(
            text.contains("but the requested object is a list"),
            "{text}"
        );
        let only_list =
            format!("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v={v}");
        let (code, _, text) = s.get_with("/api/v1/namespaces/default/configmaps/c", &only_list);
        assert_eq!(code, 406);
        assert!(
            text.contains("but the requested object is not a list"),
            "{text}"
        );
    }
});

#[test]
fn watches_as_tables_and_as_metadata() {
    let s = Server::start(2);
    s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("a", json!({})),
    );
    let watch = |accept: &str| {
        let resp = ureq::get(&s.url("/api/v1/namespaces/default/configmaps?watch=1"))
            .header("Accept", accept)
            .call()
            .unwrap();
        let ct = resp
            .headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        (ct, std::io::BufReader::new(resp.into_body().into_reader()))
    };
    let next = |r: &mut dyn std::io::BufRead| -> Value {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let (ct, mut tables) = watch(TABLE);
    assert_eq!(ct, "application/json;as=Table;v=v1;g=meta.k8s.io");
    let (_, mut partial) = watch("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
    let first = next(&mut tables);
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["kind"], "Table");
    assert_eq!(first["object"]["columnDefinitions"][1]["name"], "Data");
    assert_eq!(first["object"]["rows"][0]["cells"][0], "a");
    let p = next(&mut partial);
    assert_eq!(p["object"]["kind"], "PartialObjectMetadata");
    s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("b", json!({})),
    );
    let second = next(&mut tables);
    assert_eq!(second["object"]["rows"][0]["cells"][0], "b");
    assert!(
        second["object"]["columnDefinitions"].is_null(),
        "headers come once"
    );
    let p = next(&mut partial);
    assert_eq!(
        (p["type"].as_str(), p["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("b"))
    );
    let (code, _, _) = s.get_with(
        "/api/v1/namespaces/default/configmaps?watch=1",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    );
    assert_eq!(code, 406);
}

/// PodTemplates are served, with kubectl's columns.
#[test]
fn pod_templates_are_served_with_their_columns() {
    let s = Server::start(1);
    let t = serde_json::json!({"metadata": {"name": "tpl"}, "template": {
        "metadata": {"labels": {"b": "2", "a": "1"}},
        "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}});
    let (code, body) = s.post("/api/v1/namespaces/default/podtemplates", &t);
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["kind"], "PodTemplate");
    let (code, _, text) = s.get_with(
        "/api/v1/namespaces/default/podtemplates",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    );
    assert_eq!(code, 200);
    let table: serde_json::Value = serde_json::from_str(&text).unwrap();
    let heads: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(heads, ["Name", "Containers", "Images", "Pod Labels"]);
    assert_eq!(
        table["rows"][0]["cells"],
        serde_json::json!(["tpl", "c1,c2", "i1,i2", "a=1,b=2"])
    );
}
