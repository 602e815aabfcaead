//! PATCH over HTTP, one section per content type: JSON patch, merge patch,
//! strategic merge patch on pod template and deployment specs.

mod common;

use common::Server;
use serde_json::{json, Value};

const SMP: &str = "application/strategic-merge-patch+json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [
            {"name": "app", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
             "ports": [{"containerPort": 80}], "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
            {"name": "sidecar", "image": "busybox:1"}
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [{"key": "a", "operator": "Exists"}]
    }})
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
            {"name": "web", "image": "nginx:1.25", "env": [{"name": "MODE", "value": "a"}]}
        ]}}
    }})
}

/// Creates `obj` in `collection`; returns the object's path.
fn create(s: &Server, collection: &str, obj: &Value) -> String {
    let (code, body) = s.post(collection, obj);
    assert_eq!(code, 201, "{body}");
    format!("{collection}/{}", obj["metadata"]["name"].as_str().unwrap())
}

fn patch(s: &Server, path: &str, ct: &str, body: Value) -> Value {
    let (code, out) = s.patch(path, ct, &body);
    assert_eq!(code, 200, "{out}");
    out
}

/// A strategic merge patch of a PodTemplate written as one of its pod:
/// `spec` goes under `template`, and the answer shows the template's
/// spec at `spec`.
fn template_patch(s: &Server, path: &str, mut body: Value) -> Value {
    if let Some(spec) = body.as_object_mut().and_then(|m| m.remove("spec")) {
        body["template"] = json!({"spec": spec});
    }
    let mut out = patch(s, path, SMP, body);
    out["spec"] = out["template"]["spec"].clone();
    out
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect()
}

#[test]
fn strategic_merge_on_a_pod_templates_spec() {
    let s = Server::start(2);
    // A pod's spec is immutable; a PodTemplate's holds the same pod spec
    // and merges by the same rules.
    let template = json!({"metadata": {"name": "p"}, "template": {"spec": pod("p")["spec"]}});
    let path = &create(&s, "/api/v1/namespaces/default/podtemplates", &template);

    // Containers merge by name: only app's image changes, sidecar stays.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}),
    );
    let containers = &out["spec"]["containers"];
    assert_eq!(names(containers), ["app", "sidecar"]);
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(containers[0]["env"].as_array().unwrap().len(), 2);
    assert_eq!(containers[1]["image"], "busybox:1");

    // env merges by name; $patch: delete removes one entry.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"containers": [{"name": "app",
        "env": [{"name": "C", "value": "3"}, {"name": "A", "$patch": "delete"}]}]}}),
    );
    let env = &out["spec"]["containers"][0]["env"];
    assert_eq!(names(env), ["C", "B"]);

    // ports merge by containerPort.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"containers": [{"name": "app",
        "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]}}),
    );
    let ports = &out["spec"]["containers"][0]["ports"];
    assert_eq!(ports.as_array().unwrap().len(), 2);
    assert!(ports
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["containerPort"] == 80 && p["name"] == "http" && p["protocol"] == "TCP"));

    // volumeMounts merge by mountPath.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"containers": [{"name": "app",
        "volumeMounts": [{"mountPath": "/cache", "name": "data"}]}]}}),
    );
    assert_eq!(
        out["spec"]["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Tolerations are atomic: the patch replaces the list.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
    );
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "b", "operator": "Exists"}])
    );

    // Volumes merge by name with $retainKeys swapping the source.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"volumes": [{"name": "data",
        "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]}}),
    );
    assert_eq!(
        out["spec"]["volumes"],
        json!([{"name": "data", "configMap": {"name": "cm", "defaultMode": 420}}])
    );

    // $setElementOrder reorders containers.
    let out = template_patch(
        &s,
        path,
        json!({"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]}}),
    );
    assert_eq!(names(&out["spec"]["containers"]), ["sidecar", "app"]);

    // null deletes a map key; labels merge.
    template_patch(
        &s,
        path,
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
    );
    let out = template_patch(&s, path, json!({"metadata": {"labels": {"a": null}}}));
    assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));

    // $deleteFromPrimitiveList on finalizers.
    template_patch(
        &s,
        path,
        json!({"metadata": {"finalizers": ["x/one", "x/two"]}}),
    );
    let out = template_patch(
        &s,
        path,
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/one"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["x/two"]));
}

#[test]
fn strategic_merge_on_deployment_spec() {
    let s = Server::start(1);
    let path = &create(
        &s,
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment("d"),
    );
    // The patch kubectl apply sends when an image changes and an env var goes.
    let out = patch(
        &s,
        path,
        SMP,
        json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [{"name": "web", "image": "nginx:1.26",
            "$setElementOrder/env": [], "env": [{"$patch": "delete", "name": "MODE"}]}]}}}}),
    );
    let c = &out["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.26");
    assert!(c.get("env").is_none() || c["env"] == json!([]), "{c}");
    assert_eq!(out["metadata"]["generation"], 2);

    // strategy is retainKeys: switching to Recreate drops rollingUpdate.
    let out = patch(
        &s,
        path,
        SMP,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    // Plain replicas change, and $patch: replace on a map.
    let out = patch(
        &s,
        path,
        SMP,
        json!({"spec": {"replicas": 3, "template": {"metadata": {"labels": {"$patch": "replace", "app": "d", "tier": "web"}}}}}),
    );
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(
        out["spec"]["template"]["metadata"]["labels"],
        json!({"app": "d", "tier": "web"})
    );
}

#[test]
fn strategic_merge_errors_are_kubes() {
    let s = Server::start(1);
    s.post("/api/v1/namespaces/default/pods", &pod("e"));
    let path = "/api/v1/namespaces/default/pods/e";
    let (code, body) = s.patch(
        path,
        SMP,
        &json!({"spec": {"containers": [{"image": "x"}]}}),
    );
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "map: map[image:x] does not contain declared merge key: name"
    );
    let (code, body) = s.patch(path, SMP, &json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"], "hostPath": {"path": "/"}}]}}));
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    let (code, _) = s.send("PATCH", path, SMP, b"[1]");
    assert_eq!(code, 400);
    let (code, _) = s.send("PATCH", path, SMP, b"{not json");
    assert_eq!(code, 400);
    // Nothing was damaged.
    let (_, live) = s.get(path);
    assert_eq!(names(&live["spec"]["containers"]), ["app", "sidecar"]);
}

#[test]
fn json_patch_and_merge_patch() {
    let s = Server::start(1);
    s.post(
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment("j"),
    );
    let path = "/apis/apps/v1/namespaces/default/deployments/j";
    let out = patch(
        &s,
        path,
        JSON_PATCH,
        json!([
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 2},
            {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}
        ]),
    );
    assert_eq!(out["spec"]["replicas"], 2);
    let (code, body) = s.patch(
        path,
        JSON_PATCH,
        &json!([{"op": "test", "path": "/spec/replicas", "value": 9}]),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server rejected our request due to an error in our request",
            "reason": "Invalid", "details": {}, "code": 422}),
        "kube's generic answer"
    );
    // Merge patch replaces lists whole (no merge keys).
    let out = patch(
        &s,
        path,
        MERGE,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "other", "image": "busybox"}]}}}}),
    );
    assert_eq!(
        names(&out["spec"]["template"]["spec"]["containers"]),
        ["other"]
    );
    // Defaults are applied to the patched result.
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    // A stale resourceVersion in the patch is a conflict.
    let (code, _) = s.patch(
        path,
        MERGE,
        &json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 5}}),
    );
    assert_eq!(code, 409);
    // Unknown patch types are 415.
    let (code, body) = s.send("PATCH", path, "application/x-patch", b"{}");
    assert_eq!(code, 415, "{body}");
}

/// Patches without a resourceVersion never fail on conflict and never lose
/// each other's changes, however many race on one object — each applies
/// to the object as it is when its turn comes (kube retries them; here the
/// owning shard runs them one after another). Every content type takes
/// part, apply included.
#[test]
fn concurrent_patches_all_land() {
    let s = Server::start(4);
    let path = "/api/v1/namespaces/default/configmaps/race";
    let (code, _) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "race"}, "data": {"seed": "0"}}),
    );
    assert_eq!(code, 201);
    const THREADS: usize = 8;
    const EACH: usize = 12;
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let s = &s;
            scope.spawn(move || {
                for i in 0..EACH {
                    let key = format!("k{t}-{i}");
                    let (code, out) = match i % 4 {
                        0 => s.patch(path, MERGE, &json!({"data": {key.clone(): "v"}})),
                        1 => s.patch(path, SMP, &json!({"data": {key.clone(): "v"}})),
                        2 => s.patch(
                            path,
                            JSON_PATCH,
                            &json!([{"op": "add", "path": format!("/data/{key}"), "value": "v"}]),
                        ),
                        _ => s.apply_yaml(
                            &format!("{path}?fieldManager=applier-{t}-{i}"),
                            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: race}}\ndata: {{{key}: v}}\n"),
                        ),
                    };
                    assert_eq!(code, 200, "{key}: {out}");
                }
            });
        }
    });
    let (_, cm) = s.get(path);
    let data = cm["data"].as_object().unwrap();
    assert_eq!(data.len(), 1 + THREADS * EACH, "{cm}");
}
