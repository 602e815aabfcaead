//! API Priority and Fairness against the real binary: kube's bootstrap
//! objects kept in place, the PF response headers, a flood queued and
//! rejected within its own level while other flows keep going, lease
//! renewals untouched by a LIST flood, and the flowcontrol metrics.

mod common;
use common::tls::rbac::{bind, subject};
use common::tls::Who;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const FLOWCONTROL: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// A LIST the server holds until the request times out: it waits for a
/// revision that never comes. It keeps its seat the whole time without
/// costing CPU, which is what makes a flood cheap to stage.
const SLOW: &str = "/api/v1/namespaces/default/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan";

fn uid_of(s: &Server, path: &str) -> String {
    let (code, obj) = s.get(path);
    assert_eq!(code, 200, "{obj}");
    obj["metadata"]["uid"].as_str().unwrap().to_string()
}

fn header<'a>(h: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn metric(s: &Server, prefix: &str) -> f64 {
    let (_, _, text) = s.get_with("/metrics", "*/*");
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn bootstrap_configuration_is_kept_in_place() {
    let s = Server::start(2);
    let names = |plural: &str| {
        let (_, list) = s.get(&format!("{FLOWCONTROL}/{plural}"));
        let mut n = names(&list);
        n.sort();
        n
    };
    let schemas = eventually(10, "bootstrap flow schemas", || {
        let n = names("flowschemas");
        (n.len() == 11).then_some(n)
    });
    assert_eq!(
        schemas,
        [
            "catch-all",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes"
        ]
    );
    assert_eq!(
        names("prioritylevelconfigurations"),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    let (_, le) = s.get(&format!(
        "{FLOWCONTROL}/prioritylevelconfigurations/leader-election"
    ));
    assert_eq!(
        le["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    assert_eq!(le["spec"]["limited"]["nominalConcurrencyShares"], 10);
    assert_eq!(
        le["spec"]["limited"]["limitResponse"]["queuing"]["handSize"],
        4
    );

    // Deleted, mandatory or suggested: recreated.
    let old = uid_of(&s, &format!("{FLOWCONTROL}/flowschemas/global-default"));
    assert_eq!(
        s.delete(&format!("{FLOWCONTROL}/flowschemas/global-default"))
            .0,
        200
    );
    assert_eq!(
        s.delete(&format!(
            "{FLOWCONTROL}/prioritylevelconfigurations/catch-all"
        ))
        .0,
        200
    );
    eventually(10, "deleted bootstrap objects recreated", || {
        let (a, fs) = s.get(&format!("{FLOWCONTROL}/flowschemas/global-default"));
        let (b, _) = s.get(&format!(
            "{FLOWCONTROL}/prioritylevelconfigurations/catch-all"
        ));
        (a == 200 && b == 200 && fs["metadata"]["uid"] != old.as_str()).then_some(())
    });

    // A mandatory spec edited: restored. A suggested one the operator
    // took over (annotation false): left alone.
    let path = format!("{FLOWCONTROL}/flowschemas/catch-all");
    let patch = |path: &str, body: Value| {
        let (code, v) = s.patch(path, "application/merge-patch+json", &body);
        assert_eq!(code, 200, "{v}");
    };
    patch(&path, json!({"spec": {"matchingPrecedence": 9999}}));
    eventually(10, "mandatory spec restored", || {
        (s.get(&path).1["spec"]["matchingPrecedence"] == 10000).then_some(())
    });
    let suggested = format!("{FLOWCONTROL}/flowschemas/service-accounts");
    patch(
        &suggested,
        json!({"metadata": {"annotations": {"apf.kubernetes.io/autoupdate-spec": "false"}},
               "spec": {"matchingPrecedence": 8000}}),
    );
    // Let a pass run (triggered by another change), then look again.
    patch(&path, json!({"spec": {"matchingPrecedence": 9998}}));
    eventually(10, "second pass", || {
        (s.get(&path).1["spec"]["matchingPrecedence"] == 10000).then_some(())
    });
    assert_eq!(s.get(&suggested).1["spec"]["matchingPrecedence"], 8000);

    // A schema naming a level that does not exist is dangling.
    let (code, v) = s.post(
        &format!("{FLOWCONTROL}/flowschemas"),
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "orphan"},
            "spec": {"priorityLevelConfiguration": {"name": "nowhere"}, "matchingPrecedence": 500,
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}),
    );
    assert_eq!(code, 201, "{v}");
    let condition = eventually(10, "Dangling condition", || {
        let (_, fs) = s.get(&format!("{FLOWCONTROL}/flowschemas/orphan"));
        fs["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling").cloned())
    });
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "NotFound");
    assert_eq!(
        condition["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"nowhere\" but there is no such object"
    );
    let (_, fs) = s.get(&format!("{FLOWCONTROL}/flowschemas/exempt"));
    let found = fs["status"]["conditions"][0].clone();
    assert_eq!(
        (found["type"].as_str(), found["reason"].as_str()),
        (Some("Dangling"), Some("Found"))
    );
    // Not an object the server shipped, so never removed by it.
    assert_eq!(s.get(&format!("{FLOWCONTROL}/flowschemas/orphan")).0, 200);
}

#[test]
fn responses_name_their_flow_schema_and_priority_level() {
    let s = Server::start(2);
    bind(
        &s,
        "",
        "alice-view",
        "ClusterRole",
        "view",
        vec![subject("User", "alice")],
    );
    let exempt = eventually(10, "bootstrap", || {
        let (code, v) = s.get(&format!("{FLOWCONTROL}/flowschemas/exempt"));
        (code == 200).then(|| v["metadata"]["uid"].as_str().unwrap().to_string())
    });
    let global = eventually(10, "bootstrap", || {
        let (code, v) = s.get(&format!("{FLOWCONTROL}/flowschemas/global-default"));
        (code == 200).then(|| v["metadata"]["uid"].as_str().unwrap().to_string())
    });
    let global_level = uid_of(
        &s,
        &format!("{FLOWCONTROL}/prioritylevelconfigurations/global-default"),
    );
    let root = s.client(&Who::cert("root", &["system:masters"]));
    let alice = s.client(&Who::cert("alice", &[]));
    eventually(10, "executors see the schemas", || {
        let (_, h, _) = root.raw("GET", "/api/v1/namespaces", vec![]);
        let (_, h2, _) = alice.raw("GET", "/api/v1/namespaces/default/configmaps", vec![]);
        (header(&h, "x-kubernetes-pf-flowschema-uid") == Some(exempt.as_str())
            && header(&h2, "x-kubernetes-pf-flowschema-uid") == Some(global.as_str()))
        .then_some(())
    });
    let (code, h, _) = alice.raw("GET", "/api/v1/namespaces/default/configmaps", vec![]);
    assert_eq!(code, 200);
    assert_eq!(
        header(&h, "x-kubernetes-pf-prioritylevel-uid"),
        Some(global_level.as_str())
    );
    // Denied by authorization after flow control let it in: still named.
    let (code, h, _) = alice.raw("GET", "/api/v1/namespaces/default/secrets", vec![]);
    assert_eq!(code, 403);
    assert_eq!(
        header(&h, "x-kubernetes-pf-flowschema-uid"),
        Some(global.as_str())
    );
    assert!(metric(&s, "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"global-default\",priority_level=\"global-default\"}") >= 2.0);
    // The in-flight gauge is APF's count (the scrape itself is in flight).
    assert!(
        metric(
            &s,
            "apiserver_current_inflight_requests{request_kind=\"readOnly\"}"
        ) >= 1.0
    );
    // 600 seats × 20 shares / 245: kube's nominal limit.
    assert_eq!(
        metric(
            &s,
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"}"
        ),
        49.0
    );
}

/// A tenant's flood fills its level's queues and is turned away with
/// 429s while another tenant's requests and leader-election renewals go
/// through at their usual speed.
#[test]
fn a_flood_is_queued_and_rejected_in_its_own_level() {
    let s = Server::start_with(2, &["--request-timeout=2s"]);
    bind(
        &s,
        "",
        "tenants-view",
        "ClusterRole",
        "view",
        vec![subject("User", "flood"), subject("User", "calm")],
    );
    eventually(10, "bootstrap", || {
        (s.get(&format!("{FLOWCONTROL}/flowschemas/catch-all")).0 == 200).then_some(())
    });
    // The flooding tenant's own level: 1 share, one queue of 2.
    let (code, v) = s.post(&format!("{FLOWCONTROL}/prioritylevelconfigurations"), &json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "tenant"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
            "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 2}}}}}));
    assert_eq!(code, 201, "{v}");
    let (code, v) = s.post(&format!("{FLOWCONTROL}/flowschemas"), &json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "tenant"},
        "spec": {"priorityLevelConfiguration": {"name": "tenant"}, "matchingPrecedence": 200,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "flood"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}}));
    assert_eq!(code, 201, "{v}");
    let tenant_uid = v["metadata"]["uid"].as_str().unwrap().to_string();
    let flood = Who::cert("flood", &[]);
    eventually(10, "the tenant schema in force", || {
        let (_, h, _) =
            s.client(&flood)
                .raw("GET", "/api/v1/namespaces/default/configmaps", vec![]);
        (header(&h, "x-kubernetes-pf-flowschema-uid") == Some(tenant_uid.as_str())).then_some(())
    });

    let floods: Vec<_> = (0..16)
        .map(|_| {
            let c = s.client(&flood);
            std::thread::spawn(move || {
                let (code, headers, body) = c.raw("GET", SLOW, vec![]);
                (code, headers, body)
            })
        })
        .collect();
    // The other tenant, and a leader-election renewal, meanwhile.
    let calm = s.client(&Who::cert("calm", &[]));
    let scheduler = s.client(&Who::cert("system:kube-scheduler", &[]));
    let lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler";
    let (code, v) = scheduler.post(
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        &json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kube-scheduler"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
    );
    assert_eq!(code, 201, "{v}");
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let t = Instant::now();
        assert_eq!(calm.get("/api/v1/namespaces/default/configmaps").0, 200);
        let (code, mut l) = scheduler.get(lease);
        assert_eq!(code, 200);
        l["spec"]["renewTime"] = json!(format!("2026-01-01T00:00:{i:02}.000000Z"));
        let (code, v) = scheduler.put(lease, &l);
        assert_eq!(code, 200, "renewal refused under the flood: {v}");
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    let results: Vec<_> = floods.into_iter().map(|t| t.join().unwrap()).collect();
    let rejected: Vec<_> = results.iter().filter(|r| r.0 == 429).collect();
    assert!(
        !rejected.is_empty(),
        "no flood request was turned away: {:?}",
        results.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert!(
        results.iter().all(|r| r.0 == 429 || r.0 == 504),
        "{:?}",
        results.iter().map(|r| (r.0, &r.2)).collect::<Vec<_>>()
    );
    let (_, headers, body) = rejected[0];
    assert_eq!(
        header(headers, "x-kubernetes-pf-flowschema-uid"),
        Some(tenant_uid.as_str())
    );
    assert!(
        header(headers, "retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    let status: Value = serde_json::from_str(body).unwrap();
    assert_eq!(status["reason"], "TooManyRequests");
    // The others never waited behind the flood (a lenient bound: the
    // flood's requests each hold a seat for two seconds).
    assert!(
        slowest < Duration::from_millis(1500),
        "slowest round {slowest:?}"
    );
    let rejected_total = metric(&s, "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"tenant\",priority_level=\"tenant\"");
    assert_eq!(rejected_total, rejected.len() as f64);
    assert_eq!(
        metric(
            &s,
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"system-leader-election\""
        ),
        0.0
    );
    assert!(metric(&s, "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"system-leader-election\",priority_level=\"leader-election\"}") >= 40.0);
    assert_eq!(
        metric(
            &s,
            "apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"tenant\""
        ),
        0.0
    );
}

#[test]
fn off_it_falls_back_to_max_inflight() {
    let s = Server::start_with(1, &["--enable-priority-and-fairness=false"]);
    let root = s.client(&Who::cert("root", &["system:masters"]));
    let (code, h, _) = root.raw("GET", "/api/v1/namespaces", vec![]);
    assert_eq!(code, 200);
    assert!(!h.contains_key("x-kubernetes-pf-flowschema-uid"));
    let (_, _, text) = s.get_with("/metrics", "*/*");
    assert!(!text.contains("apiserver_flowcontrol_"));
}
