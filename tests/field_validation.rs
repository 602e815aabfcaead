//! fieldValidation=Ignore|Warn|Strict on create, update and patch, for
//! unknown and duplicate fields, in JSON and YAML bodies.

mod common;

use common::Server;
use serde_json::json;

const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";

fn body(name: &str) -> String {
    format!(
        r#"{{"apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {{"name": "{name}", "unknownMeta": 1}},
  "spec": {{"unknown1": "v", "paused": true, "paused": false,
    "selector": {{"matchLabels": {{"app": "x"}}}},
    "template": {{"metadata": {{"labels": {{"app": "x"}}}}, "spec": {{"containers": [
      {{"name": "c", "image": "nginx", "unknownNested": 1, "imagePullPolicy": "Always", "imagePullPolicy": "Never"}}]}}}}}}}}"#
    )
}

const EXPECTED: [&str; 5] = [
    r#"unknown field "metadata.unknownMeta""#,
    r#"unknown field "spec.unknown1""#,
    r#"duplicate field "spec.paused""#,
    r#"unknown field "spec.template.spec.containers[0].unknownNested""#,
    r#"duplicate field "spec.template.spec.containers[0].imagePullPolicy""#,
];

#[test]
fn create_json_per_mode() {
    let s = Server::start(1);
    // Strict: 400, nothing stored.
    let (code, _, out) = s.send_warned(
        "POST",
        &format!("{DEPLOY}?fieldValidation=Strict"),
        "application/json",
        body("strict").as_bytes(),
    );
    assert_eq!(code, 400, "{out}");
    assert_eq!(out["reason"], "BadRequest");
    assert_eq!(
        out["message"],
        format!("Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: {}", EXPECTED.join(", "))
    );
    assert_eq!(s.get(&format!("{DEPLOY}/strict")).0, 404);
    // Warn (and the default): warnings, object stored without the unknown fields.
    for (name, query) in [("warn", "?fieldValidation=Warn"), ("default", "")] {
        let (code, warnings, out) = s.send_warned(
            "POST",
            &format!("{DEPLOY}{query}"),
            "application/json",
            body(name).as_bytes(),
        );
        assert_eq!(code, 201, "{out}");
        assert_eq!(warnings, EXPECTED);
        assert!(out["spec"].get("unknown1").is_none());
        assert_eq!(out["spec"]["paused"], false);
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Never"
        );
        let (_, stored) = s.get(&format!("{DEPLOY}/{name}"));
        assert!(stored["metadata"].get("unknownMeta").is_none());
    }
    // Ignore: silent, still pruned.
    let (code, warnings, out) = s.send_warned(
        "POST",
        &format!("{DEPLOY}?fieldValidation=Ignore"),
        "application/json",
        body("ignore").as_bytes(),
    );
    assert_eq!(code, 201);
    assert!(warnings.is_empty());
    assert!(out["spec"]["template"]["spec"]["containers"][0]
        .get("unknownNested")
        .is_none());
    // A bad directive.
    let (code, _, out) = s.send_warned(
        "POST",
        &format!("{DEPLOY}?fieldValidation=Loud"),
        "application/json",
        body("bad").as_bytes(),
    );
    assert_eq!(code, 422, "{out}");
}

#[test]
fn create_yaml_reports_duplicates_with_lines() {
    let s = Server::start(1);
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  name: y\n  bogus: 1\ndata:\n  a: b\n";
    let (code, _, out) = s.send_warned(
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        "application/yaml",
        yaml.as_bytes(),
    );
    assert_eq!(code, 400, "{out}");
    assert_eq!(
        out["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map, unknown field \"metadata.bogus\""
    );
    let (code, warnings, _) = s.send_warned(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
        yaml.as_bytes(),
    );
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        [
            r#"line 5: key "name" already set in map"#,
            r#"unknown field "metadata.bogus""#
        ]
    );
}

#[test]
fn update_and_patches_per_mode() {
    let s = Server::start(2);
    let (code, _) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "u"}, "data": {"a": "1"}}),
    );
    assert_eq!(code, 201);
    let path = "/api/v1/namespaces/default/configmaps/u";
    let put = br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}, "data": {"a": "2"}, "extra": true}"#;
    let (code, _, out) = s.send_warned(
        "PUT",
        &format!("{path}?fieldValidation=Strict"),
        "application/json",
        put,
    );
    assert_eq!(code, 400, "{out}");
    let (code, warnings, out) = s.send_warned("PUT", path, "application/json", put);
    assert_eq!(code, 200, "{out}");
    assert_eq!(warnings, [r#"unknown field "extra""#]);
    assert!(out.get("extra").is_none());

    for ct in [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let p = br#"{"data": {"b": "1", "b": "2"}, "bogus": {"x": 1}}"#;
        let (code, _, out) =
            s.send_warned("PATCH", &format!("{path}?fieldValidation=Strict"), ct, p);
        assert_eq!(code, 422, "{ct}: {out}");
        let msg = out["message"].as_str().unwrap();
        assert!(
            msg.ends_with(
                r#"strict decoding error: duplicate field "data.b", unknown field "bogus""#
            ),
            "{msg}"
        );
        let (code, warnings, out) = s.send_warned("PATCH", path, ct, p);
        assert_eq!(code, 200, "{out}");
        assert_eq!(
            warnings,
            [r#"duplicate field "data.b""#, r#"unknown field "bogus""#]
        );
        assert_eq!(out["data"]["b"], "2");
        assert!(out.get("bogus").is_none());
    }
    let jp = br#"[{"op": "add", "path": "/zzz", "value": 1, "foo": 2}]"#;
    let (code, warnings, out) = s.send_warned("PATCH", path, "application/json-patch+json", jp);
    assert_eq!(code, 200, "{out}");
    assert_eq!(
        warnings,
        [
            r#"json patch unknown field "[0].foo""#,
            r#"unknown field "zzz""#
        ]
    );
    let (code, warnings, _) = s.send_warned(
        "PATCH",
        &format!("{path}?fieldValidation=Ignore"),
        "application/json-patch+json",
        jp,
    );
    assert_eq!(code, 200);
    assert!(warnings.is_empty());
}

/// Values of the wrong type are refused on every way in, whatever the
/// directive, as kube's typed decoding refuses them: create and update
/// 400 "cannot be handled as", patches 422 on `patch`, apply kube's
/// typed-conversion error. Nothing is stored, so typed clients reading
/// the object later never choke on it.
#[test]
fn values_of_the_wrong_type_are_refused_everywhere() {
    let s = Server::start(1);
    const CMS: &str = "/api/v1/namespaces/default/configmaps";
    for query in ["", "?fieldValidation=Ignore"] {
        let (code, out) = s.post(
            &format!("{CMS}{query}"),
            &json!({"metadata": {"name": "bad"}, "data": {"a": 1}}),
        );
        assert_eq!(code, 400, "{out}");
        assert_eq!(out["reason"], "BadRequest");
        assert_eq!(
            out["message"],
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        );
    }
    // YAML: the number a YAML writer gets by not quoting.
    let (code, out) = s.send(
        "POST",
        "/api/v1/nodes",
        "application/yaml",
        b"apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  nodeInfo: {kernelVersion: 6.1}\n",
    );
    assert_eq!(code, 400, "{out}");
    assert_eq!(out["message"], "Node in version \"v1\" cannot be handled as a Node: json: cannot unmarshal number into Go struct field NodeSystemInfo.status.nodeInfo.kernelVersion of type string");
    assert_eq!(s.get("/api/v1/nodes/n1").0, 404);

    let (code, cm) = s.post(
        CMS,
        &json!({"metadata": {"name": "good"}, "data": {"a": "1"}}),
    );
    assert_eq!(code, 201, "{cm}");
    let mut put = cm.clone();
    put["data"]["a"] = json!(["x"]);
    let (code, out) = s.put(&format!("{CMS}/good"), &put);
    assert_eq!(code, 400, "{out}");
    for ty in [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let (code, out) = s.patch(&format!("{CMS}/good"), ty, &json!({"data": {"a": 2}}));
        assert_eq!(code, 422, "{ty}: {out}");
        assert_eq!(out["reason"], "Invalid");
        assert_eq!(out["details"]["causes"][0]["field"], "patch");
        assert!(
            out["details"]["causes"][0]["message"]
                .as_str()
                .unwrap()
                .ends_with(
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            ),
            "{out}"
        );
    }
    let (code, out) = s.patch(
        &format!("{CMS}/good"),
        "application/json-patch+json",
        &json!([{"op": "add", "path": "/data/b", "value": true}]),
    );
    assert_eq!(code, 422, "{out}");
    let (code, out) = s.apply_yaml(
        &format!("{DEPLOY}/applied?fieldManager=m"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: applied}\nspec: {replicas: two}\n",
    );
    assert_eq!(code, 500, "{out}");
    assert_eq!(out["message"], "failed to create typed patch object (default/applied; apps/v1, Kind=Deployment): .spec.replicas: expected numeric (int or float), got string");
    assert_eq!(s.get(&format!("{DEPLOY}/applied")).0, 404);
    let (_, stored) = s.get(&format!("{CMS}/good"));
    assert_eq!(stored["data"], json!({"a": "1"}));
    // A whole number written as a float is stored as an integer.
    let (code, d) = s.send(
        "POST",
        DEPLOY,
        "application/yaml",
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: floaty}\nspec:\n  replicas: 3.0\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n",
    );
    assert_eq!(code, 201, "{d}");
    assert!(d["spec"]["replicas"].is_i64(), "{d}");
}
