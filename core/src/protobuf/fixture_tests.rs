//! Fixture tests: real kubectl 1.32 request bodies next to the JSON form of
//! the same command, and Go-decoded (protobuf, JSON) pairs recorded by
//! `core/tools/protobuf_oracle.py`. Both compare against what Go itself
//! produced, which the hand-built tests in `tests.rs` cannot.

use super::decode_object;
use serde_json::{json, Value};

/// Bodies kubectl 1.32 really sent for `kubectl create ...`, each next to
/// the `--dry-run=client -o json` form of the same command: decoding must
/// give exactly what the JSON client would have sent.
#[test]
fn real_kubectl_requests_decode_to_their_json_form() {
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "namespace",
            include_bytes!("testdata/request_namespace.pb"),
            include_str!("testdata/request_namespace.json"),
        ),
        (
            "configmap",
            include_bytes!("testdata/request_configmap.pb"),
            include_str!("testdata/request_configmap.json"),
        ),
        (
            "secret",
            include_bytes!("testdata/request_secret.pb"),
            include_str!("testdata/request_secret.json"),
        ),
        (
            "deployment",
            include_bytes!("testdata/request_deployment.pb"),
            include_str!("testdata/request_deployment.json"),
        ),
        (
            "serviceaccount",
            include_bytes!("testdata/request_serviceaccount.pb"),
            include_str!("testdata/request_serviceaccount.json"),
        ),
        (
            "service",
            include_bytes!("testdata/request_service.pb"),
            include_str!("testdata/request_service.json"),
        ),
    ];
    for (name, pb, json_text) in cases {
        let want: Value = serde_json::from_str(json_text).unwrap();
        assert_eq!(decode_object(pb).unwrap(), want, "{name}");
    }
    // `kubectl auth can-i get /logs`: Go's JSON keeps the non-omitempty
    // `allowed` and drops every empty string.
    let ssar = decode_object(include_bytes!("testdata/request_ssar.pb")).unwrap();
    assert_eq!(
        ssar,
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"nonResourceAttributes": {"path": "/logs", "verb": "get"}},
            "status": {"allowed": false},
        })
    );
}

/// Every field set to a distinct value, decoded by kubectl's Go types and
/// printed by its JSON encoder (see core/tools/protobuf_oracle.py).
#[test]
fn go_decoded_fixtures_match() {
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "namespace",
            include_bytes!("testdata/namespace.pb"),
            include_str!("testdata/namespace.json"),
        ),
        (
            "configmap",
            include_bytes!("testdata/configmap.pb"),
            include_str!("testdata/configmap.json"),
        ),
        (
            "secret",
            include_bytes!("testdata/secret.pb"),
            include_str!("testdata/secret.json"),
        ),
        (
            "serviceaccount",
            include_bytes!("testdata/serviceaccount.pb"),
            include_str!("testdata/serviceaccount.json"),
        ),
        (
            "service",
            include_bytes!("testdata/service.pb"),
            include_str!("testdata/service.json"),
        ),
        (
            "deployment",
            include_bytes!("testdata/deployment.pb"),
            include_str!("testdata/deployment.json"),
        ),
        (
            "cronjob",
            include_bytes!("testdata/cronjob.pb"),
            include_str!("testdata/cronjob.json"),
        ),
        (
            "clusterrole",
            include_bytes!("testdata/clusterrole.pb"),
            include_str!("testdata/clusterrole.json"),
        ),
        (
            "rolebinding",
            include_bytes!("testdata/rolebinding.pb"),
            include_str!("testdata/rolebinding.json"),
        ),
        (
            "tokenrequest",
            include_bytes!("testdata/tokenrequest.pb"),
            include_str!("testdata/tokenrequest.json"),
        ),
        (
            "selfsubjectreview",
            include_bytes!("testdata/selfsubjectreview.pb"),
            include_str!("testdata/selfsubjectreview.json"),
        ),
    ];
    for (name, pb, json_text) in cases {
        let want: Value = serde_json::from_str(json_text).unwrap();
        let got = decode_object(pb).unwrap();
        if got != want {
            panic!(
                "{name}: first difference at {}",
                first_difference(&got, &want, String::new())
            );
        }
    }
    // `kubectl events` prints items with their own apiVersion/kind and a
    // list header of its own making, so only the item bodies compare.
    let got = decode_object(include_bytes!("testdata/eventlist.pb")).unwrap();
    let mut want: Value = serde_json::from_str(include_str!("testdata/eventlist.json")).unwrap();
    for item in want["items"].as_array_mut().unwrap() {
        let item = item.as_object_mut().unwrap();
        item.remove("apiVersion");
        item.remove("kind");
    }
    assert_eq!(got["items"], want["items"]);
}

/// A JSON pointer to where two values first differ, for readable failures.
fn first_difference(a: &Value, b: &Value, at: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                if x.get(k) != y.get(k) {
                    let (l, r) = (
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    );
                    return first_difference(l, r, format!("{at}/{k}"));
                }
            }
            at
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            let i = (0..x.len()).find(|&i| x[i] != y[i]).unwrap_or(0);
            first_difference(&x[i], &y[i], format!("{at}/{i}"))
        }
        _ => format!("{at}: got {a}, want {b}"),
    }
}
