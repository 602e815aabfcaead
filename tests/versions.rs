//! One kind served at several versions: autoscaling/v1 and v2
//! HorizontalPodAutoscalers, core and events.k8s.io Events. Every version
//! reads and writes the same objects, converted through one storage
//! version, on every verb (get, list, watch, create, update, patch, apply,
//! status, delete) and in discovery.

mod common;
use common::kubectl::Kubectl;
use common::*;
use serde_json::{json, Value};

const HPA_V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const HPA_V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
const EV_CORE: &str = "/api/v1/namespaces/default/events";
const EV_NEW: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

fn hpa_v2(name: &str) -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}}
        }
    })
}

#[test]
fn a_v1_autoscaler_is_stored_once_and_read_at_both_versions() {
    let s = Server::start(2);
    let body = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 4, "targetCPUUtilizationPercentage": 30}
    });
    let (code, created) = s.post(HPA_V1, &body);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "autoscaling/v1");
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 30);
    assert_eq!(created["spec"]["minReplicas"], 1, "defaulted: {created}");
    assert!(created["spec"].get("metrics").is_none(), "{created}");

    let (_, v2) = s.get(&format!("{HPA_V2}/web"));
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 30}}}])
    );
    assert_eq!(
        v2["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");

    // Lists at each version carry that version, items included.
    for (path, version) in [(HPA_V1, "autoscaling/v1"), (HPA_V2, "autoscaling/v2")] {
        let (_, list) = s.get(path);
        assert_eq!(list["apiVersion"], version);
        assert_eq!(list["items"][0]["apiVersion"], version, "{list}");
    }
}

#[test]
fn v2_only_fields_survive_writes_through_v1() {
    let s = Server::start(2);
    let (code, created) = s.post(HPA_V2, &hpa_v2("api"));
    assert_eq!(code, 201, "{created}");

    let (_, mut v1) = s.get(&format!("{HPA_V1}/api"));
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    let notes = &v1["metadata"]["annotations"];
    let others: Value = serde_json::from_str(
        notes["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        others,
        json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}])
    );
    assert!(notes["autoscaling.alpha.kubernetes.io/behavior"].is_string());

    // A read-modify-write at v1 changes what v1 shows and keeps the rest.
    v1["spec"]["maxReplicas"] = json!(9);
    v1["spec"]["targetCPUUtilizationPercentage"] = json!(75);
    let (code, put) = s.put(&format!("{HPA_V1}/api"), &v1);
    assert_eq!(code, 200, "{put}");
    assert_eq!(put["apiVersion"], "autoscaling/v1");
    let (_, v2) = s.get(&format!("{HPA_V2}/api"));
    assert_eq!(v2["spec"]["maxReplicas"], 9);
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["name"], "memory",
        "{v2}"
    );
    assert_eq!(
        v2["spec"]["metrics"][1]["resource"]["target"]["averageUtilization"],
        75
    );
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        120
    );
    assert!(
        v2["metadata"].get("annotations").is_none(),
        "stored without them: {v2}"
    );

    // Patches apply to the v1 form.
    let (code, patched) = s.patch(
        &format!("{HPA_V1}/api"),
        "application/merge-patch+json",
        &json!({"spec": {"minReplicas": 2}}),
    );
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"]["minReplicas"], 2);
    let (_, v2) = s.get(&format!("{HPA_V2}/api"));
    assert_eq!(v2["spec"]["minReplicas"], 2);
    assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 2, "{v2}");

    // Status written at v1 lands in v2's current metrics.
    let (_, mut cur) = s.get(&format!("{HPA_V1}/api"));
    cur["status"] = json!({"currentReplicas": 3, "desiredReplicas": 4,
        "currentCPUUtilizationPercentage": 81});
    let (code, st) = s.put(&format!("{HPA_V1}/api/status"), &cur);
    assert_eq!(code, 200, "{st}");
    let (_, v2) = s.get(&format!("{HPA_V2}/api"));
    assert_eq!(v2["status"]["desiredReplicas"], 4);
    assert_eq!(
        v2["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
        81
    );

    // Server-side apply at v1 creates at v1.
    let (code, applied) = s.apply_yaml(
        &format!("{HPA_V1}/applied?fieldManager=test"),
        "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: applied\nspec:\n  maxReplicas: 3\n  scaleTargetRef:\n    kind: Deployment\n    name: x\n",
    );
    assert_eq!(code, 201, "{applied}");
    assert_eq!(applied["apiVersion"], "autoscaling/v1");
    let (_, v2) = s.get(&format!("{HPA_V2}/applied"));
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );

    // Deleting at one version deletes the object.
    let (code, _) = s.delete(&format!("{HPA_V1}/applied"));
    assert_eq!(code, 200);
    assert_eq!(s.get(&format!("{HPA_V2}/applied")).0, 404);
}

#[test]
fn watchers_see_events_at_their_own_version() {
    let s = Server::start(2);
    let mut w1 = s.watch(&format!("{HPA_V1}?watch=true&timeoutSeconds=10"));
    let mut w2 = s.watch(&format!("{HPA_V2}?watch=true&timeoutSeconds=10"));
    let (code, _) = s.post(HPA_V2, &hpa_v2("w"));
    assert_eq!(code, 201);
    let (code, _) = s.patch(
        &format!("{HPA_V2}/w"),
        "application/merge-patch+json",
        &json!({"spec": {"maxReplicas": 7}}),
    );
    assert_eq!(code, 200);
    let seen = w1.until(|e| e["type"] == "MODIFIED");
    assert_eq!(seen[0]["type"], "ADDED");
    for e in &seen {
        assert_eq!(e["object"]["apiVersion"], "autoscaling/v1", "{e}");
        assert_eq!(e["object"]["spec"]["targetCPUUtilizationPercentage"], 60);
    }
    assert_eq!(seen.last().unwrap()["object"]["spec"]["maxReplicas"], 7);
    let seen = w2.until(|e| e["type"] == "MODIFIED");
    assert!(seen
        .iter()
        .all(|e| e["object"]["apiVersion"] == "autoscaling/v2"));

    // The initial state of a watch is converted too.
    let mut w = s.watch(&format!("{HPA_V1}?watch=true&timeoutSeconds=2"));
    let first = w.next_event().unwrap();
    assert_eq!(first["object"]["apiVersion"], "autoscaling/v1", "{first}");
}

#[test]
fn discovery_prefers_v2_and_hashes_the_storage_version() {
    let s = Server::start(1);
    let (_, group) = s.get("/apis/autoscaling");
    assert_eq!(group["preferredVersion"]["version"], "v2", "{group}");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
    let hash = |path: &str, plural: &str| {
        let (_, list) = s.get(path);
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == plural)
            .unwrap_or_else(|| panic!("{plural} in {list}"))["storageVersionHash"]
            .clone()
    };
    // kube's values: the first 8 bytes of sha256("group/version/Kind").
    let hpa = "horizontalpodautoscalers";
    assert_eq!(hash("/apis/autoscaling/v2", hpa), "qwQve8ut294=");
    assert_eq!(hash("/apis/autoscaling/v1", hpa), "qwQve8ut294=");
    assert_eq!(hash("/api/v1", "pods"), "xPOwRZ+Yhw8=");
    assert_eq!(hash("/api/v1", "events"), "r2yiGXH7wu8=");
    assert_eq!(hash("/apis/events.k8s.io/v1", "events"), "r2yiGXH7wu8=");
}

#[test]
fn events_k8s_io_events_are_core_events() {
    let s = Server::start(2);
    let newer = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "pulled.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "uid": "u-1"},
        "note": "image pulled", "reason": "Pulled", "type": "Normal", "action": "Pull",
        "reportingController": "kubelet", "reportingInstance": "node-1"
    });
    let (code, created) = s.post(EV_NEW, &newer);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "image pulled");
    assert_eq!(created["regarding"]["name"], "p");

    let (_, core) = s.get(&format!("{EV_CORE}/pulled.1"));
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "image pulled");
    assert_eq!(core["involvedObject"]["name"], "p");
    assert_eq!(core["reportingComponent"], "kubelet");

    // A core Event reads at events.k8s.io with the newer names.
    let old = json!({"metadata": {"name": "old.1"}, "message": "scheduled",
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "q"},
        "reason": "Scheduled", "type": "Normal", "count": 2,
        "source": {"component": "default-scheduler"}});
    assert_eq!(s.post(EV_CORE, &old).0, 201);
    let (_, seen) = s.get(&format!("{EV_NEW}/old.1"));
    assert_eq!(seen["note"], "scheduled");
    assert_eq!(seen["deprecatedCount"], 2);
    assert_eq!(seen["deprecatedSource"]["component"], "default-scheduler");

    // Field selectors use each version's labels.
    let (code, list) = s.get(&format!("{EV_NEW}?fieldSelector=regarding.name%3Dq"));
    assert_eq!(code, 200, "{list}");
    assert_eq!(names(&list), ["old.1"]);
    let (code, list) = s.get(&format!(
        "{EV_NEW}?fieldSelector=reportingController%3Dkubelet"
    ));
    assert_eq!(code, 200, "{list}");
    assert_eq!(names(&list), ["pulled.1"]);
    let (code, _) = s.get(&format!("{EV_NEW}?fieldSelector=involvedObject.name%3Dq"));
    assert_eq!(code, 400, "core's labels are not events.k8s.io's");
    let (_, list) = s.get(&format!("{EV_CORE}?fieldSelector=involvedObject.name%3Dp"));
    assert_eq!(names(&list), ["pulled.1"]);

    // Updates at the newer version keep the fields it cannot name.
    let (code, patched) = s.patch(
        &format!("{EV_NEW}/old.1"),
        "application/merge-patch+json",
        &json!({"note": "scheduled again"}),
    );
    assert_eq!(code, 200, "{patched}");
    let (_, core) = s.get(&format!("{EV_CORE}/old.1"));
    assert_eq!(core["message"], "scheduled again");
    assert_eq!(core["count"], 2);
}

#[test]
fn kubectl_reads_each_version() {
    let s = Server::start(1);
    assert_eq!(s.post(HPA_V2, &hpa_v2("k")).0, 201);
    let k = Kubectl::new(&s);
    let v1 = k.get_json(&["horizontalpodautoscalers.v1.autoscaling", "k"]);
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    let table = k.ok(&["get", "hpa", "k"]);
    assert!(table.contains("cpu: <unknown>/60%"), "{table}");
    let described = k.ok(&["describe", "hpa", "k"]);
    assert!(described.contains("Max replicas:"), "{described}");
}
