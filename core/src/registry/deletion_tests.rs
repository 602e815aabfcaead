use super::*;
use crate::catalog::Catalog;
use chrono::TimeZone;

fn info(group: &str, plural: &str) -> ResourceInfo {
    let snap = Catalog::with_builtins().snapshot();
    (**snap.lookup(group, "v1", plural).unwrap()).clone()
}

fn ctx() -> DeleteContext {
    DeleteContext {
        now: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        gc_enabled: true,
    }
}

const NOW: &str = "2026-01-01T00:00:00Z";

fn opts(p: Option<Propagation>) -> DeleteOptions {
    DeleteOptions {
        propagation: p,
        ..Default::default()
    }
}

fn plan(info: &ResourceInfo, obj: &Value, o: &DeleteOptions) -> DeleteStep {
    plan_delete(info, obj, o, &ctx()).unwrap()
}

fn marked(step: DeleteStep) -> Value {
    match step {
        DeleteStep::Mark(v) => v,
        other => panic!("expected Mark, got {other:?}"),
    }
}

#[test]
fn plain_objects_go_at_once_and_finalizers_hold_them() {
    let cm = info("", "configmaps");
    let bare = json!({"metadata": {"name": "c", "uid": "u1", "resourceVersion": "5"}});
    assert_eq!(plan(&cm, &bare, &opts(None)), DeleteStep::Delete);
    let held = json!({"metadata": {"name": "c", "finalizers": ["example.com/hold"]}});
    let v = marked(plan(&cm, &held, &opts(None)));
    assert_eq!(v["metadata"]["deletionTimestamp"], NOW);
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(v["metadata"]["finalizers"], json!(["example.com/hold"]));
    // Deleting again changes nothing: same timestamp, nothing to write.
    assert_eq!(marked(plan(&cm, &v, &opts(None))), v);
}

#[test]
fn preconditions_name_the_kind() {
    let cm = info("", "configmaps");
    let obj = json!({"metadata": {"name": "c", "uid": "u1", "resourceVersion": "5"}});
    let mut o = opts(None);
    o.preconditions.uid = Some("other".into());
    let e = plan_delete(&cm, &obj, &o, &ctx()).unwrap_err();
    assert_eq!(e.code, 409);
    assert_eq!(e.message, "Operation cannot be fulfilled on ConfigMap \"c\": the UID in the precondition (other) does not match the UID in record (u1). The object might have been deleted and then recreated");
    o.preconditions.uid = Some("u1".into());
    o.preconditions.resource_version = Some("4".into());
    let e = plan_delete(&cm, &obj, &o, &ctx()).unwrap_err();
    assert!(e.message.contains("the ResourceVersion in the precondition (4) does not match the ResourceVersion in record (5)"), "{}", e.message);
    o.preconditions.resource_version = Some("5".into());
    assert_eq!(plan(&cm, &obj, &o), DeleteStep::Delete);
}

#[test]
fn propagation_policies_set_the_collector_finalizers() {
    let deploy = info("apps", "deployments");
    let obj = json!({"metadata": {"name": "d", "generation": 3}});
    let fg = marked(plan(&deploy, &obj, &opts(Some(Propagation::Foreground))));
    assert_eq!(fg["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert_eq!(
        fg["metadata"]["generation"], 4,
        "generation bumps on the first mark"
    );
    let orphan = marked(plan(&deploy, &obj, &opts(Some(Propagation::Orphan))));
    assert_eq!(orphan["metadata"]["finalizers"], json!(["orphan"]));
    let legacy = DeleteOptions {
        orphan_dependents: Some(true),
        ..Default::default()
    };
    assert_eq!(
        marked(plan(&deploy, &obj, &legacy))["metadata"]["finalizers"],
        json!(["orphan"])
    );
    assert_eq!(
        plan(&deploy, &obj, &opts(Some(Propagation::Background))),
        DeleteStep::Delete
    );
    // Background on an object that carries the orphan finalizer drops it and deletes.
    let with_orphan = json!({"metadata": {"name": "d", "finalizers": ["orphan"]}});
    assert_eq!(
        plan(&deploy, &with_orphan, &opts(Some(Propagation::Background))),
        DeleteStep::Delete
    );
    // No policy: an existing finalizer decides, else the kind's default.
    let v = marked(plan(&deploy, &with_orphan, &opts(None)));
    assert_eq!(v["metadata"]["finalizers"], json!(["orphan"]));
    let mut job_like = deploy.clone();
    job_like.strategy.gc_policy = GcPolicy::OrphanDependents;
    assert_eq!(
        marked(plan(&job_like, &obj, &opts(None)))["metadata"]["finalizers"],
        json!(["orphan"])
    );
    let mut unsupported = deploy.clone();
    unsupported.strategy.gc_policy = GcPolicy::Unsupported;
    assert_eq!(
        plan(&unsupported, &obj, &opts(Some(Propagation::Foreground))),
        DeleteStep::Delete
    );
    // Without the collector the API server sets none of its finalizers.
    let off = DeleteContext {
        gc_enabled: false,
        ..ctx()
    };
    assert_eq!(
        plan_delete(&deploy, &obj, &opts(Some(Propagation::Foreground)), &off).unwrap(),
        DeleteStep::Delete
    );
}

#[test]
fn pods_are_deleted_gracefully_when_bound() {
    let pods = info("", "pods");
    let bound = json!({"metadata": {"name": "p", "generation": 1}, "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}, "status": {"phase": "Running"}});
    let v = marked(plan(&pods, &bound, &opts(None)));
    assert_eq!(v["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(v["metadata"]["generation"], 2);
    // A repeat without a shorter grace period is pending; a shorter one moves the deadline.
    assert_eq!(plan(&pods, &v, &opts(None)), DeleteStep::Pending);
    let longer = DeleteOptions {
        grace_period_seconds: Some(60),
        ..Default::default()
    };
    assert_eq!(plan(&pods, &v, &longer), DeleteStep::Pending);
    let shorter = DeleteOptions {
        grace_period_seconds: Some(10),
        ..Default::default()
    };
    let s = marked(plan(&pods, &v, &shorter));
    assert_eq!(s["metadata"]["deletionTimestamp"], "2026-01-01T00:00:10Z");
    assert_eq!(s["metadata"]["deletionGracePeriodSeconds"], 10);
    // Grace 0 forces it: marked, then deleted.
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    match plan(&pods, &v, &now) {
        DeleteStep::MarkThenDelete(m) => assert_eq!(m["metadata"]["deletionGracePeriodSeconds"], 0),
        other => panic!("{other:?}"),
    }
    // Never scheduled, or finished: no grace.
    let unbound = json!({"metadata": {"name": "p"}, "spec": {"terminationGracePeriodSeconds": 30}});
    assert!(matches!(
        plan(&pods, &unbound, &opts(None)),
        DeleteStep::MarkThenDelete(_)
    ));
    let done = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30}, "status": {"phase": "Succeeded"}});
    assert!(matches!(
        plan(&pods, &done, &opts(None)),
        DeleteStep::MarkThenDelete(_)
    ));
    // A pod whose grace ran out (deletionGracePeriodSeconds 0) is deleted outright.
    let expired = json!({"metadata": {"name": "p", "deletionTimestamp": NOW, "deletionGracePeriodSeconds": 0}});
    assert_eq!(plan(&pods, &expired, &opts(None)), DeleteStep::Delete);
    // Negative grace counts as one second.
    let negative = DeleteOptions {
        grace_period_seconds: Some(-5),
        ..Default::default()
    };
    assert_eq!(
        marked(plan(&pods, &bound, &negative))["metadata"]["deletionGracePeriodSeconds"],
        1
    );
}

#[test]
fn namespaces_terminate_then_wait_for_their_finalizers() {
    let ns = info("", "namespaces");
    let active = json!({"metadata": {"name": "n", "uid": "u"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    let t = marked(plan(&ns, &active, &opts(None)));
    assert_eq!(t["status"]["phase"], "Terminating");
    assert_eq!(t["metadata"]["deletionTimestamp"], NOW);
    assert!(t["metadata"].get("deletionGracePeriodSeconds").is_none());
    assert_eq!(t["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(plan(&ns, &t, &opts(None)), DeleteStep::Pending);
    let mut finalized = t.clone();
    finalized["spec"]["finalizers"] = json!([]);
    assert_eq!(plan(&ns, &finalized, &opts(None)), DeleteStep::Delete);
    let fg = marked(plan(&ns, &active, &opts(Some(Propagation::Foreground))));
    assert_eq!(fg["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    let legacy = DeleteOptions {
        orphan_dependents: Some(false),
        ..Default::default()
    };
    assert_eq!(
        marked(plan(&ns, &active, &legacy))["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let mut o = opts(None);
    o.preconditions.uid = Some("x".into());
    let e = plan_delete(&ns, &active, &o, &ctx()).unwrap_err();
    assert_eq!(e.message, "Operation cannot be fulfilled on namespaces \"n\": Precondition failed: UID in precondition: x, UID in object meta: u");
}

#[test]
fn options_from_body_and_query() {
    let o = DeleteOptions::from_body(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5, "propagationPolicy": "Foreground", "preconditions": {"uid": "u"}, "dryRun": ["All"]})).unwrap();
    assert_eq!(o.grace_period_seconds, Some(5));
    assert_eq!(o.propagation, Some(Propagation::Foreground));
    assert_eq!(o.preconditions.uid.as_deref(), Some("u"));
    assert!(o.dry_run);
    let both =
        DeleteOptions::from_body(&json!({"orphanDependents": true, "propagationPolicy": "Orphan"}))
            .unwrap_err();
    assert_eq!(both.code, 422);
    assert!(
        both.message
            .contains("orphanDependents and deletionPropagation cannot be both set"),
        "{}",
        both.message
    );
    let bad = DeleteOptions::from_body(&json!({"propagationPolicy": "Sideways"})).unwrap_err();
    assert_eq!(bad.code, 422);
    assert!(
        bad.message
            .contains(r#"supported values: "Foreground", "Background", "Orphan", "nil""#),
        "{}",
        bad.message
    );
    assert_eq!(
        DeleteOptions::from_body(&json!({"gracePeriodSeconds": "x"}))
            .unwrap_err()
            .code,
        400
    );
    let mut q = DeleteOptions::default();
    q.merge_query(|k| match k {
        "gracePeriodSeconds" => Some("0".into()),
        "propagationPolicy" => Some("Orphan".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(
        (q.grace_period_seconds, q.propagation),
        (Some(0), Some(Propagation::Orphan))
    );
    let mut q = DeleteOptions::default();
    assert_eq!(
        q.merge_query(|k| (k == "dryRun").then(|| "Some".into()))
            .unwrap_err()
            .code,
        422
    );
    let mut q = DeleteOptions::default();
    assert_eq!(
        q.merge_query(|k| (k == "gracePeriodSeconds").then(|| "soon".into()))
            .unwrap_err()
            .code,
        400
    );
}
