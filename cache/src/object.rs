//! An object as stored: its JSON encoding (made once, at write time, with
//! its resourceVersion inside) plus the few metadata fields that lists and
//! watches filter on, pre-extracted so filtering never parses JSON.

use bytes::Bytes;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use serde_json::Value;

#[derive(Debug)]
pub struct StoredObject {
    /// The wire bytes served by GET, concatenated by LIST, framed by WATCH.
    pub bytes: Bytes,
    pub revision: u64,
    pub namespace: Box<str>,
    pub name: Box<str>,
    pub uid: Box<str>,
    /// Sorted by key.
    pub labels: Box<[(String, String)]>,
    /// Per-kind selectable fields (catalog order), metadata ones excluded.
    pub fields: Box<[(String, String)]>,
}

impl StoredObject {
    /// Encodes `obj` (which must already carry its resourceVersion).
    pub fn encode(info: &ResourceInfo, obj: &Value, revision: u64) -> Self {
        let mut buf = serde_json::to_vec(obj).expect("a Value always serializes");
        // The encoding lives as long as the object: do not keep the
        // doubling growth slack (on average a third of the buffer).
        buf.shrink_to_fit();
        let bytes = Bytes::from(buf);
        Self::from_parts(info, obj, revision, bytes)
    }

    pub fn from_parts(info: &ResourceInfo, obj: &Value, revision: u64, bytes: Bytes) -> Self {
        let fields = info
            .selectable_fields
            .iter()
            .map(|f| (f.label.to_string(), meta::field_value(obj, f.path)))
            .collect();
        Self {
            bytes,
            revision,
            namespace: meta::namespace(obj).into(),
            name: meta::name(obj).into(),
            uid: meta::meta_str(obj, "uid").unwrap_or("").into(),
            labels: meta::labels(obj).into_boxed_slice(),
            fields,
        }
    }

    /// Decodes the stored bytes back into a value (for updates that merge).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.bytes).expect("stored bytes are valid JSON")
    }

    /// The value of a selectable field, including the metadata ones.
    pub fn field(&self, label: &str) -> Option<&str> {
        match label {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            _ => self
                .fields
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, v)| v.as_str()),
        }
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.labels[i].1.as_str())
    }

    /// Approximate heap bytes held by this object, for memory reporting.
    pub fn heap_size(&self) -> usize {
        self.bytes.len()
            + self.namespace.len()
            + self.name.len()
            + self.uid.len()
            + self
                .labels
                .iter()
                .map(|(k, v)| k.len() + v.len() + 48)
                .sum::<usize>()
            + self
                .fields
                .iter()
                .map(|(k, v)| k.len() + v.len() + 48)
                .sum::<usize>()
            + std::mem::size_of::<Self>()
    }
}
