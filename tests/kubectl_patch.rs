//! kubectl 1.32 and the patch surface: client-side `apply -f` twice (a
//! three-way strategic merge from last-applied-configuration), server-side
//! apply with conflicts and `--force-conflicts`, `edit` through an editor
//! script, `patch` of every `--type`, `explain`, and server-side field
//! validation of `create`.

mod common;
use common::kubectl::Kubectl;
use common::Server;
use serde_json::json;

fn deployment(image: &str, env: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: {image}\n        env:\n{env}        ports:\n        - containerPort: 80\n      - name: sidecar\n        image: busybox:1.36\n"
    )
}

const TWO_VARS: &str =
    "        - name: MODE\n          value: blue\n        - name: LEVEL\n          value: \"3\"\n";
const ONE_VAR: &str = "        - name: MODE\n          value: blue\n";

/// `kubectl patch deployment web --type <ty> -p <body>`.
fn patch_web(k: &Kubectl, ty: &str, body: &str) -> String {
    k.ok(&["patch", "deployment", "web", "--type", ty, "-p", body])
}

/// The managers recorded on an object fetched with --show-managed-fields.
fn managers(obj: &serde_json::Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn client_side_apply_twice_changes_image_and_removes_env() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    let first = k.file("first.yaml", &deployment("nginx:1.25", TWO_VARS, 2));
    assert!(k
        .ok(&["apply", "-f", &first])
        .contains("deployment.apps/web created"));
    let second = k.file("second.yaml", &deployment("nginx:1.26", ONE_VAR, 2));
    assert!(k
        .ok(&["apply", "-f", &second])
        .contains("deployment.apps/web configured"));
    let d = k.get_json(&["deployment", "web", "--show-managed-fields"]);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 2);
    assert_eq!(containers[0]["name"], "web");
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "MODE", "value": "blue"}])
    );
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    assert_eq!(containers[1]["image"], "busybox:1.36");
    assert_eq!(d["metadata"]["generation"], 2);
    let last: serde_json::Value = serde_json::from_str(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        last["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    let recorded = managers(&d);
    assert!(
        recorded.contains(&("kubectl-client-side-apply".into(), "Update".into())),
        "{recorded:?}"
    );
    // A third apply of the same file changes nothing.
    assert!(k
        .ok(&["apply", "-f", &second])
        .contains("deployment.apps/web unchanged"));
}

#[test]
fn server_side_apply_conflicts_and_force() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    let file = k.file("d.yaml", &deployment("nginx:1.25", ONE_VAR, 2));
    assert!(k
        .ok(&["apply", "--server-side", "-f", &file])
        .contains("serverside-applied"));
    patch_web(&k, "merge", r#"{"spec":{"replicas":4}}"#);
    let changed = k.file("d2.yaml", &deployment("nginx:1.25", ONE_VAR, 3));
    let err = k.fails(&["apply", "--server-side", "-f", &changed]);
    assert!(
        err.contains(r#"conflict with "kubectl-patch" using apps/v1: .spec.replicas"#),
        "{err}"
    );
    assert_eq!(k.get_json(&["deployment", "web"])["spec"]["replicas"], 4);
    k.ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        &changed,
    ]);
    let d = k.get_json(&["deployment", "web", "--show-managed-fields"]);
    assert_eq!(d["spec"]["replicas"], 3);
    let kubectl = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "kubectl" && e["operation"] == "Apply")
        .expect("kubectl's apply entry");
    assert!(kubectl["fieldsV1"]["f:spec"].get("f:replicas").is_some());
}

#[test]
fn edit_with_an_editor_script() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    let file = k.file("d.yaml", &deployment("nginx:1.25", ONE_VAR, 1));
    k.ok(&["apply", "-f", &file]);
    let out = k.ok_with(
        &["edit", "deployment", "web"],
        &[(
            "KUBE_EDITOR",
            "sed -i -e s/nginx:1.25/nginx:1.27/ -e s/value:\\ blue/value:\\ green/",
        )],
    );
    assert!(out.contains("deployment.apps/web edited"), "{out}");
    let d = k.get_json(&["deployment", "web", "--show-managed-fields"]);
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.27");
    assert_eq!(c["env"], json!([{"name": "MODE", "value": "green"}]));
    assert!(managers(&d).contains(&("kubectl-edit".into(), "Update".into())));
}

#[test]
fn patch_of_every_type() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    let file = k.file("d.yaml", &deployment("nginx:1.25", TWO_VARS, 1));
    k.ok(&["apply", "-f", &file]);
    // strategic (the default): containers merge by name.
    patch_web(
        &k,
        "strategic",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}"#,
    );
    let d = k.get_json(&["deployment", "web"]);
    let containers = &d["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().unwrap().len(), 2, "sidecar kept");
    assert_eq!(containers[0]["image"], "nginx:1.28");
    assert_eq!(containers[0]["env"].as_array().unwrap().len(), 2);
    // merge: replaces the labels map entries given, adds replicas.
    patch_web(
        &k,
        "merge",
        r#"{"metadata":{"labels":{"tier":"front"}},"spec":{"replicas":2}}"#,
    );
    let d = k.get_json(&["deployment", "web"]);
    assert_eq!(d["metadata"]["labels"]["tier"], "front");
    assert_eq!(d["spec"]["replicas"], 2);
    // json: test and replace.
    patch_web(
        &k,
        "json",
        r#"[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":5}]"#,
    );
    assert_eq!(k.get_json(&["deployment", "web"])["spec"]["replicas"], 5);
    let err = k.fails(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":9}]"#,
    ]);
    assert!(
        err.contains("The request is invalid: the server rejected our request due to an error in our request"),
        "kube's words for a failed test: {err}"
    );
}

#[test]
fn explain_reads_the_openapi_schemas() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "pods.spec.containers"]);
    assert!(out.contains("KIND:       Pod"), "{out}");
    assert!(out.contains("FIELD: containers <[]Container>"), "{out}");
    assert!(out.contains("image\t<string>"), "{out}");
    let out = k.ok(&["explain", "deployments.spec.strategy"]);
    assert!(out.contains("GROUP:      apps"), "{out}");
    assert!(
        out.contains("rollingUpdate\t<RollingUpdateDeployment>"),
        "{out}"
    );
    // The legacy explain reads the protobuf form of /openapi/v2.
    let out = k.ok(&[
        "explain",
        "pods.spec.containers",
        "--output=plaintext-openapiv2",
    ]);
    assert!(out.contains("RESOURCE: containers <[]Object>"), "{out}");
    assert!(out.contains("image\t<string>"), "{out}");
}

#[test]
fn create_with_unknown_field_is_refused_by_server_validation() {
    let s = Server::start(1);
    let k = Kubectl::new(&s);
    let file = k.file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: b\nbogus: true\n",
    );
    let err = k.fails(&["create", "-f", &file]);
    assert!(
        err.contains(r#"strict decoding error: unknown field "bogus""#),
        "{err}"
    );
    let out = k.ok(&["create", "--validate=warn", "-f", &file]);
    assert!(out.contains("configmap/bad created"), "{out}");
}

/// The path most users take: objects made with client-side `apply -f`,
/// later applied `--server-side`. kubectl then hands the client-side
/// manager's fields to its own Apply entry; nothing the configuration
/// still sets may be lost on the way (labels, selector-matching template
/// labels), and what the configuration drops afterwards goes.
#[test]
fn server_side_apply_over_client_side_apply_keeps_what_is_still_applied() {
    let s = Server::start(2);
    let k = Kubectl::new(&s);
    let labelled = |image: &str, env: &str| {
        deployment(image, env, 2).replacen(
            "  namespace: default\n",
            "  namespace: default\n  labels:\n    app: web\n    tier: front\n",
            1,
        )
    };
    k.ok(&[
        "apply",
        "-f",
        &k.file("a.yaml", &labelled("nginx:1.25", TWO_VARS)),
    ]);
    k.ok(&[
        "apply",
        "-f",
        &k.file("b.yaml", &labelled("nginx:1.26", ONE_VAR)),
    ]);
    let ssa = k.file("c.yaml", &labelled("nginx:1.25", TWO_VARS));
    let err = k.fails(&["apply", "--server-side", "-f", &ssa]);
    assert!(
        err.contains(r#"conflict with "kubectl-client-side-apply" using apps/v1: .spec.template.spec.containers[name="web"].image"#),
        "{err}"
    );
    k.ok(&["apply", "--server-side", "--force-conflicts", "-f", &ssa]);
    let d = k.get_json(&["deployment", "web", "--show-managed-fields"]);
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "web", "tier": "front"})
    );
    assert_eq!(
        d["spec"]["template"]["metadata"]["labels"],
        json!({"app": "web"})
    );
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.25");
    assert_eq!(
        c["env"],
        json!([{"name": "MODE", "value": "blue"}, {"name": "LEVEL", "value": "3"}])
    );
    let recorded = managers(&d);
    assert!(
        recorded.contains(&("kubectl".into(), "Apply".into())),
        "{recorded:?}"
    );
    assert!(
        !recorded
            .iter()
            .any(|(m, _)| m == "kubectl-client-side-apply"),
        "kubectl moved the client-side manager's fields to its Apply entry: {recorded:?}"
    );
    // Dropping a label and an env var from the configuration removes them.
    let fewer = k.file(
        "d.yaml",
        &labelled("nginx:1.25", ONE_VAR).replace("    tier: front\n", ""),
    );
    k.ok(&["apply", "--server-side", "-f", &fewer]);
    let d = k.get_json(&["deployment", "web"]);
    assert_eq!(d["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "MODE", "value": "blue"}])
    );
}
