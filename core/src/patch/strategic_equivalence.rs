//! The linear-time strategic merge patch against the quadratic one it
//! replaced (`strategic_reference`): same `Result` — the same value, with
//! the same element order and the same representation of each number, or
//! the same error — for random originals and patches built from the
//! names, merge keys and directives strategic merge cares about. Plus the
//! large lists that used to take seconds.

use super::strategic::{apply, dedupe_scalars};
use super::strategic_reference as reference;
use crate::schema::{builtin, Schema};
use crate::status::ApiError;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn pod() -> Schema<'static> {
    builtin().kind("", "v1", "Pod").unwrap()
}

fn deployment() -> Schema<'static> {
    builtin().kind("apps", "v1", "Deployment").unwrap()
}

/// Objects with sorted keys and numbers as serde_json writes them, so
/// `-0.0` and `0.0` differ (`Value`'s `==` calls them equal); arrays keep
/// their order. Object key order is left out: it carries no meaning, and
/// the rewrite keeps merged keys in place where the old code moved them
/// to the end.
fn canonical(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let body: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), canonical(v)))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        other => other.to_string(),
    }
}

fn same_result(
    ours: &Result<Value, ApiError>,
    theirs: &Result<Value, ApiError>,
) -> Result<(), TestCaseError> {
    match (ours, theirs) {
        (Ok(a), Ok(b)) => prop_assert_eq!(canonical(a), canonical(b)),
        (Err(a), Err(b)) => prop_assert_eq!(a, b),
        _ => prop_assert!(false, "ours {:?}\ntheirs {:?}", ours, theirs),
    }
    Ok(())
}

/// Both engines on one input. The old one can panic (see
/// `directive_naming_another_directive_does_not_panic`); then only ours is
/// checked, for not panicking.
fn check(original: Value, patch: Value, schema: Schema<'static>) -> Result<(), TestCaseError> {
    let ours = apply(original.clone(), patch.clone(), schema);
    let Ok(theirs) = catch_unwind(AssertUnwindSafe(|| {
        reference::apply(original, patch, schema)
    })) else {
        return Ok(());
    };
    same_result(&ours, &theirs)
}

type Field = BoxedStrategy<Option<(String, Value)>>;

/// `key: value` present with probability `p`.
fn field(key: &'static str, p: f64, value: impl Strategy<Value = Value> + 'static) -> Field {
    let entry = value.prop_map(move |v| (key.to_string(), v));
    if p >= 1.0 {
        entry.prop_map(Some).boxed()
    } else {
        prop::option::weighted(p, entry).boxed()
    }
}

/// An object of the present fields, in random key order (the patch's key
/// order decides which error comes first).
fn object(fields: Vec<Field>) -> BoxedStrategy<Value> {
    fields
        .prop_flat_map(|present| {
            let entries: Vec<(String, Value)> = present.into_iter().flatten().collect();
            Just(entries).prop_shuffle()
        })
        .prop_map(|entries| Value::Object(entries.into_iter().collect()))
        .boxed()
}

fn list(item: impl Strategy<Value = Value> + 'static, max: usize) -> BoxedStrategy<Value> {
    prop::collection::vec(item, 0..max)
        .prop_map(Value::Array)
        .boxed()
}

/// Merge-key values: a few names (so duplicates are common), and rarely
/// values that merging or appending changes — a `null` key is deleted by
/// the merge, nulls and directives inside an object key are dropped.
fn name() -> BoxedStrategy<Value> {
    prop_oneof![
        12 => prop_oneof![Just("a"), Just("b"), Just("c"), Just("d")].prop_map(Value::from),
        1 => Just(Value::Null),
        1 => Just(json!(1)),
        1 => Just(json!({"x": 1})),
        1 => Just(json!({"x": 1, "y": null})),
        1 => Just(json!({"x": 1, "z": {"$patch": "delete"}})),
    ]
    .boxed()
}

fn small_string() -> BoxedStrategy<Value> {
    prop_oneof![Just("v1"), Just("v2"), Just("v3")]
        .prop_map(Value::from)
        .boxed()
}

fn maybe_null(v: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![5 => v, 1 => Just(Value::Null)].boxed()
}

/// Scalars of one type per list (mixing types is an error, kept rare),
/// numbers including both zeros.
fn scalar_list(max: usize) -> BoxedStrategy<Value> {
    let strings = prop_oneof![Just("f1"), Just("f2"), Just("f3"), Just("f4")].prop_map(Value::from);
    let numbers = prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(0.0)),
        Just(json!(-0.0)),
        Just(json!(2.5)),
    ];
    prop_oneof![
        6 => list(strings, max),
        2 => list(numbers, max),
        1 => list(prop_oneof![Just(json!("f1")), Just(json!(1)), Just(json!([1]))], max),
    ]
    .boxed()
}

fn directive() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => Just(json!("delete")),
        3 => Just(json!("replace")),
        1 => Just(json!("merge")),
        1 => Just(json!("bogus")),
        1 => Just(json!(7)),
    ]
    .boxed()
}

fn env_item(patch: bool) -> BoxedStrategy<Value> {
    let mut fields = vec![
        field("name", 0.95, name()),
        field("value", 0.7, maybe_null(small_string())),
    ];
    if patch {
        fields.push(field("$patch", 0.15, directive()));
    }
    object(fields)
}

fn port_item() -> BoxedStrategy<Value> {
    object(vec![
        field(
            "containerPort",
            0.95,
            prop_oneof![Just(json!(80)), Just(json!(443)), Just(json!(8080))],
        ),
        field(
            "protocol",
            0.6,
            prop_oneof![Just(json!("TCP")), Just(json!("UDP"))],
        ),
    ])
}

/// A `$setElementOrder` list: mostly well formed, sometimes with items
/// that are not maps or lack the merge key, or not a list at all.
fn order_of(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    let odd = prop_oneof![
        3 => item.clone(),
        1 => name(),
        1 => Just(json!({"image": "x"})),
    ];
    prop_oneof![
        8 => list(item, 6),
        2 => list(odd, 5),
        1 => Just(json!({"not": "a list"})),
    ]
    .boxed()
}

fn name_only() -> BoxedStrategy<Value> {
    name().prop_map(|n| json!({ "name": n })).boxed()
}

fn live_container() -> BoxedStrategy<Value> {
    object(vec![
        field("name", 0.97, name()),
        field("image", 0.8, small_string()),
        field("env", 0.4, list(env_item(false), 5)),
        field("ports", 0.3, list(port_item(), 4)),
        field("args", 0.2, scalar_list(3)),
        field("workingDir", 0.2, Just(Value::Null)),
    ])
}

fn patch_container() -> BoxedStrategy<Value> {
    object(vec![
        field("name", 0.95, name()),
        field("$patch", 0.15, directive()),
        field("image", 0.6, maybe_null(small_string())),
        field("env", 0.4, list(env_item(true), 5)),
        field("$setElementOrder/env", 0.2, order_of(name_only())),
        field("ports", 0.2, list(port_item(), 3)),
        field("args", 0.15, scalar_list(3)),
        field(
            "$retainKeys",
            0.1,
            prop_oneof![
                Just(json!(["name", "image", "env"])),
                Just(json!(["name", "image", "env", "ports", "args", "$patch"])),
                Just(json!(["name"])),
                Just(json!("name")),
            ],
        ),
        field("workingDir", 0.1, maybe_null(small_string())),
    ])
}

fn labels(patch: bool) -> BoxedStrategy<Value> {
    let value = if patch {
        maybe_null(small_string())
    } else {
        small_string()
    };
    object(vec![
        field("app", 0.6, value.clone()),
        field("tier", 0.6, value.clone()),
        field("zone", 0.6, value),
    ])
}

fn live_pod() -> BoxedStrategy<Value> {
    let metadata = object(vec![
        field("name", 1.0, Just(json!("p"))),
        field("finalizers", 0.6, scalar_list(6)),
        field("labels", 0.5, labels(false)),
    ]);
    let spec = object(vec![
        field("containers", 0.9, list(live_container(), 7)),
        field("initContainers", 0.2, list(live_container(), 3)),
        field(
            "tolerations",
            0.2,
            list(Just(json!({"key": "k", "operator": "Exists"})), 2),
        ),
        field("nodeSelector", 0.3, labels(false)),
        field("hostname", 0.3, small_string()),
    ]);
    object(vec![
        field("apiVersion", 1.0, Just(json!("v1"))),
        field("kind", 1.0, Just(json!("Pod"))),
        field("metadata", 1.0, metadata),
        field("spec", 0.95, spec),
    ])
}

fn pod_patch() -> BoxedStrategy<Value> {
    let metadata = object(vec![
        field("finalizers", 0.4, maybe_null(scalar_list(5))),
        field(
            "$deleteFromPrimitiveList/finalizers",
            0.3,
            maybe_null(scalar_list(4)),
        ),
        field("$setElementOrder/finalizers", 0.2, scalar_list(4)),
        field("labels", 0.4, maybe_null(labels(true))),
    ]);
    let spec = object(vec![
        field("containers", 0.8, maybe_null(list(patch_container(), 7))),
        field("$setElementOrder/containers", 0.35, order_of(name_only())),
        field("initContainers", 0.15, list(patch_container(), 3)),
        field(
            "tolerations",
            0.15,
            list(Just(json!({"key": "k2", "operator": "Exists"})), 2),
        ),
        field("nodeSelector", 0.25, maybe_null(labels(true))),
        field("hostname", 0.2, maybe_null(small_string())),
        field(
            "$retainKeys",
            0.05,
            Just(json!(["containers", "nodeSelector", "hostname"])),
        ),
        field("$patch", 0.03, directive()),
    ]);
    object(vec![
        field("metadata", 0.5, metadata),
        field("spec", 0.9, spec),
    ])
}

/// Arbitrary JSON from the names and directives strategic merge cares
/// about (the shape of `strategic_tests`' robustness generator).
fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("spec".to_string()),
        Just("containers".to_string()),
        Just("name".to_string()),
        Just("image".to_string()),
        Just("env".to_string()),
        Just("ports".to_string()),
        Just("containerPort".to_string()),
        Just("metadata".to_string()),
        Just("finalizers".to_string()),
        Just("$patch".to_string()),
        Just("$retainKeys".to_string()),
        Just("$setElementOrder/containers".to_string()),
        Just("$setElementOrder/env".to_string()),
        Just("$deleteFromPrimitiveList/finalizers".to_string()),
        "[a-c]{1,2}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (0i64..4).prop_map(Value::from),
        prop_oneof![Just(0.0f64), Just(-0.0)].prop_map(Value::from),
        prop_oneof![
            Just("a"),
            Just("b"),
            Just("delete"),
            Just("replace"),
            Just("merge"),
            Just("name")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn same_result_as_before_on_pods(original in live_pod(), patch in pod_patch()) {
        check(original, patch, pod())?;
    }

    #[test]
    fn same_result_as_before_on_deployments(original in live_pod(), patch in pod_patch()) {
        // The pod's spec as a deployment's template.
        let wrap = |v: Value| json!({"spec": {"template": {"spec": v.get("spec").cloned().unwrap_or(Value::Null)}}});
        check(wrap(original), wrap(patch), deployment())?;
    }

    #[test]
    fn same_result_as_before_on_any_document(original in arb_json(), patch in arb_json()) {
        check(original, patch, pod())?;
    }

    #[test]
    fn dedupe_keeps_gos_order_and_choice(
        items in prop::collection::vec(
            prop_oneof![
                (0i64..5).prop_map(Value::from),
                Just(json!(0.0)),
                Just(json!(-0.0)),
            ],
            0..40,
        )
    ) {
        let ours = dedupe_scalars(items.clone());
        let theirs = reference::dedupe_scalars(items);
        prop_assert_eq!(canonical(&Value::Array(ours)), canonical(&Value::Array(theirs)));
    }
}

#[test]
fn directive_naming_another_directive_does_not_panic() {
    // `$setElementOrder/$setElementOrder/x` merges the list
    // `$setElementOrder/x`, which removes that directive from the patch
    // before its turn: the old code then panicked on `expect("listed")`.
    let original = json!({"spec": {}});
    let patch = json!({"spec": {
        "$setElementOrder/$setElementOrder/x": ["a"],
        "$setElementOrder/x": ["a"],
    }});
    let old = catch_unwind(|| reference::apply(original.clone(), patch.clone(), pod()));
    assert!(old.is_err(), "the old code panicked here");
    let out = apply(original, patch, pod()).unwrap();
    assert_eq!(out, json!({"spec": {"$setElementOrder/x": ["a"]}}));
}

fn containers(n: usize, name: impl Fn(usize) -> String, image: &str) -> Value {
    Value::Array(
        (0..n)
            .map(|i| {
                json!({
                    "name": name(i),
                    "image": format!("{image}-{i}"),
                    "terminationMessagePath": "/dev/termination-log",
                })
            })
            .collect(),
    )
}

fn pod_with_containers(list: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": list}})
}

#[test]
fn sixteen_thousand_containers() {
    let n = 16_000;
    let live = pod_with_containers(containers(n, |i| format!("c{i}"), "old"));
    // Every container, in reverse order, with a new image; one deleted,
    // one added, and an explicit order for the rest.
    let mut items: Vec<Value> = (0..n)
        .rev()
        .filter(|&i| i != 7)
        .map(|i| json!({"name": format!("c{i}"), "image": format!("new-{i}")}))
        .collect();
    items.push(json!({"name": "c7", "$patch": "delete"}));
    items.push(json!({"name": "extra", "image": "x"}));
    let patch = json!({"spec": {"containers": items}});
    let out = apply(live, patch, pod()).unwrap();
    let got = out["spec"]["containers"].as_array().unwrap();
    let mut want: Vec<Value> = (0..n)
        .rev()
        .filter(|&i| i != 7)
        .map(|i| {
            json!({
                "name": format!("c{i}"),
                "image": format!("new-{i}"),
                "terminationMessagePath": "/dev/termination-log",
            })
        })
        .collect();
    want.push(json!({"name": "extra", "image": "x"}));
    assert_eq!(got.len(), want.len());
    assert!(
        got == &want,
        "first difference at {:?}",
        got.iter().zip(&want).position(|(a, b)| a != b)
    );
}

#[test]
fn twenty_thousand_duplicate_names() {
    let n = 20_000;
    // Every name twice in the live list and twice in the patch (reversed):
    // both patch items merge into the first container of the name, the
    // second is left alone, and the pairs come out in the patch's order.
    let live = pod_with_containers(containers(n, |i| format!("n{}", i / 2), "old"));
    let items: Vec<Value> = (0..n)
        .map(|j| json!({"name": format!("n{}", (n - 1 - j) / 2), "image": format!("p{j}")}))
        .collect();
    let patch = json!({"spec": {"containers": items}});
    let out = apply(live, patch, pod()).unwrap();
    let got = out["spec"]["containers"].as_array().unwrap();
    let mut want = Vec::with_capacity(n);
    for k in (0..n / 2).rev() {
        let last_patch_item = 2 * (n / 2 - 1 - k) + 1;
        want.push(json!({
            "name": format!("n{k}"),
            "image": format!("p{last_patch_item}"),
            "terminationMessagePath": "/dev/termination-log",
        }));
        want.push(json!({
            "name": format!("n{k}"),
            "image": format!("old-{}", 2 * k + 1),
            "terminationMessagePath": "/dev/termination-log",
        }));
    }
    assert_eq!(got.len(), want.len());
    assert!(
        got == &want,
        "first difference at {:?}",
        got.iter().zip(&want).position(|(a, b)| a != b)
    );

    // One name for all of them: everything merges into the first.
    let live = pod_with_containers(containers(n, |_| "dup".into(), "old"));
    let items: Vec<Value> = (0..n)
        .map(|j| json!({"name": "dup", "image": format!("p{j}")}))
        .collect();
    let out = apply(live, json!({"spec": {"containers": items}}), pod()).unwrap();
    let got = out["spec"]["containers"].as_array().unwrap();
    assert_eq!(got.len(), n);
    assert_eq!(got[0]["image"], json!(format!("p{}", n - 1)));
    assert!(got[1..]
        .iter()
        .enumerate()
        .all(|(i, c)| c["image"] == json!(format!("old-{}", i + 1))));
}

#[test]
fn large_lists_match_the_old_code() {
    // Sizes the old code still does quickly, with the shapes above plus
    // a $setElementOrder naming half the list and server-only items.
    let n = 1_500;
    let live = pod_with_containers(containers(n, |i| format!("c{}", i % 1_000), "old"));
    let items: Vec<Value> = (0..n)
        .rev()
        .step_by(3)
        .map(|i| json!({"name": format!("c{}", i % 1_100), "image": format!("new-{i}")}))
        .collect();
    let order: Vec<Value> = (0..n)
        .step_by(2)
        .map(|i| json!({"name": format!("c{}", (i * 7) % 1_200)}))
        .collect();
    let patch = json!({"spec": {"containers": items, "$setElementOrder/containers": order}});
    let ours = apply(live.clone(), patch.clone(), pod());
    let theirs = reference::apply(live, patch, pod());
    same_result(&ours, &theirs).unwrap();

    let live = json!({"metadata": {"finalizers": (0..n).map(|i| format!("f{}", i % 700)).collect::<Vec<_>>()}});
    let patch = json!({"metadata": {
        "finalizers": (0..n).rev().map(|i| format!("f{}", i % 900)).collect::<Vec<_>>(),
        "$deleteFromPrimitiveList/finalizers": (0..n).step_by(5).map(|i| format!("f{i}")).collect::<Vec<_>>(),
    }});
    let ours = apply(live.clone(), patch.clone(), pod());
    let theirs = reference::apply(live, patch, pod());
    same_result(&ours, &theirs).unwrap();
}

#[test]
fn corner_cases_match_the_old_code() {
    let live = |containers: Value| json!({"spec": {"containers": containers}});
    let cases = [
        // $setElementOrder lists with a non-map before or after the match,
        // or an item without the merge key.
        (
            live(json!([{"name": "c"}])),
            json!({"spec": {"$setElementOrder/containers": ["b", {"name": "c"}]}}),
        ),
        (
            live(json!([{"name": "c"}])),
            json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, "b"]}}),
        ),
        (
            live(json!([{"name": "c"}])),
            json!({"spec": {"$setElementOrder/containers": [{"image": "x"}, {"name": "c"}]}}),
        ),
        (
            live(json!([{"name": "c"}, {"name": "d"}, {"name": "e"}])),
            json!({"spec": {"$setElementOrder/containers": [{"name": "e"}, {"name": "c"}]}}),
        ),
        // A directive naming another, in both orders.
        (
            json!({"spec": {}}),
            json!({"spec": {"$setElementOrder/x": ["a"], "$setElementOrder/$setElementOrder/x": ["a"]}}),
        ),
        // A list deleted through its `$deleteFromPrimitiveList` alias, then
        // set again, and the other way round.
        (
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": null, "finalizers": ["c"]}}),
        ),
        (
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": null, "$deleteFromPrimitiveList/finalizers": ["a"]}}),
        ),
        (
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": null}}),
        ),
        (
            json!({"metadata": {"labels": {"b": "1"}}}),
            json!({"metadata": {"labels": {"a": null, "b": null, "c": "3"}}}),
        ),
        // Merge keys the merge itself changes: a null key is deleted, so
        // the next item with it no longer matches; nulls inside an object
        // key vanish, so it comes to equal another patch item's key.
        (
            live(json!([{"name": null, "image": "x"}])),
            json!({"spec": {"containers": [
                {"name": null, "image": "y"}, {"name": null, "image": "z"}
            ]}}),
        ),
        (
            live(json!([{"name": {"x": 1, "y": null}}, {"name": {"x": 1}, "image": "old"}])),
            json!({"spec": {"containers": [
                {"name": {"x": 1, "y": null}, "image": "a"},
                {"name": {"x": 1}, "image": "b"}
            ]}}),
        ),
        (
            live(json!([{"name": "a"}])),
            json!({"spec": {"containers": [
                {"name": {"x": 1, "y": null}, "image": "a"},
                {"name": {"x": 1}, "image": "b"},
                {"name": {"x": 1, "y": null}, "image": "c"}
            ]}}),
        ),
        // Both zeros in a set of numbers.
        (
            json!({"metadata": {"finalizers": [0, 0.0, 1, -0.0]}}),
            json!({"metadata": {"finalizers": [-0.0, 2, 0.0]}}),
        ),
    ];
    for (original, patch) in cases {
        let ours = apply(original.clone(), patch.clone(), pod());
        let theirs = catch_unwind(AssertUnwindSafe(|| {
            reference::apply(original.clone(), patch.clone(), pod())
        }));
        if let Ok(theirs) = theirs {
            same_result(&ours, &theirs).unwrap_or_else(|e| panic!("{original} + {patch}: {e}"));
        }
    }
}

/// Many patch items naming one container that has a long list: each
/// merges that list again. The work budget refuses the patch instead of
/// letting it hold its core.
#[test]
fn merging_one_long_list_over_and_over_is_refused() {
    let env: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("E{i}"), "value": "v"}))
        .collect();
    let live = pod_with_containers(json!([{"name": "c", "image": "x", "env": env}]));
    let items: Vec<Value> = (0..2_000)
        .map(|i| json!({"name": "c", "env": [{"name": format!("E{i}"), "value": "w"}]}))
        .collect();
    let err = apply(live.clone(), json!({"spec": {"containers": items}}), pod()).unwrap_err();
    assert_eq!(err.code, 422);
    assert!(err.message.contains("too costly"), "{}", err.message);
    // A few such items are fine.
    let few: Vec<Value> = (0..10)
        .map(|i| json!({"name": "c", "env": [{"name": format!("E{i}"), "value": "w"}]}))
        .collect();
    let out = apply(live, json!({"spec": {"containers": few}}), pod()).unwrap();
    assert_eq!(out["spec"]["containers"][0]["env"][3]["value"], "w");
}
