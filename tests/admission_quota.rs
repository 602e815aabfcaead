//! LimitRanger and ResourceQuota: LimitRange defaults and limits on pods
//! and claims, and quotas whose usage the built-in quota controller keeps
//! current, enforced at admission with kube's messages — counts, compute
//! resources, scopes, "must specify", dry run, deletions given back, and
//! no overcommit when creates race for the last unit.

mod common;
use common::kubectl::Kubectl;
use common::*;
use serde_json::{json, Value};

fn pod(name: &str, resources: Value) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}})
}

#[test]
fn limit_ranges_default_and_limit_pods_and_claims() {
    let s = Server::start(2);
    let ns = namespace(&s, "limited");
    let (code, lr) = s.post(
        &format!("/api/v1/namespaces/{ns}/limitranges"),
        &json!({"metadata": {"name": "limits"}, "spec": {"limits": [
            {"type": "Container", "max": {"memory": "1Gi"}, "min": {"cpu": "50m"},
                "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}}]}}),
    );
    assert_eq!(code, 201, "{lr}");
    // kube's LimitRange defaults: the maximum is the default limit.
    assert_eq!(
        lr["spec"]["limits"][0]["default"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    assert_eq!(
        lr["spec"]["limits"][0]["defaultRequest"],
        json!({"cpu": "100m", "memory": "1Gi"})
    );
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let p = eventually(10, "the LimitRange in effect", || {
        let (code, p) = s.post(&pods, &pod(&unique("web"), json!({})));
        assert_eq!(code, 201, "{p}");
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"]
            .is_string()
            .then_some(p)
    });
    let c = &p["spec"]["containers"][0]["resources"];
    assert_eq!(c["requests"], json!({"cpu": "100m", "memory": "1Gi"}));
    assert_eq!(c["limits"], json!({"cpu": "500m", "memory": "1Gi"}));
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    );
    let (code, body) = s.post(&pods, &pod("big", json!({"limits": {"memory": "2Gi"}})));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"big\" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi"
    );
    let (code, body) = s.post(
        &format!("/api/v1/namespaces/{ns}/persistentvolumeclaims"),
        &json!({"metadata": {"name": "small"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "100Mi"}}}}),
    );
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"].as_str().unwrap().ends_with(
            "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi"
        ),
        "{body}"
    );
}

/// A namespace whose controllers have made its objects (the test
/// servers make only its `default` ServiceAccount).
fn settled_namespace(s: &Server, name: &str) -> String {
    let ns = namespace(s, name);
    s.eventually_get(&format!("/api/v1/namespaces/{ns}/serviceaccounts/default"));
    ns
}

trait Settle {
    fn eventually_get(&self, path: &str);
}

impl Settle for Server {
    fn eventually_get(&self, path: &str) {
        eventually(10, path, || (self.get(path).0 == 200).then_some(()));
    }
}

fn quota_status(s: &Server, ns: &str, name: &str) -> Value {
    s.get(&format!("/api/v1/namespaces/{ns}/resourcequotas/{name}"))
        .1["status"]
        .clone()
}

#[test]
fn quotas_count_refuse_and_give_back() {
    let s = Server::start(2);
    let ns = settled_namespace(&s, "quoted");
    let k = Kubectl::new(&s);
    k.ok(&[
        "create",
        "quota",
        "counts",
        "-n",
        &ns,
        "--hard=pods=2,count/configmaps=3,services.loadbalancers=0",
    ]);
    let (code, q) = s.post(
        &format!("/api/v1/namespaces/{ns}/resourcequotas"),
        &json!({"metadata": {"name": "compute"}, "spec": {"hard": {"requests.cpu": "1", "limits.memory": "1Gi"}}}),
    );
    assert_eq!(code, 201, "{q}");
    // The controller fills in the status.
    let status = eventually(10, "quota status", || {
        let st = quota_status(&s, &ns, "counts");
        (st["used"]["count/configmaps"] == "0").then_some(st)
    });
    assert_eq!(
        status["hard"],
        json!({"pods": "2", "count/configmaps": "3", "services.loadbalancers": "0"})
    );
    assert_eq!(status["used"]["pods"], "0");
    eventually(10, "compute quota status", || {
        (quota_status(&s, &ns, "compute")["used"]["requests.cpu"] == "0").then_some(())
    });

    let pods = format!("/api/v1/namespaces/{ns}/pods");
    // Compute quotas want every container to say what it needs.
    let (code, body) = s.post(&pods, &pod("vague", json!({})));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"vague\" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c"
    );
    let sized = |name: &str| {
        pod(
            name,
            json!({"requests": {"cpu": "400m"}, "limits": {"memory": "256Mi"}}),
        )
    };
    assert_eq!(s.post(&pods, &sized("a")).0, 201);
    // Dry run is judged but not charged.
    assert_eq!(s.post(&format!("{pods}?dryRun=All"), &sized("dry")).0, 201);
    assert_eq!(s.post(&pods, &sized("b")).0, 201);
    let (code, body) = s.post(&pods, &sized("c"));
    assert_eq!(code, 403, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg == "pods \"c\" is forbidden: exceeded quota: compute, requested: requests.cpu=400m, used: requests.cpu=800m, limited: requests.cpu=1"
            || msg == "pods \"c\" is forbidden: exceeded quota: counts, requested: pods=1, used: pods=2, limited: pods=2",
        "{msg}"
    );
    let used = quota_status(&s, &ns, "compute")["used"].clone();
    assert_eq!(
        used,
        json!({"limits.memory": "512Mi", "requests.cpu": "800m"})
    );
    // A load balancer is refused outright by a zero limit.
    let (code, body) = s.post(
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains(
        "exceeded quota: counts, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0"
    ), "{body}");
    // Deleting gives back (the controller recomputes).
    assert_eq!(s.delete(&format!("{pods}/a?gracePeriodSeconds=0")).0, 200);
    eventually(10, "usage given back", || {
        (quota_status(&s, &ns, "counts")["used"]["pods"] == "1").then_some(())
    });
    assert_eq!(s.post(&pods, &sized("d")).0, 201);
    // kubectl shows the quota.
    let out = k.ok(&["describe", "quota", "counts", "-n", &ns]);
    assert!(
        out.contains("pods") && out.contains("count/configmaps"),
        "{out}"
    );
}

#[test]
fn scoped_quotas_and_racing_creates() {
    let s = Server::start(4);
    let ns = settled_namespace(&s, "race");
    let quotas = format!("/api/v1/namespaces/{ns}/resourcequotas");
    let (code, q) = s.post(
        &quotas,
        &json!({"metadata": {"name": "best-effort"},
        "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}),
    );
    assert_eq!(code, 201, "{q}");
    let (code, q) = s.post(
        &quotas,
        &json!({"metadata": {"name": "maps"}, "spec": {"hard": {"configmaps": "5"}}}),
    );
    assert_eq!(code, 201, "{q}");
    eventually(10, "quota status", || {
        (quota_status(&s, &ns, "maps")["used"]["configmaps"] == "0"
            && quota_status(&s, &ns, "best-effort")["used"]["pods"] == "0")
            .then_some(())
    });
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    assert_eq!(s.post(&pods, &pod("be-1", json!({}))).0, 201);
    let (code, body) = s.post(&pods, &pod("be-2", json!({})));
    assert_eq!(code, 403, "{body}");
    // A pod that asks for resources is outside the BestEffort scope.
    assert_eq!(
        s.post(&pods, &pod("sized", json!({"requests": {"cpu": "10m"}})))
            .0,
        201
    );

    // Twenty creates race for five ConfigMaps: exactly five win.
    let base = s.base.clone();
    let handles: Vec<_> = (0..20)
        .map(|i| {
            let url = format!("{base}/api/v1/namespaces/{ns}/configmaps");
            std::thread::spawn(move || {
                let agent = ureq::Agent::new_with_defaults();
                let body = json!({"metadata": {"name": format!("cm-{i}")}});
                match agent.post(&url).send_json(&body) {
                    Ok(r) => r.status().as_u16(),
                    Err(ureq::Error::StatusCode(c)) => c,
                    Err(e) => panic!("{e}"),
                }
            })
        })
        .collect();
    let codes: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 5, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 403).count(), 15, "{codes:?}");
    assert_eq!(quota_status(&s, &ns, "maps")["used"]["configmaps"], "5");
}
