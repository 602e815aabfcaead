//! kubectl 1.32 against kubeshard: the day-to-day commands, checking what
//! kubectl prints, not just its exit codes.

mod common;
use common::kubectl::{words, Kubectl};
use common::*;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: demo
data:
  mode: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: app-secret
  namespace: demo
stringData:
  password: hunter2
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
"#;

#[test]
fn kubectl_day_to_day() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);

    let version = k.ok(&["version"]);
    assert!(version.contains("Server Version: v1.34"), "{version}");

    let resources = words(&k.ok(&["api-resources"]));
    assert_eq!(
        resources[0],
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    assert!(
        resources.contains(&vec![
            "configmaps".into(),
            "cm".into(),
            "v1".into(),
            "true".into(),
            "ConfigMap".into()
        ]),
        "{resources:?}"
    );
    assert!(resources.contains(&vec![
        "deployments".into(),
        "deploy".into(),
        "apps/v1".into(),
        "true".into(),
        "Deployment".into()
    ]));
    assert!(resources.contains(&vec![
        "namespaces".into(),
        "ns".into(),
        "v1".into(),
        "false".into(),
        "Namespace".into()
    ]));
    let versions: Vec<String> = k
        .ok(&["api-versions"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        versions,
        vec![
            "admissionregistration.k8s.io/v1",
            "apiextensions.k8s.io/v1",
            "apiregistration.k8s.io/v1",
            "apps/v1",
            "authentication.k8s.io/v1",
            "authorization.k8s.io/v1",
            "autoscaling/v1",
            "autoscaling/v2",
            "batch/v1",
            "certificates.k8s.io/v1",
            "coordination.k8s.io/v1",
            "discovery.k8s.io/v1",
            "events.k8s.io/v1",
            "flowcontrol.apiserver.k8s.io/v1",
            "networking.k8s.io/v1",
            "node.k8s.io/v1",
            "policy/v1",
            "rbac.authorization.k8s.io/v1",
            "resource.k8s.io/v1",
            "scheduling.k8s.io/v1",
            "storage.k8s.io/v1",
            "v1"
        ]
    );

    // Imperative creates send protobuf bodies.
    assert_eq!(
        k.ok(&["create", "namespace", "demo"]).trim(),
        "namespace/demo created"
    );
    let created = k.apply_file("create", MANIFEST);
    assert_eq!(
        created.lines().collect::<Vec<_>>(),
        vec![
            "configmap/app-config created",
            "secret/app-secret created",
            "service/web created",
            "deployment.apps/web created"
        ]
    );

    let cm: serde_json::Value = serde_json::from_str(&k.ok(&[
        "-n",
        "demo",
        "get",
        "configmap",
        "app-config",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(cm["data"]["mode"], "blue");
    let secret: serde_json::Value =
        serde_json::from_str(&k.ok(&["-n", "demo", "get", "secret", "app-secret", "-o", "json"]))
            .unwrap();
    assert_eq!(
        secret["data"]["password"], "aHVudGVyMg==",
        "stringData folded into data"
    );
    let yaml = k.ok(&["-n", "demo", "get", "deploy", "web", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: Deployment")
            && yaml.contains("image: nginx:1.27")
            && yaml.contains("generation: 1"),
        "{yaml}"
    );

    let table = words(&k.ok(&["-n", "demo", "get", "configmaps"]));
    assert_eq!(table[0][0], "NAME");
    assert!(table.iter().any(|row| row[0] == "app-config"), "{table:?}");
    let all = k.ok(&["-n", "demo", "get", "cm,secret,svc,deploy", "-o", "name"]);
    assert_eq!(
        all.lines().collect::<Vec<_>>(),
        vec![
            "configmap/app-config",
            "secret/app-secret",
            "service/web",
            "deployment.apps/web"
        ]
    );

    // `get -w` sees a change made by another command.
    let mut watch = k
        .command(&[
            "-n",
            "demo",
            "get",
            "configmap",
            "app-config",
            "-w",
            "-o",
            "jsonpath={.metadata.name}={.metadata.labels.color}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "app-config=");
    assert_eq!(
        k.ok(&[
            "-n",
            "demo",
            "label",
            "configmap",
            "app-config",
            "color=green"
        ])
        .trim(),
        "configmap/app-config labeled"
    );
    assert_eq!(lines.next().unwrap().unwrap(), "app-config=green");
    let _ = watch.kill();
    let _ = watch.wait();

    assert_eq!(
        k.ok(&[
            "-n",
            "demo",
            "annotate",
            "configmap",
            "app-config",
            "owner=team-a"
        ])
        .trim(),
        "configmap/app-config annotated"
    );
    let cm: serde_json::Value =
        serde_json::from_str(&k.ok(&["-n", "demo", "get", "cm", "app-config", "-o", "json"]))
            .unwrap();
    assert_eq!(cm["metadata"]["labels"]["color"], "green");
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-a");
    let labelled = k.ok(&["-n", "demo", "get", "cm", "-l", "color=green", "-o", "name"]);
    assert_eq!(labelled.trim(), "configmap/app-config");
    assert!(k
        .fails(&[
            "-n",
            "demo",
            "label",
            "configmap",
            "app-config",
            "color=red"
        ])
        .contains("already has a value"));

    let replaced = k.apply_file("replace", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: demo\ndata:\n  mode: green\n");
    assert_eq!(replaced.trim(), "configmap/app-config replaced");
    let mode = k.ok(&[
        "-n",
        "demo",
        "get",
        "cm",
        "app-config",
        "-o",
        "jsonpath={.data.mode}",
    ]);
    assert_eq!(mode, "green");

    assert_eq!(
        k.ok(&["-n", "demo", "delete", "configmap", "app-config"])
            .trim(),
        "configmap \"app-config\" deleted"
    );
    let err = k.fails(&["-n", "demo", "get", "configmap", "app-config"]);
    assert!(
        err.contains("Error from server (NotFound): configmaps \"app-config\" not found"),
        "{err}"
    );

    assert_eq!(
        k.ok(&["delete", "namespace", "demo"]).trim(),
        "namespace \"demo\" deleted"
    );
    let err = k.fails(&["get", "namespace", "demo"]);
    assert!(err.contains("NotFound"), "{err}");
    let left = k.ok(&["get", "deploy", "-A", "-o", "name"]);
    assert!(
        left.trim().is_empty(),
        "namespace contents are gone: {left}"
    );
}

/// kubectl's typed clients send protobuf; the server decodes it and answers
/// in JSON, which those clients accept.
#[test]
fn kubectl_imperative_creates() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    assert_eq!(
        k.ok(&["create", "namespace", "imp"]).trim(),
        "namespace/imp created"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "imp",
            "create",
            "configmap",
            "cfg",
            "--from-literal=a=b"
        ])
        .trim(),
        "configmap/cfg created"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "imp",
            "create",
            "secret",
            "generic",
            "sec",
            "--from-literal=p=q"
        ])
        .trim(),
        "secret/sec created"
    );
    assert_eq!(
        k.ok(&["-n", "imp", "create", "serviceaccount", "robot"])
            .trim(),
        "serviceaccount/robot created"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "imp",
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=3"
        ])
        .trim(),
        "deployment.apps/web created"
    );
    assert_eq!(
        k.ok(&["-n", "imp", "get", "cm", "cfg", "-o", "jsonpath={.data.a}"]),
        "b"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "imp",
            "get",
            "secret",
            "sec",
            "-o",
            "jsonpath={.type} {.data.p}"
        ]),
        "Opaque cQ=="
    );
    assert_eq!(
        k.ok(&["-n", "imp", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.metadata.generation}"]),
        "3 nginx:1.27 1"
    );
    let err = k.fails(&["-n", "imp", "create", "configmap", "cfg"]);
    assert!(err.contains("configmaps \"cfg\" already exists"), "{err}");
    let err = k.fails(&["-n", "missing", "create", "configmap", "x"]);
    assert!(err.contains("namespaces \"missing\" not found"), "{err}");
}
