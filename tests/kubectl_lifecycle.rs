//! kubectl 1.32 against kubeshard for the lifecycle surface: `scale`,
//! `get -o wide`, `delete --wait` held by a finalizer that a second
//! command removes, `delete namespace` with contents, `--dry-run=server`.

mod common;
use common::kubectl::{words, Kubectl};
use common::*;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn kubectl_scale_and_wide_tables() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    k.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    assert_eq!(
        k.ok(&["scale", "deploy/web", "--replicas=3"]).trim(),
        "deployment.apps/web scaled"
    );
    assert_eq!(
        k.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]),
        "3"
    );
    // --current-replicas makes kubectl read, check and PUT the Scale.
    assert_eq!(
        k.ok(&[
            "scale",
            "deploy/web",
            "--current-replicas=3",
            "--replicas=5"
        ])
        .trim(),
        "deployment.apps/web scaled"
    );
    let err = k.fails(&[
        "scale",
        "deploy/web",
        "--current-replicas=3",
        "--replicas=1",
    ]);
    assert!(err.contains("Expected replicas to be 3, was 5"), "{err}");

    let d = words(&k.ok(&["get", "deploy", "-o", "wide"]));
    assert_eq!(
        d[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(
        [&d[1][..4], &d[1][5..]].concat(),
        ["web", "0/5", "0", "0", "nginx", "nginx:1.27", "app=web"]
    );
    let narrow = words(&k.ok(&["get", "deploy"]));
    assert_eq!(
        narrow[0],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    );

    s.post("/api/v1/nodes", &json!({"metadata": {"name": "node-1", "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                   "nodeInfo": {"kubeletVersion": "v1.34.0", "osImage": "Debian", "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7"}}}));
    let n = words(&k.ok(&["get", "nodes", "-o", "wide"]));
    assert_eq!(
        n[0],
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ]
    );
    assert_eq!(
        [&n[1][..3], &n[1][4..]].concat(),
        [
            "node-1",
            "Ready,SchedulingDisabled",
            "worker",
            "v1.34.0",
            "10.0.0.1",
            "<none>",
            "Debian",
            "6.1.0",
            "containerd://1.7"
        ]
    );

    s.post("/api/v1/namespaces/default/pods", &json!({"metadata": {"name": "web-1"}, "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}]}}));
    s.patch("/api/v1/namespaces/default/pods/web-1/status", "application/merge-patch+json", &json!({"status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.7"}],
        "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "state": {"running": {}}},
                              {"name": "log", "ready": false, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}));
    s.post("/api/v1/namespaces/default/pods", &json!({"metadata": {"name": "pending"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}));
    let p = words(&k.ok(&["get", "pods", "-o", "wide"]));
    assert_eq!(
        p[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    assert_eq!(p[1][..3], ["pending", "0/1", "Pending"]);
    assert_eq!(p[1][5..], ["<none>", "<none>", "<none>", "<none>"]);
    assert_eq!(p[2][..4], ["web-1", "1/2", "CrashLoopBackOff", "4"]);
    assert_eq!(p[2][5..], ["10.1.0.7", "node-1", "<none>", "<none>"]);

    s.post("/api/v1/namespaces/default/services", &json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "clusterIP": "10.0.0.80", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}}));
    let svc = words(&k.ok(&["get", "svc", "web", "-o", "wide"]));
    assert_eq!(
        svc[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    assert_eq!(
        [&svc[1][..5], &svc[1][6..]].concat(),
        [
            "web",
            "NodePort",
            "10.0.0.80",
            "<none>",
            "80:30080/TCP",
            "app=web"
        ]
    );
}

#[test]
fn kubectl_delete_waits_for_a_finalizer_another_command_removes() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    k.apply_file(
        "create",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: default\n  finalizers: [example.com/hold]\ndata:\n  k: v\n",
    );
    let mut delete = k
        .command(&["delete", "configmap", "held", "--wait", "--timeout=60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // kubectl has asked: the object is marked, and kubectl still waits.
    eventually(30, "the configmap marked for deletion", || {
        let (_, cm) = s.get("/api/v1/namespaces/default/configmaps/held");
        cm["metadata"]["deletionTimestamp"].as_str().map(|_| ())
    });
    assert!(
        delete.try_wait().unwrap().is_none(),
        "kubectl waits for the finalizer"
    );
    assert_eq!(
        k.ok(&[
            "patch",
            "configmap",
            "held",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#
        ])
        .trim(),
        "configmap/held patched"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = delete.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "kubectl delete did not return");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = delete.wait_with_output().unwrap();
    assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap \"held\" deleted"
    );
    let err = k.fails(&["get", "configmap", "held"]);
    assert!(err.contains("NotFound"), "{err}");
}

#[test]
fn kubectl_delete_namespace_with_contents() {
    let s = Server::start(4);
    let k = Kubectl::new(&s);
    k.ok(&["create", "namespace", "demo"]);
    k.ok(&[
        "-n",
        "demo",
        "create",
        "configmap",
        "a",
        "--from-literal=x=y",
    ]);
    k.ok(&[
        "-n",
        "demo",
        "create",
        "secret",
        "generic",
        "b",
        "--from-literal=p=q",
    ]);
    k.ok(&["-n", "demo", "create", "deployment", "web", "--image=nginx"]);
    k.ok(&["-n", "demo", "create", "serviceaccount", "robot"]);
    assert_eq!(
        k.ok(&["delete", "namespace", "demo"]).trim(),
        "namespace \"demo\" deleted"
    );
    assert!(k.fails(&["get", "namespace", "demo"]).contains("NotFound"));
    let left = k.ok(&[
        "get",
        "cm,secret,deploy,sa",
        "-A",
        "-o",
        "name",
        "--field-selector",
        "metadata.namespace=demo",
    ]);
    assert!(left.trim().is_empty(), "{left}");
}

#[test]
fn kubectl_dry_run_server() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    assert_eq!(
        k.ok(&[
            "create",
            "configmap",
            "dry",
            "--from-literal=a=b",
            "--dry-run=server"
        ])
        .trim(),
        "configmap/dry created (server dry run)"
    );
    assert!(k.fails(&["get", "configmap", "dry"]).contains("NotFound"));
    let out = k.ok(&[
        "create",
        "configmap",
        "dry",
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "jsonpath={.data.a}",
    ]);
    assert_eq!(out, "b");
    let path = s.dir.path().join("apply.yaml");
    std::fs::write(&path, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  a: b\n").unwrap();
    assert_eq!(
        k.ok(&["apply", "-f", path.to_str().unwrap(), "--dry-run=server"])
            .trim(),
        "configmap/applied created (server dry run)"
    );
    assert!(k
        .fails(&["get", "configmap", "applied"])
        .contains("NotFound"));
    k.ok(&["create", "configmap", "real", "--from-literal=a=b"]);
    assert_eq!(
        k.ok(&["delete", "configmap", "real", "--dry-run=server"])
            .trim(),
        "configmap \"real\" deleted (server dry run)"
    );
    assert_eq!(
        k.ok(&["get", "configmap", "real", "-o", "jsonpath={.data.a}"]),
        "b"
    );
    // Server-side validation runs on a dry run.
    let err = k.fails(&["create", "configmap", "Not_Valid", "--dry-run=server"]);
    assert!(err.contains("is invalid"), "{err}");
}

/// A namespace holding a pod bound to a node, with no kubelet to confirm
/// the pod's end: as in a kube cluster whose node agent is gone, the pod
/// stays Terminating for the kubelet, and so does the namespace, saying
/// why. Deleting the pod at once (what a kubelet or kwok does, or
/// `--grace-period=0 --force`) lets the namespace finish.
#[test]
fn kubectl_delete_namespace_waits_for_pods_bound_to_nodes() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    k.ok(&["create", "namespace", "busy"]);
    k.apply_file(
        "create",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: bound\n  namespace: busy\nspec:\n  nodeName: node-1\n  containers: [{name: c, image: busybox}]\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: unbound\n  namespace: busy\nspec:\n  containers: [{name: c, image: busybox}]\n",
    );
    assert_eq!(
        k.ok(&["delete", "namespace", "busy", "--wait=false"])
            .trim(),
        "namespace \"busy\" deleted"
    );
    let ns = eventually(30, "the namespace controller's report", || {
        let ns = k.get_json(&["namespace", "busy"]);
        let remaining = ns["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "NamespaceContentRemaining" && c["status"] == "True")?
            .clone();
        Some((ns, remaining))
    });
    assert_eq!(ns.0["status"]["phase"], "Terminating");
    assert_eq!(
        ns.1["message"],
        "Some resources are remaining: pods. has 1 resource instances"
    );
    // The unbound pod went at once; the bound one waits for its kubelet.
    assert!(k
        .fails(&["-n", "busy", "get", "pod", "unbound"])
        .contains("NotFound"));
    let bound = k.get_json(&["-n", "busy", "pod", "bound"]);
    assert!(bound["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(bound["metadata"]["deletionGracePeriodSeconds"], 30);
    let wide = words(&k.ok(&["-n", "busy", "get", "pods"]));
    assert_eq!(wide[1][..3], ["bound", "0/1", "Terminating"]);
    k.ok(&[
        "-n",
        "busy",
        "delete",
        "pod",
        "bound",
        "--grace-period=0",
        "--force",
    ]);
    eventually(30, "the namespace to finish", || {
        let gone = !k.run(&["get", "namespace", "busy"], &[]).status.success();
        gone.then_some(())
    });
}
