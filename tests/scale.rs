//! The scale subresource of deployments (autoscaling/v1 Scale).

mod common;
use common::*;
use serde_json::json;

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

each_shard_count!(scale_reads_and_writes_replicas, |shards| {
    let s = Server::start(shards);
    let (code, d) = s.post(DEPLOYS, &json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]},
                 "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }));
    assert_eq!(code, 201, "{d}");
    let scale = format!("{DEPLOYS}/web/scale");
    let (code, sc) = s.get(&scale);
    assert_eq!(code, 200, "{sc}");
    assert_eq!(sc["kind"], "Scale");
    assert_eq!(sc["apiVersion"], "autoscaling/v1");
    assert_eq!(sc["metadata"]["uid"], d["metadata"]["uid"]);
    assert_eq!(
        sc["metadata"]["resourceVersion"],
        d["metadata"]["resourceVersion"]
    );
    assert_eq!(sc["spec"], json!({"replicas": 2}));
    assert_eq!(
        sc["status"],
        json!({"replicas": 0, "selector": "app=web,tier in (be,fe)"})
    );

    // PUT with the current resourceVersion.
    let mut put = sc.clone();
    put["spec"]["replicas"] = json!(5);
    let (code, after) = s.put(&scale, &put);
    assert_eq!(code, 200, "{after}");
    assert_eq!(after["spec"]["replicas"], 5);
    assert!(rv(&after) > rv(&sc));
    let (_, dep) = s.get(&format!("{DEPLOYS}/web"));
    assert_eq!(dep["spec"]["replicas"], 5);
    assert_eq!(
        dep["metadata"]["generation"], 2,
        "a spec change bumps generation"
    );
    // A stale resourceVersion conflicts.
    let (code, body) = s.put(&scale, &put);
    assert_eq!(code, 409, "{body}");
    // Merge and JSON patches.
    let (code, merged) = s.patch(
        &scale,
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 3}}),
    );
    assert_eq!(code, 200, "{merged}");
    assert_eq!(merged["spec"]["replicas"], 3);
    let (code, jp) = s.patch(
        &scale,
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/spec/replicas", "value": 1}]),
    );
    assert_eq!(code, 200, "{jp}");
    assert_eq!(jp["spec"]["replicas"], 1);
    let (code, zero) = s.patch(
        &scale,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"replicas": 0}}),
    );
    assert_eq!(code, 200, "{zero}");
    assert_eq!(
        zero["spec"],
        json!({}),
        "autoscaling/v1 omits zero replicas"
    );
    // Validation and dry run.
    let (code, body) = s.patch(
        &scale,
        "application/merge-patch+json",
        &json!({"spec": {"replicas": -1}}),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["message"], "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0");
    let (code, dry) = s.patch(
        &format!("{scale}?dryRun=All"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 9}}),
    );
    assert_eq!(code, 200);
    assert_eq!(dry["spec"]["replicas"], 9);
    let (_, dep) = s.get(&format!("{DEPLOYS}/web"));
    assert_eq!(dep["spec"]["replicas"], 0);
    // Name mismatch, missing parent, unsupported kinds.
    let mut other = sc.clone();
    other["metadata"]["name"] = json!("other");
    assert_eq!(s.put(&scale, &other).0, 400);
    assert_eq!(s.get(&format!("{DEPLOYS}/missing/scale")).0, 404);
    assert_eq!(
        s.get("/api/v1/namespaces/default/configmaps/x/scale").0,
        404
    );
    assert_eq!(s.delete(&scale).0, 405);
});

#[test]
fn discovery_lists_the_scale_subresource() {
    let s = Server::start(1);
    let (_, apps) = s.get("/apis/apps/v1");
    let scale = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "deployments/scale")
        .unwrap()
        .clone();
    assert_eq!(scale["group"], "autoscaling");
    assert_eq!(scale["version"], "v1");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["verbs"], json!(["get", "patch", "update"]));
}

/// A write through the Scale is an Update of the `scale` subresource: the
/// parent records its manager as owning the replica count (taking it from
/// whoever set it before), so a later apply of another replica count
/// conflicts with the autoscaler, as in kube.
#[test]
fn scale_writes_record_their_manager_on_the_parent() {
    let s = Server::start(2);
    let (code, _) = s.post(&format!("{DEPLOYS}?fieldManager=creator"), &json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }));
    assert_eq!(code, 201);
    let (code, _) = s.patch(
        &format!("{DEPLOYS}/web/scale?fieldManager=autoscaler"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 4}}),
    );
    assert_eq!(code, 200);
    let (_, d) = s.get(&format!("{DEPLOYS}/web"));
    let entries = d["metadata"]["managedFields"].as_array().unwrap();
    let scaler = entries
        .iter()
        .find(|e| e["manager"] == "autoscaler")
        .unwrap_or_else(|| panic!("no autoscaler entry: {entries:?}"));
    assert_eq!(scaler["operation"], "Update");
    assert_eq!(scaler["apiVersion"], "apps/v1");
    assert_eq!(scaler["subresource"], "scale");
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let creator = entries.iter().find(|e| e["manager"] == "creator").unwrap();
    assert!(creator["fieldsV1"]["f:spec"].get("f:replicas").is_none());

    let (code, err) = s.apply_yaml(
        &format!("{DEPLOYS}/web?fieldManager=kubectl"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n",
    );
    assert_eq!(code, 409, "{err}");
    assert_eq!(
        err["message"],
        "Apply failed with 1 conflict: conflict with \"autoscaler\" with subresource \"scale\" using apps/v1: .spec.replicas"
    );
}
