//! Values as kube-apiserver keeps them in etcd, so the two servers read
//! each other's data: built-in kinds in protobuf inside the `k8s\0`
//! envelope (kube's default `--storage-media-type`), custom resources in
//! JSON, and never a `resourceVersion` (an object's version is its key's
//! mod revision, set when it is read back).
//!
//! Reading accepts either form whatever the kind, as kube's storage
//! decoder does: a value written by a server with another media type, or
//! a built-in object this encoder has no protobuf form for (then written
//! in JSON), still reads.

use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::protobuf;
use serde_json::Value;

/// The bytes stored for `obj` of `info`.
pub fn encode(info: &ResourceInfo, obj: &Value) -> Vec<u8> {
    // A copy without the version only when there is one: a create has
    // none, and copying the object cost a create on etcd ~4 % of its
    // executor's instructions.
    let without;
    let stored = if obj.pointer("/metadata/resourceVersion").is_some() {
        let mut copy = obj.clone();
        meta::remove_meta(&mut copy, "resourceVersion");
        without = copy;
        &without
    } else {
        obj
    };
    if info.custom.is_none() {
        if let Ok(encoded) = protobuf::encode_object(stored) {
            return encoded.into_object().to_vec();
        }
    }
    serde_json::to_vec(stored).unwrap_or_default()
}

/// The object a stored value holds, at `revision` (its mod revision).
pub fn decode(value: &[u8], revision: u64) -> Result<Value, String> {
    let mut obj = if value.starts_with(protobuf::MAGIC) {
        let mut obj = protobuf::decode_object(value)?;
        drop_zero_creation_times(&mut obj);
        obj
    } else {
        serde_json::from_slice(value).map_err(|e| e.to_string())?
    };
    if !obj.is_object() {
        return Err("the stored value is not an object".into());
    }
    // kube-apiserver still stores CRDs as v1beta1.
    kubeshard_core::crd::v1beta1::to_v1(&mut obj);
    meta::set_meta(
        &mut obj,
        "resourceVersion",
        Value::String(revision.to_string()),
    );
    Ok(obj)
}

/// Go writes a zero Time as an empty message, which decodes as null;
/// kube-apiserver leaves a zero `creationTimestamp` out of its JSON (a
/// pod template's, say), and so does this.
fn drop_zero_creation_times(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                if meta.get("creationTimestamp").is_some_and(Value::is_null) {
                    meta.remove("creationTimestamp");
                }
            }
            m.values_mut().for_each(drop_zero_creation_times);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_zero_creation_times),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;
    use serde_json::json;

    #[test]
    fn built_in_kinds_are_protobuf_and_round_trip_without_their_version() {
        let catalog = Catalog::with_builtins();
        let snap = catalog.snapshot();
        let info = snap.lookup("", "v1", "configmaps").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7",
                         "uid": "3c0a4c7e-0000-4000-8000-000000000001",
                         "creationTimestamp": "2026-12-01T00:00:00Z"},
            "data": {"k": "v"}});
        let bytes = encode(info, &cm);
        assert!(bytes.starts_with(protobuf::MAGIC));
        let raw = protobuf::decode_object(&bytes).unwrap();
        assert!(raw["metadata"].get("resourceVersion").is_none(), "{raw}");
        // Without a version (a create), the same bytes.
        let mut bare = cm.clone();
        meta::remove_meta(&mut bare, "resourceVersion");
        assert_eq!(encode(info, &bare), bytes);
        let back = decode(&bytes, 42).unwrap();
        let mut want = cm.clone();
        want["metadata"]["resourceVersion"] = json!("42");
        assert_eq!(back, want);
    }

    #[test]
    fn custom_resources_are_json_and_json_reads_for_any_kind() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "resourceVersion": "3"}});
        let bytes = serde_json::to_vec(&obj).unwrap();
        assert_eq!(
            decode(&bytes, 9).unwrap()["metadata"]["resourceVersion"],
            "9"
        );
        assert!(decode(b"[1]", 1).is_err());
        assert!(decode(b"k8s\0\x01", 1).is_err());
    }
}
