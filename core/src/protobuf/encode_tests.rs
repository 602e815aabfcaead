//! The encoder against Go: real kubectl bodies re-encode to the very bytes
//! Go wrote, every decodable fixture survives a round trip, and an
//! independent protobuf implementation of kube's types (`k8s-pb`, prost)
//! reads what the encoder writes.

use super::{decode_object, encode_object, list_frame, watch_frame, ItemHead};
use prost::Message as _;
use serde_json::{json, Value};

/// Bodies Go's generated marshallers wrote (kubectl 1.32).
const GO_WRITTEN: &[(&str, &[u8])] = &[
    ("namespace", include_bytes!("testdata/request_namespace.pb")),
    ("configmap", include_bytes!("testdata/request_configmap.pb")),
    ("secret", include_bytes!("testdata/request_secret.pb")),
    (
        "deployment",
        include_bytes!("testdata/request_deployment.pb"),
    ),
    (
        "serviceaccount",
        include_bytes!("testdata/request_serviceaccount.pb"),
    ),
    ("service", include_bytes!("testdata/request_service.pb")),
    ("ssar", include_bytes!("testdata/request_ssar.pb")),
];

/// Bodies with every field set, from `core/tools/protobuf_oracle.py`.
const EVERY_FIELD: &[&[u8]] = &[
    include_bytes!("testdata/namespace.pb"),
    include_bytes!("testdata/configmap.pb"),
    include_bytes!("testdata/secret.pb"),
    include_bytes!("testdata/serviceaccount.pb"),
    include_bytes!("testdata/service.pb"),
    include_bytes!("testdata/deployment.pb"),
    include_bytes!("testdata/cronjob.pb"),
    include_bytes!("testdata/clusterrole.pb"),
    include_bytes!("testdata/rolebinding.pb"),
    include_bytes!("testdata/tokenrequest.pb"),
    include_bytes!("testdata/selfsubjectreview.pb"),
    include_bytes!("testdata/eventlist.pb"),
];

#[test]
fn go_written_bodies_re_encode_byte_for_byte() {
    for (name, pb) in GO_WRITTEN {
        let json = decode_object(pb).unwrap();
        let encoded = encode_object(&json).unwrap();
        assert_eq!(encoded.object(), *pb, "{name}");
    }
}

#[test]
fn every_field_survives_a_round_trip() {
    for pb in EVERY_FIELD {
        let json = decode_object(pb).unwrap();
        let encoded = encode_object(&json).unwrap();
        assert_eq!(decode_object(encoded.object()).unwrap(), json);
    }
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
            "creationTimestamp": "2026-01-02T03:04:05Z", "labels": {"b": "2", "a": "1"},
            "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1",
                "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
        "spec": {"containers": [{"name": "c", "image": "nginx",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                "livenessProbe": {"httpGet": {"port": "http", "path": "/"}}}],
            "terminationGracePeriodSeconds": 30, "enableServiceLinks": false,
            "securityContext": {"supplementalGroups": [1, 2, 3], "runAsUser": -1}},
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False",
            "lastTransitionTime": null}]}
    })
}

#[test]
fn an_independent_implementation_reads_the_encoding() {
    use k8s_pb::api::core::v1::Pod;
    let encoded = encode_object(&pod()).unwrap();
    let bytes = encoded.object();
    assert!(bytes.starts_with(b"k8s\x00"));
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&bytes[4..]).unwrap();
    let tm = unknown.type_meta.clone().unwrap();
    assert_eq!((tm.api_version(), tm.kind()), ("v1", "Pod"));
    assert_eq!(unknown.raw(), encoded.raw());
    let pod = Pod::decode(encoded.raw()).unwrap();
    let md = pod.metadata.unwrap();
    assert_eq!(md.name(), "p");
    assert_eq!(md.resource_version(), "42");
    assert_eq!(md.labels.get("a").map(String::as_str), Some("1"));
    assert_eq!(md.creation_timestamp.unwrap().seconds, Some(1_767_323_045));
    let fields = md.managed_fields[0].fields_v1.clone().unwrap();
    let fields: Value = serde_json::from_slice(fields.raw()).unwrap();
    assert_eq!(fields, json!({"f:metadata": {"f:labels": {}}}));
    let spec = pod.spec.unwrap();
    let c = &spec.containers[0];
    assert_eq!((c.name(), c.image()), ("c", "nginx"));
    assert_eq!(c.ports[0].container_port(), 80);
    let limits = &c.resources.as_ref().unwrap().limits;
    assert_eq!(limits["cpu"].string(), "500m");
    let port = c.liveness_probe.as_ref().unwrap().handler.as_ref().unwrap();
    let port = port.http_get.as_ref().unwrap().port.as_ref().unwrap();
    assert_eq!((port.r#type(), port.str_val()), (1, "http"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    // A pointer field set to its zero value stays set.
    assert_eq!(spec.enable_service_links, Some(false));
    let sc = spec.security_context.unwrap();
    assert_eq!(sc.supplemental_groups, [1, 2, 3]);
    assert_eq!(sc.run_as_user, Some(-1));
    let status = pod.status.unwrap();
    assert_eq!(status.phase(), "Pending");
    assert_eq!(status.conditions[0].r#type(), "Ready");
}

#[test]
fn map_entries_are_sorted_like_go() {
    let encoded = encode_object(&pod()).unwrap();
    let raw = encoded.raw();
    let a = raw.windows(3).position(|w| w == b"\x0a\x01a").unwrap();
    let b = raw.windows(3).position(|w| w == b"\x0a\x01b").unwrap();
    assert!(a < b);
}

#[test]
fn lists_and_watch_frames() {
    use k8s_pb::api::core::v1::PodList;
    let one = encode_object(&pod()).unwrap();
    let items = [one.raw(), one.raw()];
    let md = json!({"resourceVersion": "7", "continue": "c", "remainingItemCount": 3});
    let frame = list_frame("v1", "PodList", &md, items.iter().map(|i| i.len())).unwrap();
    let mut body = frame.head.clone();
    for i in items {
        body.extend_from_slice(super::item_head(i.len()).as_slice());
        body.extend_from_slice(i);
    }
    body.extend_from_slice(frame.tail);
    // The list decodes as a whole, by us and by prost.
    let list = decode_object(&body).unwrap();
    assert_eq!(list["metadata"], md);
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
    let decoded = PodList::decode(unknown.raw()).unwrap();
    assert_eq!(decoded.metadata.unwrap().remaining_item_count, Some(3));
    assert_eq!(decoded.items.len(), 2);

    // A watch frame: a 4-byte big-endian length, then a WatchEvent whose
    // object is the enveloped encoding.
    let (buf, [frame, object, _]) = encode_object(&pod()).unwrap().frame("ADDED");
    let frame = &buf[frame];
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let event = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&frame[4..]).unwrap();
    assert_eq!(event.r#type(), "ADDED");
    assert_eq!(event.object.unwrap().raw(), &buf[object]);
    assert_eq!(watch_frame("ADDED", one.object()), frame);
    let _ = ItemHead::len;
}

#[test]
fn statuses_and_partial_metadata_encode() {
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{PartialObjectMetadataList, Status};
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "pods \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "pods"}, "code": 404});
    let encoded = encode_object(&status).unwrap();
    let decoded = Status::decode(encoded.raw()).unwrap();
    assert_eq!((decoded.code(), decoded.reason()), (404, "NotFound"));
    assert_eq!(decoded.details.unwrap().name(), "x");
    let partial = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "9"},
        "items": [{"metadata": {"name": "a", "ownerReferences": [{"apiVersion": "v1",
            "kind": "Pod", "name": "o", "uid": "u", "controller": true}]}}]});
    let encoded = encode_object(&partial).unwrap();
    let decoded = PartialObjectMetadataList::decode(encoded.raw()).unwrap();
    let owner = &decoded.items[0].metadata.as_ref().unwrap().owner_references[0];
    assert_eq!((owner.name(), owner.controller), ("o", Some(true)));
}

#[test]
fn values_that_do_not_fit_the_schema_are_errors() {
    let mut bad = pod();
    bad["spec"]["containers"] = json!("not a list");
    let err = encode_object(&bad).unwrap_err();
    assert!(err.contains("containers"), "{err}");
    assert!(encode_object(&json!({"apiVersion": "x/v1", "kind": "Foo"})).is_err());
}
