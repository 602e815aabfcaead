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
