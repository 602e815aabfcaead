//! The workload kinds (issue 17's first slice): ReplicaSets, StatefulSets,
//! DaemonSets, ControllerRevisions, ReplicationControllers, Jobs and
//! CronJobs are stored and served with kube's defaults, initial status,
//! generation, status and scale subresources, field selectors, kubectl's
//! columns, and a Job's generated selector; `kubectl get all` lists them.

mod common;
use common::kubectl::Kubectl;
use common::*;
use serde_json::{json, Value};

/// The columns of ReplicaSets and ReplicationControllers.
const REPLICA_COLUMNS: &[&str] = &[
    "Name",
    "Desired",
    "Current",
    "Ready",
    "Age",
    "Containers",
    "Images",
    "Selector",
];

fn template(app: &str, restart: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
    if let Some(r) = restart {
        spec["restartPolicy"] = json!(r);
    }
    json!({"metadata": {"labels": {"app": app}}, "spec": spec})
}

/// (collection path, manifest, kube's initial status, Table columns)
fn kinds() -> Vec<(&'static str, Value, Value, Vec<&'static str>)> {
    let sel = |app: &str| json!({"matchLabels": {"app": app}});
    vec![
        (
            "/apis/apps/v1/namespaces/default/replicasets",
            json!({"metadata": {"name": "rs"}, "spec": {"replicas": 2, "selector": sel("rs"), "template": template("rs", None)}}),
            json!({"replicas": 0}),
            REPLICA_COLUMNS.to_vec(),
        ),
        (
            "/apis/apps/v1/namespaces/default/statefulsets",
            json!({"metadata": {"name": "sts"}, "spec": {"serviceName": "sts", "selector": sel("sts"), "template": template("sts", None)}}),
            json!({"replicas": 0, "availableReplicas": 0}),
            vec!["Name", "Ready", "Age", "Containers", "Images"],
        ),
        (
            "/apis/apps/v1/namespaces/default/daemonsets",
            json!({"metadata": {"name": "ds"}, "spec": {"selector": sel("ds"), "template": template("ds", None)}}),
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
            vec![
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
        (
            "/api/v1/namespaces/default/replicationcontrollers",
            json!({"metadata": {"name": "rc"}, "spec": {"replicas": 3, "selector": {"app": "rc"}, "template": template("rc", None)}}),
            json!({"replicas": 0}),
            REPLICA_COLUMNS.to_vec(),
        ),
        (
            "/apis/batch/v1/namespaces/default/jobs",
            json!({"metadata": {"name": "job"}, "spec": {"template": template("job", Some("Never"))}}),
            json!({}),
            vec![
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
        (
            "/apis/batch/v1/namespaces/default/cronjobs",
            json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *",
                   "jobTemplate": {"spec": {"template": template("cj", Some("OnFailure"))}}}}),
            json!({}),
            vec![
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
        ),
    ]
}

#[test]
fn every_workload_kind_is_stored_and_served() {
    let s = Server::start(2);
    for (path, manifest, status, columns) in kinds() {
        let mut body = manifest.clone();
        body["status"] = json!({"replicas": 99, "succeeded": 4});
        let (code, created) = s.post(path, &body);
        assert_eq!(code, 201, "{path}: {created}");
        assert_eq!(created["status"], status, "{path}: status starts empty");
        assert_eq!(created["metadata"]["generation"], 1, "{path}");
        let name = created["metadata"]["name"].as_str().unwrap().to_string();
        let one = format!("{path}/{name}");

        // A spec change bumps generation; a status write does not, and a
        // main-resource write cannot change status.
        let (code, patched) = s.patch(
            &one,
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"x": "y"}}, "spec": {"minReadySeconds": 5}, "status": {"replicas": 7}}),
        );
        assert_eq!(code, 200, "{path}: {patched}");
        assert_eq!(patched["status"], status, "{path}");
        // A field of the kind's own status type (others are pruned).
        let (field, value) = match path.rsplit('/').next().unwrap() {
            "jobs" => ("active", json!(1)),
            "cronjobs" => ("lastScheduleTime", json!("2026-01-01T00:00:00Z")),
            _ => ("observedGeneration", json!(2)),
        };
        let (code, st) = s.patch(
            &format!("{one}/status"),
            "application/merge-patch+json",
            &json!({"status": {field: value}}),
        );
        assert_eq!(code, 200, "{path}: {st}");
        assert_eq!(st["status"][field], value, "{path}");
        assert_eq!(
            st["metadata"]["generation"], patched["metadata"]["generation"],
            "{path}"
        );

        let (listed, got) = table(&s, path);
        assert_eq!(got, columns, "{path}");
        assert_eq!(listed["rows"][0]["cells"][0], name.as_str());

        let (code, list) = s.get(path);
        assert_eq!(code, 200);
        assert_eq!(names(&list), vec![name.clone()], "{path}");
        let (code, _) = s.delete(&one);
        assert_eq!(code, 200, "{path}");
    }
}

#[test]
fn defaults_and_printer_cells_are_kubes() {
    let s = Server::start(1);
    let (_, rs) = s.post(
        "/apis/apps/v1/namespaces/default/replicasets",
        &json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template("web", None)}}),
    );
    assert_eq!(rs["spec"]["replicas"], 1);
    assert_eq!(rs["spec"]["template"]["spec"]["restartPolicy"], "Always");
    let (_, sts) = s.post(
        "/apis/apps/v1/namespaces/default/statefulsets",
        &json!({"metadata": {"name": "db"}, "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template("db", None)}}),
    );
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"],
        0
    );
    let (_, cj) = s.post(
        "/apis/batch/v1/namespaces/default/cronjobs",
        &json!({"metadata": {"name": "nightly"}, "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template("n", Some("Never"))}}}}),
    );
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cj["spec"]["jobTemplate"]["spec"]["backoffLimit"], 6);

    // A daemon set's columns: counts from status, its node selector.
    let (code, ds) = s.post(
        "/apis/apps/v1/namespaces/default/daemonsets",
        &json!({"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}},
               "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "a", "image": "agent:1"}]}}}}),
    );
    assert_eq!(code, 201, "{ds}");
    s.patch(
        "/apis/apps/v1/namespaces/default/daemonsets/agent/status",
        "application/merge-patch+json",
        &json!({"status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}}),
    );
    let (agent, _) = table(&s, "/apis/apps/v1/namespaces/default/daemonsets/agent");
    let cells = &agent["rows"][0]["cells"];
    assert_eq!(
        cells.as_array().unwrap()[..7],
        json!(["agent", 3, 3, 2, 3, 2, "disk=ssd"])
            .as_array()
            .unwrap()[..]
    );
    assert_eq!(cells[8], "a");
    assert_eq!(cells[9], "agent:1");
    assert_eq!(cells[10], "app=agent");

    // A job's completions and status columns.
    let (_, _) = s.post(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({"metadata": {"name": "pi"}, "spec": {"completions": 3, "template": template("pi", Some("Never"))}}),
    );
    s.patch(
        "/apis/batch/v1/namespaces/default/jobs/pi/status",
        "application/merge-patch+json",
        &json!({"status": {"succeeded": 3, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:30Z",
                "conditions": [{"type": "Complete", "status": "True"}]}}),
    );
    let (pi, _) = table(&s, "/apis/batch/v1/namespaces/default/jobs/pi");
    let cells = &pi["rows"][0]["cells"];
    assert_eq!(
        [&cells[1], &cells[2], &cells[3]],
        [&json!("Complete"), &json!("3/3"), &json!("90s")]
    );
}

#[test]
fn a_job_gets_a_selector_of_its_own_uid() {
    let s = Server::start(1);
    let (code, job) = s.post(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({"metadata": {"generateName": "pi-"}, "spec": {"template": template("pi", Some("Never"))}}),
    );
    assert_eq!(code, 201, "{job}");
    let (name, uid) = (&job["metadata"]["name"], &job["metadata"]["uid"]);
    assert!(name.as_str().unwrap().starts_with("pi-"));
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/controller-uid"], *uid);
    assert_eq!(labels["batch.kubernetes.io/job-name"], *name);
    assert_eq!(labels["controller-uid"], *uid);
    assert_eq!(labels["job-name"], *name);
    assert_eq!(labels["app"], "pi");
    assert_eq!(job["spec"]["completions"], 1);
    assert_eq!(job["spec"]["backoffLimit"], 6);

    // A manual selector is left as the client wrote it.
    let (code, manual) = s.post(
        "/apis/batch/v1/namespaces/default/jobs",
        &json!({"metadata": {"name": "manual"}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"app": "m"}},
               "template": template("m", Some("Never"))}}),
    );
    assert_eq!(code, 201, "{manual}");
    assert_eq!(
        manual["spec"]["selector"],
        json!({"matchLabels": {"app": "m"}})
    );
    assert!(manual["spec"]["template"]["metadata"]["labels"]
        .get("job-name")
        .is_none());
}

#[test]
fn replica_counts_scale_and_select() {
    let s = Server::start(2);
    let rc_path = "/api/v1/namespaces/default/replicationcontrollers";
    let (code, rc) = s.post(
        rc_path,
        &json!({"metadata": {"name": "old"}, "spec": {"replicas": 2, "selector": {"app": "old", "tier": "fe"},
               "template": {"metadata": {"labels": {"app": "old", "tier": "fe"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    );
    assert_eq!(code, 201, "{rc}");
    let (code, scale) = s.get(&format!("{rc_path}/old/scale"));
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"]["selector"], "app=old,tier=fe");
    for (path, name) in [
        ("/apis/apps/v1/namespaces/default/replicasets", "rs"),
        ("/apis/apps/v1/namespaces/default/statefulsets", "sts"),
    ] {
        let (code, _) = s.post(
            path,
            &json!({"metadata": {"name": name}, "spec": {"serviceName": name, "selector": {"matchLabels": {"app": name}}, "template": template(name, None)}}),
        );
        assert_eq!(code, 201);
        let (code, scaled) = s.patch(
            &format!("{path}/{name}/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 4}}),
        );
        assert_eq!(code, 200, "{scaled}");
        assert_eq!(scaled["status"]["selector"], format!("app={name}"));
        let (_, obj) = s.get(&format!("{path}/{name}"));
        assert_eq!(obj["spec"]["replicas"], 4);
        assert_eq!(obj["metadata"]["generation"], 2);
    }
    // status.replicas selects replica sets by their observed count.
    s.patch(
        "/apis/apps/v1/namespaces/default/replicasets/rs/status",
        "application/merge-patch+json",
        &json!({"status": {"replicas": 4}}),
    );
    let (code, hit) = s.get("/apis/apps/v1/replicasets?fieldSelector=status.replicas=4");
    assert_eq!(code, 200, "{hit}");
    assert_eq!(names(&hit), vec!["rs"]);
    let (_, miss) = s.get("/apis/apps/v1/replicasets?fieldSelector=status.replicas=0");
    assert!(names(&miss).is_empty());
    let (code, bad) = s.get("/apis/apps/v1/statefulsets?fieldSelector=status.replicas=0");
    assert_eq!(code, 400, "{bad}");
}

#[test]
fn kubectl_get_all_lists_the_workloads() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    k.apply_file(
        "create",
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: c, image: nginx}]\n---\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\nspec:\n  schedule: \"0 3 * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: busybox}]\n",
    );
    let out = k.ok(&["create", "job", "once", "--image=busybox"]);
    assert_eq!(out.trim(), "job.batch/once created");
    let all = k.ok(&["get", "all", "-o", "name"]);
    for want in [
        "replicaset.apps/web",
        "cronjob.batch/nightly",
        "job.batch/once",
    ] {
        assert!(all.lines().any(|l| l == want), "{want} in {all}");
    }
    let rs = k.ok(&["get", "rs", "web"]);
    let header: Vec<&str> = rs.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]);
    let jobs = k.ok(&["get", "jobs"]);
    assert!(
        jobs.lines()
            .any(|l| l.starts_with("once") && l.contains("Running") && l.contains("0/1")),
        "{jobs}"
    );
}

#[test]
fn a_job_whose_pods_restart_always_is_refused() {
    let s = Server::start(1);
    for restart in [Some("Always"), None] {
        let (code, err) = s.post(
            "/apis/batch/v1/namespaces/default/jobs",
            &json!({"metadata": {"name": "bad"}, "spec": {"template": template("bad", restart)}}),
        );
        assert_eq!(code, 422, "{restart:?}: {err}");
        assert_eq!(err["reason"], "Invalid");
        let cause = &err["details"]["causes"][0];
        assert_eq!(cause["field"], "spec.template.spec.restartPolicy", "{err}");
        assert_eq!(cause["reason"], "FieldValueNotSupported", "{err}");
    }
    let (code, _) = s.get("/apis/batch/v1/namespaces/default/jobs/bad");
    assert_eq!(code, 404);
}

/// `kubectl create cronjob` writes kube's CronJob, and `kubectl describe`
/// works on every workload kind (it reads the object, its events by field
/// selector, and for some kinds the pods and revisions it owns).
#[test]
fn kubectl_creates_cronjobs_and_describes_every_workload() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    let out = k.ok(&[
        "create",
        "cronjob",
        "nightly",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "--",
        "date",
    ]);
    assert_eq!(out.trim(), "cronjob.batch/nightly created");
    let cj = k.get_json(&["cronjob", "nightly"]);
    assert_eq!(cj["spec"]["schedule"], "*/5 * * * *");
    let pod = &cj["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "OnFailure");
    assert_eq!(pod["containers"][0]["command"], json!(["date"]));
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow", "defaulted: {cj}");

    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    for (path, manifest, _, _) in kinds() {
        let (code, created) = s.post(path, &manifest);
        assert_eq!(code, 201, "{created}");
    }
    for (kind, name, shows) in [
        ("deployment", "web", "Replicas:"),
        ("replicaset", "rs", "Replicas:"),
        ("statefulset", "sts", "Replicas:"),
        ("daemonset", "ds", "Desired Number of Nodes Scheduled:"),
        ("replicationcontroller", "rc", "Replicas:"),
        ("job", "job", "Parallelism:"),
        ("cronjob", "cj", "Schedule:"),
    ] {
        let out = k.ok(&["describe", kind, name]);
        assert!(
            out.starts_with("Name:") && out.contains(name),
            "{kind}: {out}"
        );
        assert!(out.contains(shows), "{kind} shows {shows}: {out}");
        assert!(out.contains("Events:"), "{kind}: {out}");
    }
}

/// `kubectl rollout status` follows a Deployment until the controller
/// (simulated here by status writes) reports the rollout complete.
#[test]
fn kubectl_rollout_status_waits_for_the_controller() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    let waiting = k
        .command(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (_, d) = s.get("/apis/apps/v1/namespaces/default/deployments/web");
    let generation = d["metadata"]["generation"].clone();
    for ready in 0..=3 {
        let (code, st) = s.patch(
            "/apis/apps/v1/namespaces/default/deployments/web/status",
            "application/merge-patch+json",
            &json!({"status": {"observedGeneration": generation, "replicas": 3,
                "updatedReplicas": 3, "readyReplicas": ready, "availableReplicas": ready,
                "conditions": [{"type": "Progressing", "status": "True",
                    "reason": "NewReplicaSetAvailable", "message": "progressing"}]}}),
        );
        assert_eq!(code, 200, "{st}");
    }
    let out = waiting.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("deployment \"web\" successfully rolled out"),
        "{stdout}"
    );
}

/// A workload's selector must pick its template's pods, and an apps
/// kind's selector never changes (kube's 422s).
#[test]
fn selectors_must_match_templates_and_stay_put() {
    let s = Server::start(1);
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let body = |selector: Value, app: &str| {
        json!({"metadata": {"name": "web"}, "spec": {"selector": selector,
            "template": template(app, None)}})
    };
    let (code, st) = s.post(
        deployments,
        &body(json!({"matchLabels": {"app": "web"}}), "api"),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(
        st["details"]["causes"][0]["field"],
        "spec.template.metadata.labels"
    );
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains(r#"Invalid value: map[string]string{"app":"api"}: `selector` does not match template `labels`"#),
        "{st}"
    );
    let (code, st) = s.post(deployments, &body(json!({}), "web"));
    assert_eq!(code, 422, "{st}");
    assert!(st["message"]
        .as_str()
        .unwrap()
        .contains("empty selector is invalid for deployment"));
    let (code, d) = s.post(
        deployments,
        &body(json!({"matchLabels": {"app": "web"}}), "web"),
    );
    assert_eq!(code, 201, "{d}");
    let (code, st) = s.patch(
        &format!("{deployments}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}}}}}),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.selector");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("field is immutable"),
        "{st}"
    );
}
