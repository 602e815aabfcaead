//! What admission is told about each write, path by path: a recording
//! plugin (TestRecorder, in debug builds only) writes every call of the
//! chain to a file, and each write path must reach both phases (mutating
//! and validating) with kube's attributes — operation, resource,
//! subresource, namespace, name, old object, user, dry run and the
//! operation's options (Create/Update/DeleteOptions). The
//! server's own writers (bootstrap, built-in controllers) are in the
//! table too, under their own users. (That a refusing plugin stops every
//! one of these paths is pinned in tests/admission.rs with AlwaysDeny.)

mod common;

use common::{configmap, namespace, rv, Server};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const ADMIN: &str = "system:unsecured";
const CONTROLLERS: &str = "system:kube-controller-manager";
const BOOTSTRAP: &str = "system:apiserver";

/// The recorded calls, read again from the start of the file.
struct Records(PathBuf);

impl Records {
    fn all(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// What one write must have told admission.
struct Expected<'a> {
    operation: &'a str,
    resource: &'a str,
    subresource: &'a str,
    namespace: &'a str,
    name: &'a str,
    /// The stored object's resourceVersion the write replaces.
    old: Option<u64>,
    user: &'a str,
    dry_run: bool,
}

impl Expected<'_> {
    fn matches(&self, r: &Value) -> bool {
        r["operation"] == self.operation
            && r["resource"] == self.resource
            && r["subresource"] == self.subresource
            && r["namespace"] == self.namespace
            && r["name"] == self.name
    }

    /// Both phases saw this write, once each, with these attributes; the
    /// mutating phase had the new object (none for a delete).
    fn check(&self, what: &str, records: &[Value]) {
        for phase in ["admit", "validate"] {
            let seen: Vec<&Value> = records
                .iter()
                .filter(|r| r["phase"] == phase && self.matches(r))
                .collect();
            assert_eq!(
                seen.len(),
                1,
                "{what}: {phase} calls {seen:?} in {records:#?}"
            );
            let r = seen[0];
            let old = r["oldResourceVersion"]
                .as_str()
                .map(|v| v.parse::<u64>().unwrap());
            assert_eq!(old, self.old, "{what}: {phase} old object: {r}");
            assert_eq!(r["user"], self.user, "{what}: {phase} user: {r}");
            assert_eq!(r["dryRun"], self.dry_run, "{what}: {phase} dry run: {r}");
            if phase == "admit" {
                assert_eq!(
                    r["objectName"].is_null(),
                    self.operation == "DELETE",
                    "{what}: the object: {r}"
                );
            }
        }
    }
}

fn start(dir: &Path, shards: usize) -> (Server, Records) {
    let records = dir.join("records.jsonl");
    let config = dir.join("admission.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: TestRecorder\n  configuration:\n    path: {}\n",
            records.display()
        ),
    )
    .unwrap();
    let s = Server::start_with(
        shards,
        &[
            "--enable-admission-plugins=TestRecorder",
            &format!("--admission-control-config-file={}", config.display()),
        ],
    );
    (s, Records(records))
}

/// The options one recorded write was admitted with (its mutating call).
fn options(records: &[Value], resource: &str, name: &str) -> Value {
    records
        .iter()
        .find(|r| r["phase"] == "admit" && r["resource"] == resource && r["name"] == name)
        .unwrap_or_else(|| panic!("no {resource}/{name} in {records:#?}"))["options"]
        .clone()
}

/// Runs `write`, then checks what admission recorded while it ran.
fn after(records: &Records, write: impl FnOnce() -> (u16, Value), want: u16) -> Vec<Value> {
    let before = records.all().len();
    let (code, body) = write();
    assert_eq!(code, want, "{body}");
    records.all().split_off(before)
}

#[test]
fn every_write_path_tells_admission_what_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let (s, records) = start(dir.path(), 2);
    let ns = namespace(&s, "recorded");
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let cm = |name: &str| configmap(name, json!({}));
    let exp = |operation, resource, subresource, name, old, dry_run| Expected {
        operation,
        resource,
        subresource,
        namespace: ns.as_str(),
        name,
        old,
        user: ADMIN,
        dry_run,
    };

    // Creates: POST, dry or not, and with a generated name (admission runs
    // before the name is generated, as in kube: it sees none).
    let r = after(&records, || s.post(&cms, &cm("a")), 201);
    exp("CREATE", "configmaps", "", "a", None, false).check("POST", &r);
    let o = options(&r, "configmaps", "a");
    assert_eq!(o["kind"], "CreateOptions", "{o}");
    assert_eq!(o["apiVersion"], "meta.k8s.io/v1", "{o}");
    assert!(
        o["fieldManager"].as_str().is_some_and(|m| !m.is_empty()),
        "{o}"
    );
    assert!(o.get("dryRun").is_none(), "{o}");
    let r = after(
        &records,
        || s.post(&format!("{cms}?dryRun=All"), &cm("dry")),
        201,
    );
    exp("CREATE", "configmaps", "", "dry", None, true).check("dry-run POST", &r);
    assert_eq!(options(&r, "configmaps", "dry")["dryRun"], json!(["All"]));
    let generated = json!({"metadata": {"generateName": "gen-"}});
    let r = after(&records, || s.post(&cms, &generated), 201);
    exp("CREATE", "configmaps", "", "", None, false).check("generateName POST", &r);

    // Updates see the stored object they replace.
    let (_, a) = s.get(&format!("{cms}/a"));
    let mut changed = a.clone();
    changed["data"] = json!({"k": "1"});
    let r = after(&records, || s.put(&format!("{cms}/a"), &changed), 200);
    exp("UPDATE", "configmaps", "", "a", Some(rv(&a)), false).check("PUT", &r);
    let (_, a) = s.get(&format!("{cms}/a"));
    let r = after(&records, || s.put(&format!("{cms}/a?dryRun=All"), &a), 200);
    exp("UPDATE", "configmaps", "", "a", Some(rv(&a)), true).check("dry-run PUT", &r);
    // (Services may be created by PUT; ConfigMaps may not, as in kube.)
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "put-new", "namespace": ns},
        "spec": {"ports": [{"port": 80}]}});
    let put_new = format!("/api/v1/namespaces/{ns}/services/put-new");
    let r = after(&records, || s.put(&put_new, &service), 201);
    exp("CREATE", "services", "", "put-new", None, false).check("PUT that creates", &r);
    let patches = [
        ("application/merge-patch+json", json!({"data": {"k": "2"}})),
        (
            "application/strategic-merge-patch+json",
            json!({"data": {"k": "3"}}),
        ),
        (
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/data/k", "value": "4"}]),
        ),
    ];
    for (content_type, patch) in patches {
        let (_, a) = s.get(&format!("{cms}/a"));
        let r = after(
            &records,
            || s.patch(&format!("{cms}/a"), content_type, &patch),
            200,
        );
        exp("UPDATE", "configmaps", "", "a", Some(rv(&a)), false).check(content_type, &r);
    }
    let apply = |name: &str, query: &str| {
        s.apply_yaml(
            &format!("{cms}/{name}?fieldManager=t{query}"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  applied: \"yes\"\n"
            ),
        )
    };
    let (_, a) = s.get(&format!("{cms}/a"));
    let r = after(&records, || apply("a", ""), 200);
    exp("UPDATE", "configmaps", "", "a", Some(rv(&a)), false).check("apply", &r);
    let o = options(&r, "configmaps", "a");
    assert_eq!(
        (o["kind"].as_str(), o["fieldManager"].as_str()),
        (Some("UpdateOptions"), Some("t")),
        "{o}"
    );
    let r = after(&records, || apply("applied", ""), 201);
    exp("CREATE", "configmaps", "", "applied", None, false).check("apply that creates", &r);
    let o = options(&r, "configmaps", "applied");
    assert_eq!(
        (o["kind"].as_str(), o["fieldManager"].as_str()),
        (Some("CreateOptions"), Some("t")),
        "{o}"
    );
    let r = after(&records, || apply("dry-applied", "&dryRun=All"), 201);
    exp("CREATE", "configmaps", "", "dry-applied", None, true).check("dry-run apply", &r);

    // Subresources: status, scale, finalize.
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let r = after(&records, || s.post(&deployments, &deployment), 201);
    exp("CREATE", "deployments", "", "web", None, false).check("POST deployment", &r);
    let (_, web) = s.get(&format!("{deployments}/web"));
    let mut status = web.clone();
    status["status"] = json!({"observedGeneration": 1});
    let r = after(
        &records,
        || s.put(&format!("{deployments}/web/status"), &status),
        200,
    );
    exp(
        "UPDATE",
        "deployments",
        "status",
        "web",
        Some(rv(&web)),
        false,
    )
    .check("status", &r);
    let (_, web) = s.get(&format!("{deployments}/web"));
    let r = after(
        &records,
        || {
            s.patch(
                &format!("{deployments}/web/scale"),
                "application/merge-patch+json",
                &json!({"spec": {"replicas": 3}}),
            )
        },
        200,
    );
    exp(
        "UPDATE",
        "deployments",
        "scale",
        "web",
        Some(rv(&web)),
        false,
    )
    .check("scale", &r);

    // Deletes see the object they delete, as the old object.
    let (_, a) = s.get(&format!("{cms}/a"));
    let r = after(&records, || s.delete(&format!("{cms}/a?dryRun=All")), 200);
    exp("DELETE", "configmaps", "", "a", Some(rv(&a)), true).check("dry-run DELETE", &r);
    let r = after(&records, || s.delete(&format!("{cms}/a")), 200);
    exp("DELETE", "configmaps", "", "a", Some(rv(&a)), false).check("DELETE", &r);
    assert_eq!(options(&r, "configmaps", "a")["kind"], "DeleteOptions");
    let (_, list) = s.get(&cms);
    let r = after(&records, || s.delete(&cms), 200);
    for item in list["items"].as_array().unwrap() {
        let name = item["metadata"]["name"].as_str().unwrap();
        exp("DELETE", "configmaps", "", name, Some(rv(item)), false)
            .check(&format!("deletecollection of {name}"), &r);
    }

    // The namespace: its deletion by the client, then the built-in
    // namespace controller empties it (as kube-controller-manager) and
    // finalizes it.
    let (_, namespace_before) = s.get(&format!("/api/v1/namespaces/{ns}"));
    let (_, web) = s.get(&format!("{deployments}/web"));
    let r = after(
        &records,
        || s.delete(&format!("/api/v1/namespaces/{ns}")),
        200,
    );
    Expected {
        namespace: "",
        ..exp(
            "DELETE",
            "namespaces",
            "",
            &ns,
            Some(rv(&namespace_before)),
            false,
        )
    }
    .check("DELETE namespace", &r);
    s.wait_gone(&format!("/api/v1/namespaces/{ns}"));
    let r = records.all();
    Expected {
        user: CONTROLLERS,
        ..exp("DELETE", "deployments", "", "web", Some(rv(&web)), false)
    }
    .check("the namespace controller's delete", &r);
    let finalize = r
        .iter()
        .find(|x| {
            x["resource"] == "namespaces" && x["subresource"] == "finalize" && x["name"] == ns
        })
        .unwrap_or_else(|| panic!("no finalize in {r:#?}"));
    assert_eq!(finalize["operation"], "UPDATE", "{finalize}");
    assert_eq!(finalize["user"], CONTROLLERS, "{finalize}");
    assert_eq!(finalize["namespace"], "", "{finalize}");

    // The server's own writers: the bootstrap (the kube-system namespace,
    // the default RBAC policy) and the service-account controller (each
    // namespace's default ServiceAccount).
    fn bootstrap<'a>(resource: &'a str, namespace: &'a str, name: &'a str) -> Expected<'a> {
        Expected {
            operation: "CREATE",
            resource,
            subresource: "",
            namespace,
            name,
            old: None,
            user: BOOTSTRAP,
            dry_run: false,
        }
    }
    bootstrap("namespaces", "", "kube-system").check("bootstrap namespace", &r);
    bootstrap("clusterroles", "", "cluster-admin").check("bootstrap policy", &r);
    Expected {
        user: CONTROLLERS,
        ..exp("CREATE", "serviceaccounts", "", "default", None, false)
    }
    .check("the service-account controller's create", &r);
}
