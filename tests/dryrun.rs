//! dryRun=All on every write verb: validation, admission and lifecycle
//! rules run and the answer is what the write would have returned, but
//! nothing is stored, no watch event is sent and no revision is drawn.

mod common;
use common::*;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

each_shard_count!(dry_runs_store_nothing_and_send_no_events, |shards| {
    // Without the service-account controller, whose `default` accounts
    // would draw revisions of their own while the test counts them.
    let s = Server::start_with(shards, &["--controllers=-serviceaccount"]);
    let (_, real) = s.post(CMS, &configmap("real", json!({"a": "1"})));
    let (_, held) = s.post(
        CMS,
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    let last_rv = rv(&held);
    let mut w = s.watch(&format!("{CMS}?watch=1&resourceVersion={last_rv}"));

    // create
    let (code, c) = s.post(&format!("{CMS}?dryRun=All"), &configmap("dry", json!({})));
    assert_eq!(code, 201, "{c}");
    assert_eq!(c["metadata"]["name"], "dry");
    assert!(c["metadata"]["uid"].is_string() && c["metadata"]["creationTimestamp"].is_string());
    assert!(c["metadata"].get("resourceVersion").is_none());
    assert_eq!(s.get(&format!("{CMS}/dry")).0, 404);
    let (code, g) = s.post(
        &format!("{CMS}?dryRun=All"),
        &json!({"metadata": {"generateName": "gen-"}}),
    );
    assert_eq!(code, 201);
    assert!(g["metadata"]["name"].as_str().unwrap().starts_with("gen-"));
    assert_eq!(
        s.post(&format!("{CMS}?dryRun=All"), &configmap("real", json!({})))
            .0,
        409,
        "a clash is still a clash"
    );
    assert_eq!(
        s.post(
            &format!("{CMS}?dryRun=All"),
            &configmap("Bad_Name", json!({}))
        )
        .0,
        422
    );

    // update
    let mut changed = real.clone();
    changed["data"] = json!({"k": "changed"});
    let (code, u) = s.put(&format!("{CMS}/real?dryRun=All"), &changed);
    assert_eq!(code, 200, "{u}");
    assert_eq!(u["data"]["k"], "changed");
    assert_eq!(rv(&u), rv(&real), "answers at the current resourceVersion");
    let mut stale = changed.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    assert_eq!(s.put(&format!("{CMS}/real?dryRun=All"), &stale).0, 409);

    // patch (and the status subresource of a pod)
    let (code, p) = s.patch(
        &format!("{CMS}/real?dryRun=All"),
        "application/merge-patch+json",
        &json!({"data": {"k": "patched"}}),
    );
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["data"]["k"], "patched");
    // server-side apply: creating and changing, both dry.
    let apply = |name: &str, value: &str| {
        s.apply_yaml(
            &format!("{CMS}/{name}?dryRun=All&fieldManager=dry-applier&force=true"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: {value}}}\n"),
        )
    };
    let (code, a) = apply("applied", "new");
    assert_eq!(code, 201, "{a}");
    assert_eq!(a["data"]["k"], "new");
    assert_eq!(s.get(&format!("{CMS}/applied")).0, 404);
    let (code, a) = apply("real", "applied");
    assert_eq!(code, 200, "{a}");
    assert_eq!(a["data"]["k"], "applied");
    assert!(a["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["manager"] == "dry-applier"));
    // An update that would end the held object's life leaves it alive.
    let (code, _) = s.delete(&format!("{CMS}/held?dryRun=All"));
    assert_eq!(code, 200);
    let (code, marked) = s.delete_with(&format!("{CMS}/held"), &json!({"dryRun": ["All"]}));
    assert_eq!(code, 200, "{marked}");
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "answers the object as it would be marked"
    );

    // delete and deletecollection
    let (code, st) = s.delete(&format!("{CMS}/real?dryRun=All"));
    assert_eq!(code, 200, "{st}");
    assert_eq!(st["kind"], "Status");
    let (code, body) = s.delete_with(
        &format!("{CMS}/real?dryRun=All"),
        &json!({"preconditions": {"uid": "nope"}}),
    );
    assert_eq!(code, 409, "preconditions are checked dry: {body}");
    let (code, list) = s.delete(&format!("{CMS}?dryRun=All"));
    assert_eq!(code, 200, "{list}");
    assert_eq!(names(&list), vec!["held", "real"]);
    assert_eq!(s.delete(&format!("{CMS}/real?dryRun=Bogus")).0, 422);

    // Nothing changed...
    let (_, now) = s.get(&format!("{CMS}/real"));
    assert_eq!(now, real);
    let (_, h) = s.get(&format!("{CMS}/held"));
    assert!(h["metadata"].get("deletionTimestamp").is_none());
    // ...no revision was drawn, and the watch saw nothing before this.
    let (_, marker) = s.post(CMS, &configmap("marker", json!({})));
    assert_eq!(rv(&marker), last_rv + 1);
    let e = w.next_event().unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("marker"))
    );
});

#[test]
fn dry_run_on_namespaces_and_pods() {
    let s = Server::start(2);
    let ns = namespace(&s, "keep");
    let (code, t) = s.delete(&format!("/api/v1/namespaces/{ns}?dryRun=All"));
    assert_eq!(code, 200, "{t}");
    assert_eq!(t["status"]["phase"], "Terminating");
    let (_, n) = s.get(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(n["status"]["phase"], "Active");
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        &configmap("ok", json!({})),
    );
    assert_eq!(code, 201, "the namespace still takes content");
    let (_, pod) = s.post(
        &format!("/api/v1/namespaces/{ns}/pods"),
        &json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 20, "containers": [{"name": "c", "image": "i"}]}}),
    );
    let (code, p) = s.delete(&format!("/api/v1/namespaces/{ns}/pods/p?dryRun=All"));
    assert_eq!(code, 200);
    assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 20);
    let (code, st) = s.patch(
        &format!("/api/v1/namespaces/{ns}/pods/p/status?dryRun=All"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Running"}}),
    );
    assert_eq!(code, 200);
    assert_eq!(st["status"]["phase"], "Running");
    let (_, now) = s.get(&format!("/api/v1/namespaces/{ns}/pods/p"));
    assert_eq!(now, pod);
}
