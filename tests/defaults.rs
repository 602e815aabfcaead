//! Defaulting of built-in kinds as stored and returned by the server.

mod common;

use common::Server;
use serde_json::json;

#[test]
fn each_kind_is_defaulted_on_create_and_update() {
    let s = Server::start(1);
    let (code, pod) = s.post("/api/v1/namespaces/default/pods", &json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}));
    assert_eq!(code, 201, "{pod}");
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["securityContext"], json!({}));
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");

    let (code, d) = s.post("/apis/apps/v1/namespaces/default/deployments", &json!({"metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}));
    assert_eq!(code, 201, "{d}");
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["spec"]["strategy"]["rollingUpdate"],
        json!({"maxUnavailable": "25%", "maxSurge": "25%"})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );

    let (code, svc) = s.post(
        "/api/v1/namespaces/default/services",
        &json!({"metadata": {"name": "s"},
        "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}),
    );
    assert_eq!(code, 201, "{svc}");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        svc["spec"]["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );

    let (code, sec) = s.post(
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "x"}}),
    );
    assert_eq!(code, 201);
    assert_eq!(sec["type"], "Opaque");

    // An update that drops a defaulted field gets it back.
    let mut d2 = d.clone();
    d2["spec"]
        .as_object_mut()
        .unwrap()
        .remove("revisionHistoryLimit");
    let (code, d2) = s.put("/apis/apps/v1/namespaces/default/deployments/d", &d2);
    assert_eq!(code, 200, "{d2}");
    assert_eq!(d2["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        d2["metadata"]["generation"], 1,
        "re-defaulting is no spec change"
    );
}

#[test]
fn namespaces_carry_their_name_as_a_label() {
    let s = Server::start(1);
    let (code, ns) = s.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team-a"}}),
    );
    assert_eq!(code, 201, "{ns}");
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    let (_, default) = s.get("/api/v1/namespaces/default");
    assert_eq!(
        default["metadata"]["labels"]["kubernetes.io/metadata.name"], "default",
        "the namespaces the server creates too"
    );
    let (code, picked) =
        s.get("/api/v1/namespaces?labelSelector=kubernetes.io%2Fmetadata.name%3Dteam-a");
    assert_eq!(code, 200);
    assert_eq!(picked["items"].as_array().unwrap().len(), 1);
    let (code, patched) = s.patch(
        "/api/v1/namespaces/team-a",
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"kubernetes.io/metadata.name": null}}}),
    );
    assert_eq!(code, 200);
    assert_eq!(
        patched["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
}

/// What kube-apiserver stores on create beyond defaults: a pod's status
/// (Pending and its QoS class), the empty status structs of kinds whose
/// status is their controllers' to write.
#[test]
fn created_objects_start_with_kubes_status() {
    let s = Server::start(1);
    let pod = |name: &str, resources: serde_json::Value| json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}});
    for (name, resources, class) in [
        ("best-effort", json!({}), "BestEffort"),
        (
            "burstable",
            json!({"requests": {"cpu": "100m"}}),
            "Burstable",
        ),
        (
            "guaranteed",
            json!({"limits": {"cpu": "500m", "memory": "64Mi"}}),
            "Guaranteed",
        ),
    ] {
        let (code, p) = s.post("/api/v1/namespaces/default/pods", &pod(name, resources));
        assert_eq!(code, 201, "{p}");
        assert_eq!(
            p["status"],
            json!({"phase": "Pending", "qosClass": class}),
            "{name}"
        );
    }
    let (_, d) = s.post("/apis/apps/v1/namespaces/default/deployments", &json!({"metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}));
    assert_eq!(d["status"], json!({}));
    let (_, svc) = s.post(
        "/api/v1/namespaces/default/services",
        &json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
    );
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));
}

/// Quantities are stored as kube stores them, in canonical form, whatever
/// the write: create, patch, apply.
#[test]
fn quantities_are_canonicalised_on_every_write() {
    let s = Server::start(1);
    let pods = "/api/v1/namespaces/default/pods";
    let (code, p) = s.post(
        pods,
        &json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"},
                          "limits": {"cpu": 1, "memory": 1073741824}}}]}}),
    );
    assert_eq!(code, 201, "{p}");
    let r = &p["spec"]["containers"][0]["resources"];
    assert_eq!(r["requests"], json!({"cpu": "500m", "memory": "1Gi"}));
    // A bare number is decimal: kube writes it back as it is.
    assert_eq!(r["limits"], json!({"cpu": "1", "memory": "1073741824"}));

    let pvcs = "/api/v1/namespaces/default/persistentvolumeclaims";
    let (code, c) = s.post(
        pvcs,
        &json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1.5Gi"}}}}),
    );
    assert_eq!(code, 201, "{c}");
    assert_eq!(c["spec"]["resources"]["requests"]["storage"], "1536Mi");
    let (code, q) = s.apply_yaml(
        "/api/v1/namespaces/default/resourcequotas/quota?fieldManager=test",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\nspec:\n  hard:\n    pods: \"1000\"\n    requests.memory: 0.5Gi\n",
    );
    assert_eq!(code, 201, "{q}");
    assert_eq!(
        q["spec"]["hard"],
        json!({"pods": "1k", "requests.memory": "512Mi"})
    );
    let (code, q) = s.patch(
        "/api/v1/namespaces/default/resourcequotas/quota",
        "application/merge-patch+json",
        &json!({"spec": {"hard": {"requests.memory": "2048Mi"}}}),
    );
    assert_eq!(code, 200, "{q}");
    assert_eq!(q["spec"]["hard"]["requests.memory"], "2Gi");
}
