//! The few metadata fields the controllers read from stored objects,
//! decoded without building the whole object (serde skips the rest).

use kubeshard_cache::StoredObject;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Debug, Default, Deserialize)]
struct Envelope {
    #[serde(default)]
    metadata: Meta,
}

#[derive(Debug, Default, Deserialize, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
    #[serde(default)]
    pub finalizers: Vec<String>,
    #[serde(default)]
    pub owner_references: Vec<OwnerRef>,
}

#[derive(Debug, Default, Deserialize, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    /// The API group named by `apiVersion` ("" for the core group).
    pub fn group(&self) -> &str {
        match self.api_version.split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }
}

impl Meta {
    pub fn of(obj: &StoredObject) -> Meta {
        if !obj.has_lifecycle_metadata() {
            return Meta {
                uid: obj.uid().to_string(),
                ..Meta::default()
            };
        }
        serde_json::from_slice::<Envelope>(obj.json_slice())
            .map(|e| e.metadata)
            .unwrap_or_default()
    }

    pub fn has_finalizer(&self, f: &str) -> bool {
        self.finalizers.iter().any(|x| x == f)
    }

    pub fn being_deleted(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
}

/// An object's identity as the controllers queue it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjRef {
    /// The resource's storage key.
    pub resource: Arc<str>,
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    pub uid: Box<str>,
}

impl ObjRef {
    pub fn of(resource: &Arc<str>, obj: &StoredObject) -> ObjRef {
        ObjRef {
            resource: resource.clone(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
            uid: obj.uid().into(),
        }
    }
}

/// A compact, collision-safe key for a uid.
pub fn uid_key(uid: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(uid.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;

    #[test]
    fn reads_only_what_it_needs() {
        let info = Catalog::with_builtins()
            .snapshot()
            .lookup("", "v1", "configmaps")
            .unwrap()
            .clone();
        let v = serde_json::json!({"metadata": {"name": "c", "uid": "u", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "o", "blockOwnerDeletion": true, "controller": true}]},
            "data": {"big": "x"}});
        let m = Meta::of(&StoredObject::encode(&info, &v, 1));
        assert_eq!(m.uid, "u");
        assert!(m.being_deleted() && m.has_finalizer("orphan"));
        assert_eq!(m.owner_references[0].group(), "apps");
        assert_eq!(m.owner_references[0].block_owner_deletion, Some(true));
        let plain =
            serde_json::json!({"metadata": {"name": "p", "uid": "v"}, "data": {"finalizer": "x"}});
        let m = Meta::of(&StoredObject::encode(&info, &plain, 1));
        assert_eq!((m.uid.as_str(), m.finalizers.len()), ("v", 0));
    }
}
