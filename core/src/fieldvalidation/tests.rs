use super::*;
use crate::schema::builtin;
use serde_json::json;

const DEPLOYMENT_JSON: &str = r#"{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "d", "name": "d2", "unknownMeta": 1, "labels": {"app": "x"}},
  "spec": {
    "unknown1": "v", "unknownDupe": "a", "unknownDupe": "b",
    "paused": true, "paused": false,
    "selector": {"matchLabels": {"app": "x"}},
    "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [
      {"name": "c", "image": "nginx", "unknownNested": 1,
       "imagePullPolicy": "Always", "imagePullPolicy": "Never"}
    ]}}
  }
}"#;

fn deployment() -> crate::schema::Schema<'static> {
    builtin().kind("apps", "v1", "Deployment").unwrap()
}

#[test]
fn json_findings_in_document_order_and_pruned() {
    let (value, issues) = decode_json(DEPLOYMENT_JSON.as_bytes(), Some(deployment())).unwrap();
    let text: Vec<String> = issues.iter().map(Issue::to_string).collect();
    assert_eq!(
        text,
        [
            r#"duplicate field "metadata.name""#,
            r#"unknown field "metadata.unknownMeta""#,
            r#"unknown field "spec.unknown1""#,
            r#"unknown field "spec.unknownDupe""#,
            r#"duplicate field "spec.paused""#,
            r#"unknown field "spec.template.spec.containers[0].unknownNested""#,
            r#"duplicate field "spec.template.spec.containers[0].imagePullPolicy""#,
        ]
    );
    assert_eq!(value["metadata"]["name"], "d2");
    assert_eq!(value["spec"]["paused"], false);
    assert!(value["spec"].get("unknown1").is_none());
    assert!(value["metadata"].get("unknownMeta").is_none());
    assert_eq!(
        value["spec"]["template"]["spec"]["containers"][0],
        json!({"name": "c", "image": "nginx", "imagePullPolicy": "Never"})
    );
    // Labels are a map: any key is known.
    assert_eq!(value["metadata"]["labels"]["app"], "x");
}

#[test]
fn without_schema_only_duplicates() {
    let (_, issues) =
        decode_json(br#"{"a": {"b": 1, "b": 2}, "c": [{"d": 1, "d": 1}]}"#, None).unwrap();
    assert_eq!(
        issues,
        [
            Issue::Duplicate("a.b".into()),
            Issue::Duplicate("c[0].d".into())
        ]
    );
    assert!(decode_json(b"{\"a\": 1} x", None).is_err());
}

#[test]
fn prune_reports_sorted_depth_first() {
    let mut v = json!({"spec": {"unknownDupe": 1, "unknown1": 1, "template": {"spec": {"containers": [{"name": "c", "unknownNested": 1}]}}}});
    let issues = prune(&mut v, deployment());
    let text: Vec<String> = issues.iter().map(Issue::to_string).collect();
    assert_eq!(
        text,
        [
            r#"unknown field "spec.template.spec.containers[0].unknownNested""#,
            r#"unknown field "spec.unknown1""#,
            r#"unknown field "spec.unknownDupe""#,
        ]
    );
    assert_eq!(
        v,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})
    );
}

#[test]
fn yaml_duplicates_carry_lines() {
    let body = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n  name: b\nspec:\n  paused: true\n  template:\n    spec:\n      containers:\n      - name: x\n        image: y\n        image: z\n  paused: false\n";
    let issues = duplicate_keys(body);
    let text: Vec<String> = issues.iter().map(Issue::to_string).collect();
    assert_eq!(
        text,
        [
            r#"line 5: key "name" already set in map"#,
            r#"line 13: key "image" already set in map"#,
            r#"line 14: key "paused" already set in map"#,
        ]
    );
    let msg = strict_message(&[issues[0].clone(), Issue::Unknown("spec.x".into())]);
    assert_eq!(
        msg,
        "strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map, unknown field \"spec.x\""
    );
}

#[test]
fn directives() {
    assert_eq!(
        Directive::parse(None, "CreateOptions").unwrap(),
        Directive::Warn
    );
    assert_eq!(
        Directive::parse(Some("Strict"), "CreateOptions").unwrap(),
        Directive::Strict
    );
    let err = Directive::parse(Some("strict"), "PatchOptions").unwrap_err();
    assert_eq!(err.code, 422);
    let err = judge(
        Directive::Strict,
        vec![
            Issue::Unknown("spec.foo".into()),
            Issue::Duplicate("x".into()),
        ],
        "Deployment",
        "v1",
    )
    .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.foo\", duplicate field \"x\""
    );
    assert!(judge(
        Directive::Ignore,
        vec![Issue::Unknown("a".into())],
        "Pod",
        "v1"
    )
    .unwrap()
    .is_empty());
    assert_eq!(
        judge(
            Directive::Warn,
            vec![Issue::Unknown("a".into())],
            "Pod",
            "v1"
        )
        .unwrap(),
        ["unknown field \"a\""]
    );
}

mod robustness {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn decoders_never_panic(body in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_json(&body, Some(deployment()));
            let _ = duplicate_keys(&String::from_utf8_lossy(&body));
        }

        #[test]
        fn yaml_like_text_never_panics(text in "([a-z]{1,3}: [a-z0-9]{0,3}\n|  |- |\n){0,20}") {
            let _ = duplicate_keys(&text);
        }

        #[test]
        fn last_duplicate_wins(a in 0i64..100, b in 0i64..100) {
            let body = format!("{{\"spec\": {{\"replicas\": {a}, \"replicas\": {b}}}}}");
            let (v, issues) = decode_json(body.as_bytes(), Some(deployment())).unwrap();
            prop_assert_eq!(&v["spec"]["replicas"], &json!(b));
            prop_assert_eq!(issues, vec![Issue::Duplicate("spec.replicas".into())]);
        }
    }
}

fn kind(group: &str, kind: &str) -> crate::schema::Schema<'static> {
    builtin().kind(group, "v1", kind).unwrap()
}

fn mismatch(mut v: serde_json::Value, schema: crate::schema::Schema<'static>) -> TypeMismatch {
    *check_types(&mut v, schema).unwrap_err()
}

#[test]
fn type_mismatches_are_worded_as_gos_decoder_words_them() {
    let cm = mismatch(json!({"data": {"a": 1}}), kind("", "ConfigMap"));
    assert_eq!(
        cm.decode_message(),
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
    assert_eq!(
        cm.apply_message(),
        ".data[\"a\"]: expected string, got number"
    );
    let env = mismatch(
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "N", "value": 3}]}]}}}}),
        deployment(),
    );
    assert_eq!(
        env.decode_message(),
        "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string"
    );
    assert_eq!(
        env.apply_message(),
        ".spec.template.spec.containers[0].env[0].value: expected string, got number"
    );
    let port = mismatch(
        json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}),
        kind("", "Pod"),
    );
    assert_eq!(
        port.decode_message(),
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    );
    let list = mismatch(
        json!({"spec": {"containers": {"name": "c"}}}),
        kind("", "Pod"),
    );
    assert_eq!(
        list.decode_message(),
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
    );
    let item = mismatch(json!({"spec": {"containers": ["c"]}}), kind("", "Pod"));
    assert_eq!(
        item.decode_message(),
        "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type v1.Container"
    );
    let frac = mismatch(json!({"spec": {"replicas": 1.5}}), deployment());
    assert_eq!(
        frac.decode_message(),
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    let big = mismatch(
        json!({"spec": {"replicas": 3_000_000_000i64}}),
        deployment(),
    );
    assert!(
        big.decode_message().contains("number 3000000000"),
        "{big:?}"
    );
    let label = mismatch(
        json!({"metadata": {"labels": {"a": true}}}),
        kind("", "ConfigMap"),
    );
    assert_eq!(
        label.decode_message(),
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"
    );
    let cpu = mismatch(
        json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}}),
        kind("", "Pod"),
    );
    assert_eq!(
        cpu.decode_message(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

#[test]
fn values_that_fit_pass_and_whole_floats_become_integers() {
    let mut pod = json!({"metadata": {"name": "p", "labels": null, "creationTimestamp": null},
        "spec": {"terminationGracePeriodSeconds": 30.0, "containers": [{"name": "c", "image": "i",
            "ports": [{"containerPort": 80.0}], "env": null,
            "resources": {"limits": {"cpu": 1.5, "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1e3", "x": " 2 "}},
            "livenessProbe": {"httpGet": {"port": "http"}}, "readinessProbe": {"tcpSocket": {"port": 8080}}}]},
        "status": {"phase": "Pending"}});
    check_types(&mut pod, kind("", "Pod")).unwrap();
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], json!(30));
    assert!(pod["spec"]["terminationGracePeriodSeconds"].is_i64());
    assert!(pod["spec"]["containers"][0]["ports"][0]["containerPort"].is_i64());
    // Unknown fields are pruning's business, untyped ones anything's.
    let mut d = json!({"spec": {"bogus": {"x": 1}}, "metadata": {"managedFields": [{"fieldsV1": {"f:a": {}}}]}});
    check_types(&mut d, deployment()).unwrap();
}

#[test]
fn quantity_syntax() {
    for ok in [
        "1", "0.5", ".5", "500m", "1Gi", "1e3", "1E-3", "+2", "-1Ki", "12M", "3n",
    ] {
        assert!(types::quantity_ok(ok), "{ok}");
    }
    for bad in ["", "lots", "1.2.3", "1Gb", "Gi", "1e", "1 Gi", "."] {
        assert!(!types::quantity_ok(bad), "{bad}");
    }
}

/// Text and bytes are read by different serde_json readers: both must
/// decode what serde_json decodes, and a body that is not UTF-8 must still
/// be refused with the position serde_json names.
#[test]
fn utf8_and_non_utf8_bodies_decode_as_serde_json_does() {
    let text = r#"{"a": "é\u00e9\n", "b": [1, 2.5, null, true], "c": {"d": "😀"}}"#;
    let (value, issues) = decode_json(text.as_bytes(), None).unwrap();
    assert!(issues.is_empty());
    assert_eq!(
        value,
        serde_json::from_str::<serde_json::Value>(text).unwrap()
    );
    let bad: &[u8] = b"{\"a\": \"\xff\"}";
    let ours = decode_json(bad, None).unwrap_err().to_string();
    let theirs = serde_json::from_slice::<serde_json::Value>(bad)
        .unwrap_err()
        .to_string();
    assert_eq!(ours, theirs);
    assert!(ours.contains("line 1 column"), "{ours}");
}
