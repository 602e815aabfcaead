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
