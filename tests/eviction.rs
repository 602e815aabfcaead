//! `pods/eviction`: a deletion that a PodDisruptionBudget can refuse
//! (429), as `kubectl drain` uses it.

mod common;
use common::tls::{self, Who};
use common::*;
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

fn running_pod(s: &Server, name: &str, labels: Value, node: &str) {
    let pod = json!({"metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}});
    assert_eq!(s.post(PODS, &pod).0, 201);
    let (code, st) = s.patch(
        &format!("{PODS}/{name}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Running"}}),
    );
    assert_eq!(code, 200, "{st}");
}

fn evict(s: &Server, name: &str, grace: Option<i64>) -> (u16, Value) {
    let mut e = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"}});
    if let Some(g) = grace {
        e["deleteOptions"] = json!({"gracePeriodSeconds": g});
    }
    s.post(&format!("{PODS}/{name}/eviction"), &e)
}

/// What the disruption controller would write: `allowed` disruptions,
/// observed at the budget's generation.
fn budget_allows(s: &Server, name: &str, allowed: i64) {
    let (_, pdb) = s.get(&format!("{PDBS}/{name}"));
    let status = json!({"status": {"observedGeneration": pdb["metadata"]["generation"],
        "disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}});
    let (code, out) = s.patch(
        &format!("{PDBS}/{name}/status"),
        "application/merge-patch+json",
        &status,
    );
    assert_eq!(code, 200, "{out}");
}

#[test]
fn budgets_decide_evictions() {
    let s = Server::start(2);
    // No budget: the eviction is a deletion (graceful for a bound pod).
    running_pod(&s, "free", json!({"app": "free"}), "n1");
    let (code, out) = evict(&s, "free", Some(0));
    assert_eq!((code, &out["status"]), (201, &json!("Success")), "{out}");
    assert_eq!(s.get(&format!("{PODS}/free")).0, 404);

    running_pod(&s, "web-1", json!({"app": "web"}), "n1");
    running_pod(&s, "web-2", json!({"app": "web"}), "n1");
    let pdb = json!({"metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    assert_eq!(s.post(PDBS, &pdb).0, 201);
    // Its status is not current (no disruption controller has run): refused.
    let (code, out) = evict(&s, "web-1", None);
    assert_eq!(code, 429, "{out}");
    assert_eq!(out["reason"], "TooManyRequests");
    assert_eq!(
        out["details"]["causes"][0]["reason"], "DisruptionBudget",
        "{out}"
    );
    assert_eq!(s.get(&format!("{PODS}/web-1")).0, 200);

    // One disruption allowed: the first eviction spends it, the second is refused.
    budget_allows(&s, "web", 1);
    let (code, out) = evict(&s, "web-1", Some(0));
    assert_eq!(code, 201, "{out}");
    assert_eq!(s.get(&format!("{PODS}/web-1")).0, 404);
    let (_, pdb) = s.get(&format!("{PDBS}/web"));
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0, "{pdb}");
    assert!(pdb["status"]["disruptedPods"]["web-1"].is_string(), "{pdb}");
    let (code, out) = evict(&s, "web-2", Some(0));
    assert_eq!(code, 429, "{out}");
    let msg = out["details"]["causes"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("needs 1 healthy pods and has 2 currently"),
        "{out}"
    );

    // A pod that has not started needs no budget.
    let pending = json!({"metadata": {"name": "web-3", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    assert_eq!(s.post(PODS, &pending).0, 201);
    assert_eq!(evict(&s, "web-3", None).0, 201);

    // Two budgets over one pod: kube cannot decide either.
    let second = json!({"metadata": {"name": "web-too"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    assert_eq!(s.post(PDBS, &second).0, 201);
    let (code, out) = evict(&s, "web-2", None);
    assert_eq!(code, 500, "{out}");

    // Bad requests: a missing pod, a mismatched name.
    assert_eq!(evict(&s, "ghost", None).0, 404);
    let wrong =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}});
    assert_eq!(s.post(&format!("{PODS}/web-2/eviction"), &wrong).0, 400);
}

#[test]
fn kubectl_drain_evicts_through_the_subresource() {
    let s = Server::start(1);
    let node = json!({"metadata": {"name": "n1"}, "spec": {}});
    assert_eq!(s.post("/api/v1/nodes", &node).0, 201);
    running_pod(&s, "a", json!({"app": "a"}), "n1");
    running_pod(&s, "b", json!({"app": "b"}), "n1");
    let kc = s.kubeconfig(&Who::cert("admin", &["system:masters"]));
    let (code, out, err) = tls::kubectl(
        &kc,
        &[
            "drain",
            "n1",
            "--force",
            "--grace-period=0",
            "--timeout=60s",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("evicted"), "{out}{err}");
    let (_, n) = s.get("/api/v1/nodes/n1");
    assert_eq!(n["spec"]["unschedulable"], true, "drain cordons first: {n}");
    let (_, pods) = s.get(PODS);
    assert!(names(&pods).is_empty(), "{pods}");
    let (code, out, err) = tls::kubectl(&kc, &["uncordon", "n1"]);
    assert_eq!(code, 0, "{out}{err}");
}
