//! Tests: hand-built bodies (encoded with the `k8s-pb` prost types), error
//! paths, and garbage that must fail without panicking. Fixtures made by Go
//! itself are checked in `fixture_tests.rs`.

use super::schema::{self, Card, Ty};
use super::{decode_object, is_protobuf, MAGIC};
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;
use prost::Message;
use serde_json::json;
use std::collections::BTreeMap;

/// Wraps an encoded object the way client-go's protobuf serializer does.
fn envelope(api_version: &str, kind: &str, obj: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(obj.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [MAGIC, &unknown.encode_to_vec()].concat()
}

fn map<V: Clone>(pairs: &[(&str, V)]) -> BTreeMap<String, V> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn meta_named(name: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    })
}

fn quantity(s: &str) -> Quantity {
    Quantity {
        string: Some(s.into()),
    }
}

#[test]
fn namespace() {
    let ns = core::Namespace {
        metadata: meta_named("demo"),
        ..Default::default()
    };
    let got = decode_object(&envelope("v1", "Namespace", &ns)).unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})
    );
    // apiVersion and kind lead, as in kube's own JSON.
    let keys: Vec<_> = got.as_object().unwrap().keys().take(2).cloned().collect();
    assert_eq!(keys, ["apiVersion", "kind"]);
}

#[test]
fn configmap_data_and_binary_data() {
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("cm".into()),
            namespace: Some("default".into()),
            labels: map(&[("app", "web".to_string()), ("empty", String::new())]),
            ..Default::default()
        }),
        data: map(&[("a", "1".to_string()), ("b", String::new())]),
        binary_data: map(&[("bin", vec![0xff, 0xfe, 0x00])]),
        immutable: Some(false),
    };
    let got = decode_object(&envelope("v1", "ConfigMap", &cm)).unwrap();
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web", "empty": ""}},
            "data": {"a": "1", "b": ""},
            "binaryData": {"bin": "//4A"},
            // immutable is a *bool in Go: an explicit false is kept.
            "immutable": false,
        })
    );
}

#[test]
fn secret_bytes_and_omitted_empty_type() {
    let secret = core::Secret {
        metadata: meta_named("s"),
        data: map(&[("pass", b"s3cr3t".to_vec())]),
        string_data: map(&[("plain", "text".to_string())]),
        // Go always writes the non-pointer `type`; an empty one is what a
        // JSON client leaves out, so server-side defaulting still applies.
        r#type: Some(String::new()),
        immutable: None,
    };
    let got = decode_object(&envelope("v1", "Secret", &secret)).unwrap();
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"pass": "czNjcjN0"}, "stringData": {"plain": "text"},
        })
    );
}

#[test]
fn deployment_with_pod_template() {
    let labels = map(&[("app", "web".to_string())]);
    let container = core::Container {
        name: Some("nginx".into()),
        image: Some("nginx:1.27".into()),
        args: vec!["-g".into(), "daemon off;".into()],
        ports: vec![core::ContainerPort {
            name: Some("http".into()),
            container_port: Some(80),
            protocol: Some("TCP".into()),
            ..Default::default()
        }],
        resources: Some(core::ResourceRequirements {
            limits: map(&[("cpu", quantity("500m")), ("memory", quantity("128Mi"))]),
            requests: map(&[("cpu", quantity("250m"))]),
            ..Default::default()
        }),
        readiness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                http_get: Some(core::HttpGetAction {
                    path: Some("/healthz".into()),
                    port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: None,
                        str_val: Some("http".into()),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            period_seconds: Some(5),
            ..Default::default()
        }),
        ..Default::default()
    };
    let deployment = apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            labels: labels.clone(),
            creation_timestamp: Some(meta::Time {
                seconds: Some(1_700_000_000),
                nanos: Some(0),
            }),
            owner_references: vec![meta::OwnerReference {
                api_version: Some("example.com/v1".into()),
                kind: Some("App".into()),
                name: Some("web".into()),
                uid: Some("0b0e8a8e-2b8f-4f0a-9d8e-3f6e1c2b4a5d".into()),
                controller: Some(true),
                block_owner_deletion: Some(false),
            }],
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: labels.clone(),
                match_expressions: vec![],
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: labels.clone(),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![container],
                    restart_policy: Some(String::new()),
                    termination_grace_period_seconds: Some(0),
                    host_network: Some(false),
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(1),
                        str_val: None,
                    }),
                    max_surge: Some(IntOrString {
                        r#type: Some(1),
                        int_val: None,
                        str_val: Some("25%".into()),
                    }),
                }),
            }),
            ..Default::default()
        }),
        status: Some(apps::DeploymentStatus::default()),
    };
    let got = decode_object(&envelope("apps/v1", "Deployment", &deployment)).unwrap();
    let want = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "prod", "labels": {"app": "web"},
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "ownerReferences": [{
                "apiVersion": "example.com/v1", "kind": "App", "name": "web",
                "uid": "0b0e8a8e-2b8f-4f0a-9d8e-3f6e1c2b4a5d",
                "controller": true, "blockOwnerDeletion": false,
            }],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "nginx", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
                        "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                        "resources": {
                            "limits": {"cpu": "500m", "memory": "128Mi"},
                            "requests": {"cpu": "250m"},
                        },
                        // ProbeHandler is inlined into Probe, as in Go's JSON.
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                    }],
                    "terminationGracePeriodSeconds": 0,
                },
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}},
        },
        "status": {},
    });
    assert_eq!(got, want);
}

#[test]
fn service_target_ports() {
    let port = |name: &str, target: IntOrString| core::ServicePort {
        name: Some(name.into()),
        port: Some(80),
        target_port: Some(target),
        ..Default::default()
    };
    let svc = core::Service {
        metadata: meta_named("svc"),
        spec: Some(core::ServiceSpec {
            ports: vec![
                port(
                    "a",
                    IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: None,
                    },
                ),
                port(
                    "b",
                    IntOrString {
                        r#type: Some(1),
                        int_val: None,
                        str_val: Some("web".into()),
                    },
                ),
            ],
            cluster_ips: vec!["10.0.0.1".into()],
            ..Default::default()
        }),
        status: None,
    };
    let got = decode_object(&envelope("v1", "Service", &svc)).unwrap();
    assert_eq!(
        got["spec"],
        json!({
            "ports": [
                {"name": "a", "port": 80, "targetPort": 8080},
                {"name": "b", "port": 80, "targetPort": "web"},
            ],
            "clusterIPs": ["10.0.0.1"],
        })
    );
}

#[test]
fn micro_time_and_delete_options_in_any_group() {
    let lease = k8s_pb::api::coordination::v1::Lease {
        metadata: meta_named("l"),
        spec: Some(k8s_pb::api::coordination::v1::LeaseSpec {
            holder_identity: Some(String::new()),
            renew_time: Some(meta::MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(5_000),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let got = decode_object(&envelope("coordination.k8s.io/v1", "Lease", &lease)).unwrap();
    assert_eq!(
        got["spec"],
        json!({"holderIdentity": "", "renewTime": "2023-11-14T22:13:20.000005Z", "leaseTransitions": 0})
    );
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let got = decode_object(&envelope("apps/v1", "DeleteOptions", &opts)).unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "propagationPolicy": "Foreground"})
    );
    // An envelope without TypeMeta takes the endpoint's default kind.
    let bare = envelope("", "", &opts);
    assert!(decode_object(&bare).is_err());
    let got = super::decode_object_or(&bare, "v1", "DeleteOptions").unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "propagationPolicy": "Foreground"})
    );
    let named = envelope("meta.k8s.io/v1", "DeleteOptions", &opts);
    assert_eq!(
        super::decode_object_or(&named, "v1", "DeleteOptions").unwrap()["apiVersion"],
        "meta.k8s.io/v1"
    );
}

#[test]
fn managed_fields_carry_raw_json() {
    let ns = core::Namespace {
        metadata: Some(meta::ObjectMeta {
            name: Some("demo".into()),
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: Some("kubectl-create".into()),
                operation: Some("Update".into()),
                api_version: Some("v1".into()),
                time: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: None,
                }),
                fields_type: Some("FieldsV1".into()),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:metadata":{"f:labels":{".":{}}}}"#.to_vec()),
                }),
                subresource: Some(String::new()),
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let got = decode_object(&envelope("v1", "Namespace", &ns)).unwrap();
    assert_eq!(
        got["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
            "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}},
        }])
    );
}

#[test]
fn subject_access_review_extra_is_a_string_array() {
    use k8s_pb::api::authorization::v1 as authz;
    let sar = authz::SubjectAccessReview {
        metadata: None,
        spec: Some(authz::SubjectAccessReviewSpec {
            user: Some("alice".into()),
            extra: map(&[(
                "scopes",
                authz::ExtraValue {
                    items: vec!["a".into(), "b".into()],
                },
            )]),
            ..Default::default()
        }),
        status: None,
    };
    let got = decode_object(&envelope(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &sar,
    ))
    .unwrap();
    assert_eq!(
        got["spec"],
        json!({"user": "alice", "extra": {"scopes": ["a", "b"]}})
    );
}

#[test]
fn unknown_fields_are_skipped() {
    let ns = core::Namespace {
        metadata: meta_named("demo"),
        ..Default::default()
    };
    let mut raw = ns.encode_to_vec();
    // field 99 varint, field 98 fixed64, field 97 fixed32, field 96 group.
    raw.extend([
        0x98, 0x06, 0x01, 0x91, 0x06, 1, 2, 3, 4, 5, 6, 7, 8, 0x8d, 0x06, 1, 2, 3, 4,
    ]);
    raw.extend([0x83, 0x06, 0x08, 0x01, 0x84, 0x06]);
    let body = [MAGIC, &wrap_raw("v1", "Namespace", &raw)].concat();
    assert_eq!(
        decode_object(&body).unwrap()["metadata"],
        json!({"name": "demo"})
    );
}

/// An Unknown envelope around already-encoded bytes.
fn wrap_raw(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw.to_vec()),
        content_encoding: None,
        content_type: None,
    }
    .encode_to_vec()
}

#[test]
fn envelope_errors() {
    assert_eq!(decode_object(b"").unwrap_err(), "empty body");
    assert_eq!(decode_object(MAGIC).unwrap_err(), "empty body");
    assert!(decode_object(b"{\"kind\":\"Namespace\"}")
        .unwrap_err()
        .contains("protobuf"));
    let no_kind = [MAGIC, &wrap_raw("v1", "", &[])].concat();
    assert!(decode_object(&no_kind).unwrap_err().contains("Kind"));
    let no_version = [MAGIC, &wrap_raw("", "Namespace", &[])].concat();
    assert!(decode_object(&no_version)
        .unwrap_err()
        .contains("apiVersion"));
    let unknown_kind = [MAGIC, &wrap_raw("example.com/v1", "Widget", &[])].concat();
    assert!(decode_object(&unknown_kind).unwrap_err().contains("Widget"));
    // metadata (field 1) sent as a varint instead of a message.
    let wrong_type = [MAGIC, &wrap_raw("v1", "Namespace", &[0x08, 0x01])].concat();
    assert!(decode_object(&wrong_type).unwrap_err().contains("metadata"));
    let truncated = [MAGIC, &wrap_raw("v1", "Namespace", &[0x0a, 0x05, 0x0a])].concat();
    assert!(decode_object(&truncated).is_err());
}

#[test]
fn deeply_nested_groups_are_refused() {
    let mut raw = [0xa3u8, 0x06].repeat(10_000); // start group 100, over and over
    raw.extend([0xa4, 0x06].repeat(10_000));
    let body = [MAGIC, &wrap_raw("v1", "Namespace", &raw)].concat();
    assert!(decode_object(&body).unwrap_err().contains("deeply"));
}

#[test]
fn content_type_check() {
    assert!(is_protobuf("application/vnd.kubernetes.protobuf"));
    assert!(is_protobuf(
        "application/vnd.kubernetes.protobuf; charset=binary"
    ));
    assert!(is_protobuf(
        "Application/Vnd.Kubernetes.Protobuf;stream=watch"
    ));
    assert!(!is_protobuf("application/json"));
    assert!(!is_protobuf("application/vnd.kubernetes.protobuf+json"));
    assert!(!is_protobuf(""));
}

/// The generated table is internally consistent: message references are in
/// range, tags sorted and unique, inline fields are messages, roots unique.
#[test]
fn schema_table_is_consistent() {
    let messages = schema::all_messages();
    for m in messages {
        assert!(
            m.fields.windows(2).all(|w| w[0].tag < w[1].tag),
            "{} tags",
            m.name
        );
        for f in m.fields {
            if let Ty::Msg(i) = f.ty {
                assert!(usize::from(i) < messages.len(), "{}.{}", m.name, f.json);
            }
            if f.card == Card::Inline {
                assert!(matches!(f.ty, Ty::Msg(_)), "{}.{}", m.name, f.json);
            }
        }
    }
    let roots = schema::all_roots();
    for (i, r) in roots.iter().enumerate() {
        assert!(usize::from(r.msg) < messages.len());
        assert!(roots[i + 1..]
            .iter()
            .all(|o| (o.api_version, o.kind) != (r.api_version, r.kind)));
    }
}

fn valid_bodies() -> Vec<Vec<u8>> {
    vec![
        include_bytes!("testdata/request_deployment.pb").to_vec(),
        include_bytes!("testdata/service.pb").to_vec(),
        include_bytes!("testdata/eventlist.pb").to_vec(),
    ]
}

#[test]
fn every_truncation_fails_cleanly() {
    for body in valid_bodies() {
        for len in 0..body.len() {
            let _ = decode_object(&body[..len]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_object(&bytes);
        let _ = decode_object(&[MAGIC, &bytes].concat());
    }

    #[test]
    fn random_objects_never_panic(kind in 0usize..4, raw in proptest::collection::vec(any::<u8>(), 0..512)) {
        let (api_version, kind) = [("v1", "Pod"), ("apps/v1", "Deployment"), ("v1", "Node"), ("v1", "Event")][kind];
        let _ = decode_object(&[MAGIC, &wrap_raw(api_version, kind, &raw)].concat());
    }

    #[test]
    fn corrupted_bodies_never_panic(which in 0usize..3, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut body = valid_bodies().swap_remove(which);
        let i = at.index(body.len());
        body[i] = byte;
        let _ = decode_object(&body);
    }
}

/// client-go writes every non-pointer string, so a policy's validation
/// arrives with `message: ""`, which Go's JSON would omit (and kube's
/// validation refuses as "must be non-empty if specified"); the nested
/// inline rule of `resourceRules` arrives as its own fields.
#[test]
fn admission_policy_validations_drop_go_zero_strings() {
    use k8s_pb::api::admissionregistration::v1 as ar;
    let vap = ar::ValidatingAdmissionPolicy {
        metadata: meta_named("p"),
        spec: Some(ar::ValidatingAdmissionPolicySpec {
            match_constraints: Some(ar::MatchResources {
                resource_rules: vec![ar::NamedRuleWithOperations {
                    rule_with_operations: Some(ar::RuleWithOperations {
                        operations: vec!["CREATE".into()],
                        rule: Some(ar::Rule {
                            api_groups: vec!["apps".into()],
                            resources: vec!["deployments".into()],
                            ..Default::default()
                        }),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            validations: vec![ar::Validation {
                expression: Some("true".into()),
                message: Some(String::new()),
                message_expression: Some(String::new()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let body = envelope(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        &vap,
    );
    let v = decode_object(&body).unwrap();
    assert_eq!(
        v["spec"]["validations"],
        serde_json::json!([{"expression": "true"}])
    );
    assert_eq!(
        v["spec"]["matchConstraints"]["resourceRules"],
        serde_json::json!([{"operations": ["CREATE"], "apiGroups": ["apps"],
            "resources": ["deployments"]}])
    );
}
