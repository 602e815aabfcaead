use super::managed::{ManagedFields, Operation};
use super::path::PathElement;
use super::set::FieldSet;
use super::*;
use crate::schema::builtin;
use proptest::prelude::*;
use serde_json::json;

fn writer<'a>(manager: &'a str, now: &'a str) -> Writer<'a> {
    Writer {
        schema: builtin().kind("apps", "v1", "Deployment"),
        manager,
        api_version: "apps/v1",
        subresource: "",
        status_is_separate: true,
        now,
    }
}

fn deployment(replicas: i64, env: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"app": "d"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
                {"name": "web", "image": "nginx:1.25", "env": env}]}}}})
}

fn owner_of(obj: &serde_json::Value, manager: &str) -> FieldSet {
    ManagedFields::decode(obj)
        .0
        .into_iter()
        .find(|e| e.manager == manager)
        .map(|e| e.fields().clone())
        .unwrap_or_default()
}

fn replicas_path() -> Vec<PathElement> {
    vec![
        PathElement::Field("spec".into()),
        PathElement::Field("replicas".into()),
    ]
}

#[test]
fn fields_v1_encoding_matches_kube() {
    let obj = deployment(1, json!([{"name": "A", "value": "1"}]));
    let mut new = obj.clone();
    update(
        &writer("kubectl-create", "2025-01-01T00:00:00Z"),
        None,
        &mut new,
    );
    let mf = &new["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "kubectl-create");
    assert_eq!(mf["operation"], "Update");
    assert_eq!(mf["apiVersion"], "apps/v1");
    assert_eq!(mf["time"], "2025-01-01T00:00:00Z");
    assert_eq!(mf["fieldsType"], "FieldsV1");
    let f = &mf["fieldsV1"];
    assert_eq!(f["f:metadata"]["f:labels"], json!({".": {}, "f:app": {}}));
    assert_eq!(f["f:spec"]["f:replicas"], json!({}));
    assert_eq!(f["f:spec"]["f:selector"], json!({}), "selector is atomic");
    let c = &f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"];
    assert_eq!(c["."], json!({}));
    assert_eq!(c["f:image"], json!({}));
    assert_eq!(
        c["f:env"]["k:{\"name\":\"A\"}"],
        json!({".": {}, "f:name": {}, "f:value": {}})
    );
    assert!(
        f["f:metadata"].get("f:name").is_none(),
        "name is never owned"
    );
    // Round trip.
    let set = FieldSet::from_fields_v1(f).unwrap();
    assert_eq!(set.to_fields_v1(), *f);
}

#[test]
fn two_managers_conflict_and_force() {
    let t = "2025-01-01T00:00:00Z";
    let mut live = deployment(1, json!([]));
    update(&writer("kubectl-client-side-apply", t), None, &mut live);
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 3}});
    let err = apply(&writer("ssa", t), Some(&live), &config, false, "default/d").unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );
    let cause = &err.details.as_ref().unwrap().causes[0];
    assert_eq!(cause.reason, "FieldManagerConflict");
    assert_eq!(cause.field, ".spec.replicas");
    assert_eq!(
        cause.message,
        "conflict with \"kubectl-client-side-apply\" using apps/v1"
    );

    // The same value another manager set is shared, not a conflict.
    let same = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 1}});
    let shared = apply(&writer("ssa", t), Some(&live), &same, false, "default/d").unwrap();
    assert!(owner_of(&shared, "ssa").contains(&replicas_path()));
    assert!(owner_of(&shared, "kubectl-client-side-apply").contains(&replicas_path()));

    // Forced: the applier takes the field away.
    let forced = apply(&writer("ssa", t), Some(&live), &config, true, "default/d").unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    assert!(owner_of(&forced, "ssa").contains(&replicas_path()));
    assert!(!owner_of(&forced, "kubectl-client-side-apply").contains(&replicas_path()));
    let entries = ManagedFields::decode(&forced).0;
    assert_eq!(
        entries[0].operation,
        Operation::Apply,
        "Apply entries sort first"
    );
}

#[test]
fn apply_drops_fields_it_no_longer_applies() {
    let t = "2025-01-01T00:00:00Z";
    let first = deployment(
        2,
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
    );
    let created = apply(&writer("mgr", t), None, &first, false, "default/d").unwrap();
    assert_eq!(created["spec"]["replicas"], 2);
    let second = deployment(2, json!([{"name": "A", "value": "1"}]));
    let mut second = second;
    second["metadata"].as_object_mut().unwrap().remove("labels");
    let out = apply(
        &writer("mgr", t),
        Some(&created),
        &second,
        false,
        "default/d",
    )
    .unwrap();
    let env = &out["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(*env, json!([{"name": "A", "value": "1"}]));
    assert!(
        out["metadata"].get("labels").is_none(),
        "an emptied map goes"
    );
    // A field another manager owns survives the applier dropping it.
    let mut touched = out.clone();
    touched["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("9");
    update(&writer("editor", t), Some(&out), &mut touched);
    let mut third = second.clone();
    third["spec"]["template"]["spec"]["containers"][0]["env"] = json!([]);
    let kept = apply(
        &writer("mgr", t),
        Some(&touched),
        &third,
        false,
        "default/d",
    )
    .unwrap();
    let env = &kept["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(*env, json!([{"name": "A", "value": "9"}]), "{kept}");
}

#[test]
fn apply_errors() {
    let t = "2025-01-01T00:00:00Z";
    let bad = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"bogus": 1}});
    let err = apply(&writer("m", t), None, &bad, false, "default/d").unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(err.message, "failed to create typed patch object (default/d): .spec.bogus: field not declared in schema");
    let with_mf = json!({"metadata": {"name": "d", "managedFields": []}});
    assert_eq!(
        apply(&writer("m", t), None, &with_mf, false, "x")
            .unwrap_err()
            .code,
        400
    );
}

#[test]
fn no_op_apply_keeps_the_object() {
    let t1 = "2025-01-01T00:00:00Z";
    let created = apply(
        &writer("m", t1),
        None,
        &deployment(1, json!([])),
        false,
        "d",
    )
    .unwrap();
    let again = apply(
        &writer("m", "2030-01-01T00:00:00Z"),
        Some(&created),
        &deployment(1, json!([])),
        false,
        "d",
    )
    .unwrap();
    assert_eq!(again, created);
}

#[test]
fn update_takes_changed_fields_from_others_and_merges_its_own() {
    let t = "2025-01-01T00:00:00Z";
    let mut a = deployment(1, json!([]));
    update(&writer("a", t), None, &mut a);
    let mut b = a.clone();
    b["spec"]["replicas"] = json!(5);
    update(&writer("b", t), Some(&a), &mut b);
    assert!(owner_of(&b, "b").contains(&replicas_path()));
    assert!(!owner_of(&b, "a").contains(&replicas_path()));
    let mut c = b.clone();
    c["spec"]["paused"] = json!(true);
    update(&writer("b", t), Some(&b), &mut c);
    let owned = owner_of(&c, "b");
    assert!(
        owned.contains(&replicas_path()),
        "a manager's earlier fields stay"
    );
    assert!(owned.contains(&[
        PathElement::Field("spec".into()),
        PathElement::Field("paused".into())
    ]));
}

#[test]
fn update_managers_are_capped_at_ten() {
    let mut obj = deployment(1, json!([]));
    update(&writer("m00", "2025-01-01T00:00:00Z"), None, &mut obj);
    for i in 1..14 {
        let mut next = obj.clone();
        next["metadata"]["labels"][format!("k{i}")] = json!("v");
        let t = format!("2025-01-01T00:00:{i:02}Z");
        update(&writer(&format!("m{i:02}"), &t), Some(&obj), &mut next);
        obj = next;
    }
    let entries = ManagedFields::decode(&obj).0;
    assert_eq!(
        entries.len(),
        10,
        "{:?}",
        entries.iter().map(|e| &e.manager).collect::<Vec<_>>()
    );
    let ancient = entries
        .iter()
        .find(|e| e.manager == "ancient-changes")
        .unwrap();
    // The first writer's fields are in the folded entry.
    assert!(ancient.fields().contains(&replicas_path()));
    assert!(entries.iter().any(|e| e.manager == "m13"));
    assert!(!entries.iter().any(|e| e.manager == "m00"));
}

fn arb_path() -> impl Strategy<Value = Vec<PathElement>> {
    let pe = prop_oneof![
        "[a-z]{1,3}".prop_map(PathElement::Field),
        (0usize..3).prop_map(PathElement::Index),
        "[a-z]{1,2}".prop_map(|s| PathElement::Value(json!(s))),
        ("[a-z]{1,2}", 0i64..3).prop_map(|(k, v)| PathElement::Key(vec![
            ("name".into(), json!(k)),
            ("port".into(), json!(v))
        ])),
    ];
    prop::collection::vec(pe, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn fields_v1_round_trips(paths in prop::collection::vec(arb_path(), 0..12)) {
        let set = FieldSet::from_paths(&paths);
        // Remembered encodings (a miss, then a hit, among the other cases'
        // sets) are the encoding.
        prop_assert_eq!(set.to_fields_v1(), set.encode_fields_v1());
        prop_assert_eq!(set.to_fields_v1(), set.encode_fields_v1());
        let back = FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap();
        prop_assert_eq!(back.paths(), set.paths());
        for p in &paths {
            prop_assert!(back.contains(p));
        }
    }

    #[test]
    fn set_algebra(a in prop::collection::vec(arb_path(), 0..8), b in prop::collection::vec(arb_path(), 0..8)) {
        let (sa, sb) = (FieldSet::from_paths(&a), FieldSet::from_paths(&b));
        let u = sa.union(&sb);
        let d = sa.difference(&sb);
        let i = sa.intersection(&sb);
        for p in a.iter().chain(&b) {
            prop_assert!(u.contains(p));
            prop_assert_eq!(d.contains(p), sa.contains(p) && !sb.contains(p));
            prop_assert_eq!(i.contains(p), sa.contains(p) && sb.contains(p));
        }
        // Node-by-node results equal the path-by-path definitions exactly
        // (no dangling empty nodes, which would encode as stray FieldsV1).
        let by_paths = |keep: &dyn Fn(&Vec<PathElement>) -> bool, from: &FieldSet| {
            FieldSet::from_paths(from.paths().iter().filter(|p| keep(p)))
        };
        prop_assert_eq!(&u, &FieldSet::from_paths(a.iter().chain(&b)));
        prop_assert_eq!(&d, &by_paths(&|p| !sb.contains(p), &sa));
        prop_assert_eq!(&i, &by_paths(&|p| sb.contains(p), &sa));
    }

    #[test]
    fn applied_values_win_and_reapplying_is_stable(
        replicas in 0i64..5, live_replicas in 0i64..5,
        names in prop::collection::btree_set("[A-E]", 0..4),
        live_names in prop::collection::btree_set("[A-E]", 0..4),
    ) {
        let env = |ns: &std::collections::BTreeSet<String>| json!(ns.iter().map(|n| json!({"name": n, "value": n})).collect::<Vec<_>>());
        let t = "2025-01-01T00:00:00Z";
        let live = apply(&writer("other", t), None, &deployment(live_replicas, env(&live_names)), true, "d").unwrap();
        let config = deployment(replicas, env(&names));
        let out = apply(&writer("me", t), Some(&live), &config, true, "d").unwrap();
        prop_assert_eq!(&out["spec"]["replicas"], &json!(replicas));
        let got: std::collections::BTreeSet<String> = out["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array().into_iter().flatten().map(|e| e["name"].as_str().unwrap().to_string()).collect();
        for n in &names {
            prop_assert!(got.contains(n));
        }
        let again = apply(&writer("me", t), Some(&out), &config, false, "d").unwrap();
        prop_assert_eq!(again, out);
    }
}

/// kubectl's client-side to server-side upgrade rewrites managedFields so
/// the applier owns what `kubectl-client-side-apply` owned, maps included
/// (`f:labels: {".": {}, …}`). Applying the same configuration afterwards
/// must keep the labels: a map the applier owned itself but whose entries
/// it still applies is not given up (structured-merge-diff adds owned
/// children's parents back before pruning).
#[test]
fn apply_keeps_a_map_whose_entries_it_still_applies() {
    let t = "2025-01-01T00:00:00Z";
    let mut live = deployment(1, json!([{"name": "A", "value": "1"}]));
    update(&writer("kubectl-client-side-apply", t), None, &mut live);
    // What `kubectl apply --server-side` sends after a client-side apply:
    // the Update entry's fields, "." members included, become its Apply entry.
    let csa = live["metadata"]["managedFields"][0]["fieldsV1"].clone();
    assert_eq!(csa["f:metadata"]["f:labels"]["."], json!({}));
    live["metadata"]["managedFields"] = json!([{"manager": "kubectl", "operation": "Apply",
        "apiVersion": "apps/v1", "time": t, "fieldsType": "FieldsV1", "fieldsV1": csa}]);
    let mut config = deployment(1, json!([{"name": "A", "value": "1"}]));
    config["metadata"]["labels"]["extra"] = json!("x");
    let out = apply(&writer("kubectl", t), Some(&live), &config, true, "d").unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "d", "extra": "x"}));
    assert_eq!(
        out["spec"]["template"]["metadata"]["labels"],
        json!({"app": "d"})
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}])
    );
    // What it no longer applies still goes, map entries included.
    let mut fewer = config.clone();
    fewer["metadata"]["labels"] = json!({"app": "d"});
    fewer["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("env");
    let out = apply(&writer("kubectl", t), Some(&out), &fewer, false, "d").unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "d"}));
    assert!(out["spec"]["template"]["spec"]["containers"][0]
        .get("env")
        .is_none());
}

/// A deployment varied along what ownership walks differently: maps that
/// are absent, null, empty or full; keyed lists with and without repeated
/// keys; sets; atomic lists; emptied structs; status.
fn arb_deployment() -> impl Strategy<Value = serde_json::Value> {
    let map = prop_oneof![
        Just(None),
        Just(Some(json!(null))),
        Just(Some(json!({}))),
        prop::collection::btree_map("[a-c]", "[x-z]", 1..3).prop_map(|m| Some(json!(m))),
    ];
    let env = prop::collection::vec(("[A-C]", prop::option::of("[0-2]")), 0..4).prop_map(|v| {
        json!(v
            .into_iter()
            .map(|(n, val)| match val {
                Some(val) => json!({"name": n, "value": val}),
                None => json!({"name": n}),
            })
            .collect::<Vec<_>>())
    });
    let finalizers = prop::collection::vec("[p-r]", 0..3);
    let tolerations = prop::collection::vec("[k-m]", 0..3)
        .prop_map(|v| json!(v.into_iter().map(|k| json!({"key": k})).collect::<Vec<_>>()));
    (
        (map.clone(), map.clone(), map),
        (0i64..3, env.clone(), env),
        (finalizers, tolerations, any::<bool>(), 0i64..3),
    )
        .prop_map(
            |(
                (labels, annotations, selector),
                (replicas, env_a, env_b),
                (fin, tol, empty_strategy, ready),
            )| {
                let mut d = deployment(replicas, env_a);
                let md = d["metadata"].as_object_mut().unwrap();
                md.remove("labels");
                if let Some(l) = labels {
                    md.insert("labels".into(), l);
                }
                if let Some(a) = annotations {
                    md.insert("annotations".into(), a);
                }
                if !fin.is_empty() {
                    md.insert("finalizers".into(), json!(fin));
                }
                md.insert(
                    "managedFields".into(),
                    json!([{"manager": "x", "operation": "Update", "fieldsV1": {"f:spec": {}}}]),
                );
                let spec = &mut d["spec"];
                if let Some(s) = selector {
                    spec["template"]["spec"]["nodeSelector"] = s;
                }
                spec["template"]["spec"]["tolerations"] = tol;
                spec["template"]["spec"]["containers"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "side", "image": "b", "env": env_b}));
                spec["strategy"] = if empty_strategy {
                    json!({})
                } else {
                    json!({"type": "Recreate"})
                };
                d["status"] = json!({"readyReplicas": ready});
                d
            },
        )
}

fn sorted(c: &typed::Comparison) -> [Vec<path::Path>; 3] {
    let s = |v: &Vec<path::Path>| {
        let mut v = v.clone();
        v.sort();
        v
    };
    [s(&c.added), s(&c.modified), s(&c.removed)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]
    /// Walking only what differs finds exactly what comparing both
    /// objects' full field lists finds, for every endpoint's scope.
    #[test]
    fn changes_equal_the_full_comparison(old in arb_deployment(), new in arb_deployment(), sub in 0usize..2) {
        let t = "2025-01-01T00:00:00Z";
        let mut w = writer("m", t);
        w.subresource = ["", "status"][sub];
        let full = match (w.owned_fields(&old), w.owned_fields(&new)) {
            (Ok(a), Ok(b)) => typed::compare(&a, &b),
            _ => return Ok(()),
        };
        let fast = w.changes(&old, &new).unwrap();
        prop_assert_eq!(sorted(&fast), sorted(&full));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    /// A create's set, built straight from one walk, is every field the
    /// comparison with nothing finds added, for every endpoint's scope;
    /// both refuse the same objects.
    #[test]
    fn created_fields_equal_the_changes_from_nothing(new in arb_deployment(), sub in 0usize..2) {
        let t = "2025-01-01T00:00:00Z";
        let mut w = writer("m", t);
        w.subresource = ["", "status"][sub];
        match (w.created_fields(&new).map(|(set, _)| set), w.changes(&json!({}), &new)) {
            (Ok(set), Ok(c)) => {
                prop_assert!(c.modified.is_empty() && c.removed.is_empty());
                prop_assert_eq!(set, FieldSet::from_paths(&c.added));
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "created {:?}, changes {:?}", a.is_ok(), b.is_ok()),
        }
    }
}

/// List-free objects whose keys are partly what the schemas declare.
fn arb_listless() -> impl Strategy<Value = serde_json::Value> {
    let key = prop::sample::select(vec![
        "metadata",
        "labels",
        "name",
        "data",
        "spec",
        "replicas",
        "paused",
        "status",
        "selector",
        "matchLabels",
        "x",
        "managedFields",
        "kind",
    ]);
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        (0i64..5).prop_map(|n| json!(n)),
        "[a-z]{0,3}".prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop::collection::vec((key.clone(), inner), 0..4).prop_map(|kv| {
            serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        })
    })
    .prop_map(|v| match v {
        serde_json::Value::Object(_) => v,
        other => json!({ "data": other }),
    })
}

/// `v` with every scalar changed but kept of its type: the same shape.
fn reshuffled(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value::*;
    match v {
        Bool(b) => Bool(!b),
        Number(n) => json!(n.as_i64().unwrap_or(0) + 1),
        String(s) => String(format!("{s}-changed")),
        Object(m) => Object(m.iter().map(|(k, c)| (k.clone(), reshuffled(c))).collect()),
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    /// What a create owns, remembered by shape, is exactly what walking the
    /// object finds, with its FieldsV1, whether the shape was seen before
    /// (a hit for the reshuffled copy) or not; and both refuse alike.
    #[test]
    fn remembered_created_fields_are_the_walked_ones(obj in arb_listless(), kind in 0usize..3, sub in 0usize..2) {
        let t = "2025-01-01T00:00:00Z";
        let mut w = writer("m", t);
        w.schema = [builtin().kind("apps", "v1", "Deployment"), builtin().kind("", "v1", "ConfigMap"), None][kind];
        w.subresource = ["", "status"][sub];
        for o in [obj.clone(), reshuffled(&obj), obj] {
            match (w.created_fields(&o), w.walk_created(&o)) {
                (Ok((set, encoded)), Ok(walked)) => {
                    prop_assert_eq!(encoded, Some(walked.encode_fields_v1()));
                    prop_assert_eq!(set, walked);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "remembered {:?}, walked {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }
}

/// Objects with lists are never remembered: their items are named by
/// their values.
#[test]
fn objects_with_lists_are_walked_every_time() {
    let w = writer("m", "2025-01-01T00:00:00Z");
    let a = deployment(1, json!([{"name": "A", "value": "1"}]));
    let b = deployment(1, json!([{"name": "B", "value": "1"}]));
    for o in [&a, &b, &a] {
        let (set, encoded) = w.created_fields(o).unwrap();
        assert_eq!(encoded, None);
        assert_eq!(set, w.walk_created(o).unwrap());
    }
    assert_ne!(
        w.created_fields(&a).unwrap().0,
        w.created_fields(&b).unwrap().0
    );
}
