use super::strategic::apply;
use crate::schema::{builtin, Schema};
use serde_json::{json, Value};

fn pod() -> Schema<'static> {
    builtin().kind("", "v1", "Pod").unwrap()
}

fn deployment() -> Schema<'static> {
    builtin().kind("apps", "v1", "Deployment").unwrap()
}

fn smp(schema: Schema<'static>, original: Value, patch: Value) -> Value {
    apply(original, patch, schema).unwrap()
}

fn pod_with(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

#[test]
fn containers_merge_by_name() {
    let live = pod_with(json!({"containers": [
        {"name": "a", "image": "nginx:1", "env": [{"name": "X", "value": "1"}]},
        {"name": "b", "image": "busybox"}
    ]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"containers": [{"name": "a", "image": "nginx:2"}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([
            {"name": "a", "image": "nginx:2", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "busybox"}
        ])
    );
}

#[test]
fn new_container_is_appended_and_delete_directive_removes() {
    let live =
        pod_with(json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"containers": [{"name": "c", "image": "z"}, {"$patch": "delete", "name": "a"}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        // Patch items the live list cannot place go first (kube's order).
        json!([{"name": "c", "image": "z"}, {"name": "b", "image": "y"}])
    );
}

#[test]
fn kubectl_apply_patch_changes_image_and_removes_env() {
    // What `kubectl apply` sends when the second manifest changes the
    // image and drops env var B.
    let live = json!({"spec": {"template": {"spec": {"containers": [{
        "name": "app", "image": "nginx:1.25",
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "terminationMessagePath": "/dev/termination-log"
    }]}}}});
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [{
            "$setElementOrder/env": [{"name": "A"}],
            "env": [{"$patch": "delete", "name": "B"}],
            "image": "nginx:1.26", "name": "app"
        }]
    }}}});
    let out = smp(deployment(), live, patch);
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "nginx:1.26",
                "env": [{"name": "A", "value": "1"}],
                "terminationMessagePath": "/dev/termination-log"}])
    );
}

#[test]
fn set_element_order_reorders_and_keeps_server_only_items() {
    let live = pod_with(json!({"containers": [
        {"name": "a"}, {"name": "server"}, {"name": "b"}
    ]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}),
    );
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // "server" was before "b" in the live list, so it stays before it.
    assert_eq!(names, ["server", "b", "a"]);
}

#[test]
fn tolerations_are_replaced_whole() {
    let live = pod_with(json!({"tolerations": [{"key": "a", "operator": "Exists"}]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
    );
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "b", "operator": "Exists"}])
    );
}

#[test]
fn ports_merge_by_container_port() {
    let live = pod_with(json!({"containers": [{"name": "a", "ports": [
        {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}
    ]}]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}}),
    );
    assert_eq!(
        out["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443, "protocol": "TCP"}])
    );
}

#[test]
fn volumes_retain_keys_swaps_the_source() {
    let live = pod_with(json!({"volumes": [{"name": "v", "emptyDir": {}}]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]}}),
    );
    assert_eq!(
        out["spec"]["volumes"],
        json!([{"name": "v", "configMap": {"name": "cm"}}])
    );
}

#[test]
fn deployment_strategy_retain_keys() {
    let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}});
    let out = smp(
        deployment(),
        live,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn retain_keys_must_list_every_patched_key() {
    let err = apply(
        json!({"spec": {"strategy": {}}}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
        deployment(),
    )
    .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(err.message, "invalid patch format of retainKeys");
}

#[test]
fn finalizers_merge_as_a_set_and_delete_from_primitive_list() {
    let live = json!({"metadata": {"finalizers": ["a", "b"]}});
    let out = smp(
        pod(),
        live.clone(),
        json!({"metadata": {"finalizers": ["c", "a"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
    let out = smp(
        pod(),
        live,
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn null_deletes_and_patch_directives_on_maps() {
    let live =
        json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"nodeSelector": {"x": "y"}}});
    let out = smp(
        pod(),
        live.clone(),
        json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    let out = smp(
        pod(),
        live.clone(),
        json!({"metadata": {"labels": {"$patch": "replace", "z": "9"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"z": "9"}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"nodeSelector": {"$patch": "delete"}}}),
    );
    assert_eq!(out["spec"]["nodeSelector"], json!({}));
}

#[test]
fn replace_directive_in_a_list() {
    let live = pod_with(json!({"containers": [{"name": "a"}, {"name": "b"}]}));
    let out = smp(
        pod(),
        live,
        json!({"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}),
    );
    assert_eq!(out["spec"]["containers"], json!([{"name": "c"}]));
}

#[test]
fn missing_merge_key_is_kubes_bare_error() {
    let live = pod_with(json!({"containers": [{"name": "a"}]}));
    let err = apply(
        live,
        json!({"spec": {"containers": [{"image": "x"}]}}),
        pod(),
    )
    .unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "map: map[image:x] does not contain declared merge key: name"
    );
    let err = apply(
        json!({}),
        json!({"spec": {"$patch": "bogus"}, "x": 1}),
        pod(),
    );
    // A new map is taken from the patch minus directives (no original to merge with).
    assert!(err.is_ok());
}

#[test]
fn new_values_lose_nulls_and_directives() {
    let out = smp(
        pod(),
        json!({"spec": {}}),
        json!({"spec": {"containers": [{"name": "a", "image": null, "$setElementOrder/env": [{"name": "X"}], "env": [{"name": "X"}]}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "a", "env": [{"name": "X"}]}])
    );
}

#[test]
fn lists_of_lists_are_refused() {
    let err = apply(
        json!({"spec": {"finalizers": [["a"]]}}),
        json!({"metadata": {"finalizers": [["b"]]}}),
        pod(),
    );
    assert!(err.is_ok(), "spec.finalizers is not metadata.finalizers");
    let err = apply(
        json!({"metadata": {"finalizers": [["a"]]}}),
        json!({"metadata": {"finalizers": [["b"]]}}),
        pod(),
    )
    .unwrap_err();
    assert_eq!(err.code, 422);
}

mod robustness {
    use super::*;
    use proptest::prelude::*;

    /// JSON built from the names and directives strategic merge cares about,
    /// so random documents reach the interesting paths.
    fn arb_json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            Just("spec".to_string()),
            Just("containers".to_string()),
            Just("name".to_string()),
            Just("env".to_string()),
            Just("ports".to_string()),
            Just("containerPort".to_string()),
            Just("tolerations".to_string()),
            Just("metadata".to_string()),
            Just("finalizers".to_string()),
            Just("$patch".to_string()),
            Just("$retainKeys".to_string()),
            Just("$setElementOrder/containers".to_string()),
            Just("$deleteFromPrimitiveList/finalizers".to_string()),
            "[a-z]{1,3}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0i64..5).prop_map(Value::from),
            prop_oneof![
                Just("a"),
                Just("b"),
                Just("delete"),
                Just("replace"),
                Just("merge")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_any_document(original in arb_json(), patch in arb_json()) {
            let _ = apply(original, patch, pod());
        }

        #[test]
        fn plain_maps_merge_like_merge_patch(a in "[a-z]{1,4}", b in "[a-z]{1,4}", v in 0i64..9) {
            let out = smp(pod(), json!({"metadata": {"labels": {a.clone(): "x"}}}), json!({"metadata": {"labels": {b.clone(): v}}}));
            prop_assert_eq!(&out["metadata"]["labels"][&b], &json!(v));
            if a != b {
                prop_assert_eq!(&out["metadata"]["labels"][&a], &json!("x"));
            }
        }
    }
}
