//! An object as stored: its JSON encoding (made once, at write time, with
//! its resourceVersion inside) plus the few metadata fields that lists and
//! watches filter on, pre-extracted so filtering never parses JSON.
//!
//! The encoding is kept inside the watch-event line of the change that
//! wrote it (`{"type":"MODIFIED","object":<JSON>}\n`): GET and LIST serve
//! the JSON as a slice of that buffer, and every watcher that receives the
//! event unchanged is sent the whole buffer. One allocation serves all
//! three, and no event ever needs a frame of its own.

use crate::event::EventType;
use crate::pairs::PackedPairs;
use bytes::Bytes;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use once_cell::race::OnceBox;
use serde_json::Value;
use std::sync::Arc;

#[derive(Debug)]
pub struct StoredObject {
    /// `{"type":T,"object":` + JSON + `}\n`.
    frame: Bytes,
    /// Where the JSON starts in `frame` (after the event-type prefix).
    json_start: u8,
    pub revision: u64,
    /// Shared with the store's key (and, per shard, with every object of
    /// the namespace), so the strings are held once.
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    /// Where `metadata.uid`'s value is in `frame` (it is always there:
    /// holding it again would cost an allocation per object).
    uid_at: u32,
    uid_len: u8,
    /// Sorted by key.
    pub labels: PackedPairs,
    /// Per-kind selectable fields (catalog order), metadata ones excluded.
    pub fields: PackedPairs,
    /// See [`StoredObject::has_lifecycle_metadata`].
    lifecycle: bool,
    /// The protobuf form, made on the first request for it: a cluster
    /// with no protobuf clients pays one pointer per object.
    protobuf: OnceBox<Protobuf>,
}

/// An object's protobuf encoding, kept inside the protobuf watch frame of
/// the change that wrote it, as the JSON is: GET serves the enveloped
/// object and LIST the raw message as slices of the frame.
#[derive(Debug)]
pub struct Protobuf {
    frame: Bytes,
    /// Where the enveloped object starts in `frame` (it runs to the end).
    object_start: u32,
    /// The raw message's range in `frame`.
    raw: (u32, u32),
}

impl Protobuf {
    /// The watch frame of the change that wrote this version.
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// The enveloped object (`k8s\0` + Unknown): a GET's body, a watch
    /// event's object.
    pub fn object(&self) -> Bytes {
        self.frame.slice(self.object_start as usize..)
    }

    /// The raw message, as a list carries its items.
    pub fn raw(&self) -> &[u8] {
        &self.frame[self.raw.0 as usize..self.raw.1 as usize]
    }
}

/// The bytes before the JSON in a frame of this type.
fn frame_prefix(kind: EventType) -> &'static [u8] {
    match kind {
        EventType::Added => b"{\"type\":\"ADDED\",\"object\":",
        EventType::Modified => b"{\"type\":\"MODIFIED\",\"object\":",
        EventType::Deleted => b"{\"type\":\"DELETED\",\"object\":",
    }
}

const FRAME_SUFFIX: &[u8] = b"}\n";

/// A scratch buffer grown past this by a large object is not kept.
const MAX_SCRATCH: usize = 1 << 20;

/// The metadata a stored object carries besides its encoding.
pub struct ObjectMeta {
    pub revision: u64,
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    pub uid: Box<str>,
    pub labels: PackedPairs,
    pub fields: PackedPairs,
    /// Whether `metadata` has ownerReferences, finalizers or a
    /// deletionTimestamp; None when unknown (the encoding is searched).
    pub lifecycle: Option<bool>,
}

/// The metadata keys the controllers act on (see
/// [`StoredObject::has_lifecycle_metadata`]).
const LIFECYCLE_KEYS: [&str; 3] = ["ownerReferences", "finalizers", "deletionTimestamp"];

/// Whether `json` mentions a lifecycle key anywhere. A quoted key cannot
/// occur inside a string value, where quotes are escaped, so `false` is
/// certain; `true` may come from a nested object's key.
fn mentions_lifecycle_key(json: &[u8]) -> bool {
    static FINDERS: std::sync::LazyLock<Vec<memchr::memmem::Finder<'static>>> =
        std::sync::LazyLock::new(|| {
            LIFECYCLE_KEYS
                .iter()
                .map(|k| memchr::memmem::Finder::new(format!("\"{k}\"").as_bytes()).into_owned())
                .collect()
        });
    FINDERS.iter().any(|f| f.find(json).is_some())
}

impl ObjectMeta {
    /// Extracts what filters need from a decoded object.
    pub fn of(info: &ResourceInfo, obj: &Value, revision: u64) -> Self {
        Self {
            lifecycle: Some(
                meta::metadata(obj)
                    .is_some_and(|m| LIFECYCLE_KEYS.iter().any(|k| meta::member(m, k).is_some())),
            ),
            revision,
            namespace: meta::namespace(obj).into(),
            name: meta::name(obj).into(),
            uid: meta::meta_str(obj, "uid").unwrap_or("").into(),
            labels: PackedPairs::new(
                meta::labels(obj)
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            ),
            fields: {
                let values: Vec<String> = info
                    .selectable_fields
                    .iter()
                    .map(|f| match meta::field_value(obj, &f.path) {
                        v if v.is_empty() => f.absent.to_string(),
                        v => v,
                    })
                    .collect();
                PackedPairs::new(
                    info.selectable_fields
                        .iter()
                        .zip(&values)
                        .map(|(f, v)| (&*f.label, v.as_str())),
                )
            },
        }
    }
}

/// Where `needle` (short, here a uid) first occurs in `hay`: candidates
/// by its first byte, then a comparison. Building a substring searcher
/// for a needle used once cost more than the search on every write.
fn find_short(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, _) = needle.split_first()?;
    memchr::memchr_iter(first, hay).find(|&at| hay[at..].starts_with(needle))
}

impl StoredObject {
    /// Encodes `obj` (which must already carry its resourceVersion) as the
    /// object of an ADDED event.
    pub fn encode(info: &ResourceInfo, obj: &Value, revision: u64) -> Self {
        Self::encode_for(info, obj, revision, EventType::Added)
    }

    /// Encodes `obj` inside the watch frame of a `kind` event.
    pub fn encode_for(info: &ResourceInfo, obj: &Value, revision: u64, kind: EventType) -> Self {
        // Written into a scratch buffer kept per thread and copied out at
        // its exact size: growing a fresh buffer reallocated (and copied)
        // it several times per object, and the stored copy is trimmed
        // anyway.
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let buf = SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            scratch.extend_from_slice(frame_prefix(kind));
            crate::json::write_object(scratch, obj);
            scratch.extend_from_slice(FRAME_SUFFIX);
            let buf = scratch.to_vec();
            if scratch.capacity() > MAX_SCRATCH {
                *scratch = Vec::new();
            }
            buf
        });
        Self::from_frame(buf, kind, ObjectMeta::of(info, obj, revision))
    }

    /// A stored object around already encoded JSON.
    pub fn from_json(json: &[u8], kind: EventType, meta: ObjectMeta) -> Self {
        let prefix = frame_prefix(kind);
        let mut buf = Vec::with_capacity(prefix.len() + json.len() + FRAME_SUFFIX.len());
        buf.extend_from_slice(prefix);
        buf.extend_from_slice(json);
        buf.extend_from_slice(FRAME_SUFFIX);
        Self::from_frame(buf, kind, meta)
    }

    /// `buf` is the whole frame at its exact size (the encoding lives as
    /// long as the object: no growth slack).
    fn from_frame(buf: Vec<u8>, kind: EventType, meta: ObjectMeta) -> Self {
        // Any occurrence of the uid's bytes in the encoding will do. A uid
        // is a JSON string without escapes (kube's are UUIDs); one that
        // cannot be found this way is treated as absent.
        let uid = meta.uid.as_bytes();
        let found = (!uid.is_empty() && uid.len() <= u8::MAX as usize)
            .then(|| find_short(&buf, uid))
            .flatten()
            .filter(|at| *at <= u32::MAX as usize);
        let lifecycle = meta
            .lifecycle
            .unwrap_or_else(|| mentions_lifecycle_key(&buf[frame_prefix(kind).len()..]));
        Self {
            frame: Bytes::from(buf),
            json_start: frame_prefix(kind).len() as u8,
            revision: meta.revision,
            namespace: meta.namespace,
            name: meta.name,
            uid_at: found.map_or(u32::MAX, |at| at as u32),
            uid_len: found.map_or(0, |_| uid.len() as u8),
            labels: meta.labels,
            fields: meta.fields,
            lifecycle,
            protobuf: OnceBox::new(),
        }
    }

    /// The protobuf form, encoded from the JSON on first use and kept.
    /// Errors (a kind with no protobuf form, a value its schema cannot
    /// hold) are not kept: they are rare and the caller answers with one.
    pub fn protobuf(&self) -> Result<&Protobuf, String> {
        if let Some(p) = self.protobuf.get() {
            return Ok(p);
        }
        let v: Value = serde_json::from_slice(self.json_slice()).map_err(|e| e.to_string())?;
        let encoded = kubeshard_core::protobuf::encode_object(&v)?;
        let (buf, [frame, object, raw]) = encoded.frame(self.frame_kind().as_str());
        let at = |i: usize| (i - frame.start) as u32;
        let form = Protobuf {
            object_start: at(object.start),
            raw: (at(raw.start), at(raw.end)),
            frame: Bytes::from(buf).slice(frame),
        };
        // Two readers racing here both encode; one copy is kept.
        Ok(self.protobuf.get_or_init(|| Box::new(form)))
    }

    /// Whether `metadata` may hold ownerReferences, finalizers or a
    /// deletionTimestamp. Most objects hold none, and the controllers
    /// look at every event: `false` lets them skip decoding it (searching
    /// the encoding for the keys, every event, cost more than the
    /// garbage collector's other work on a create).
    pub fn has_lifecycle_metadata(&self) -> bool {
        self.lifecycle
    }

    /// `metadata.uid` ("" when the object has none).
    pub fn uid(&self) -> &str {
        if self.uid_at == u32::MAX {
            return "";
        }
        let at = self.uid_at as usize;
        std::str::from_utf8(&self.frame[at..at + self.uid_len as usize]).unwrap_or("")
    }

    /// Keeps the metadata strings of `other` where they are equal, so that
    /// successive versions of an object (and the store's key) share them.
    pub fn share_names(&mut self, namespace: &Arc<str>, name: &Arc<str>) {
        if *self.namespace == **namespace {
            self.namespace = namespace.clone();
        }
        if *self.name == **name {
            self.name = name.clone();
        }
    }

    /// The object's JSON, as served by GET and concatenated by LIST.
    pub fn json(&self) -> Bytes {
        self.frame
            .slice(self.json_start as usize..self.frame.len() - FRAME_SUFFIX.len())
    }

    /// The object's JSON, borrowed.
    pub fn json_slice(&self) -> &[u8] {
        &self.frame[self.json_start as usize..self.frame.len() - FRAME_SUFFIX.len()]
    }

    /// The watch-event line of the change that wrote this version.
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// The type of the change that wrote this version (its frame's type).
    pub fn frame_kind(&self) -> EventType {
        match self.json_start as usize {
            n if n == frame_prefix(EventType::Added).len() => EventType::Added,
            n if n == frame_prefix(EventType::Modified).len() => EventType::Modified,
            _ => EventType::Deleted,
        }
    }

    /// Decodes the stored bytes back into a value (for updates that merge).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(self.json_slice()).expect("stored bytes are valid JSON")
    }

    /// The value of a selectable field, including the metadata ones.
    pub fn field(&self, label: &str) -> Option<&str> {
        match label {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            _ => self.fields.get(label),
        }
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }

    /// Approximate heap bytes held by this object, for memory reporting.
    pub fn heap_size(&self) -> usize {
        self.frame.len()
            + self.protobuf.get().map_or(0, |p| p.frame.len())
            + self.name.len()
            + self.labels.heap_size()
            + self.fields.heap_size()
            + std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::{Catalog, ResourceInfo};
    use serde_json::json;

    fn builtin(plural: &str) -> std::sync::Arc<ResourceInfo> {
        Catalog::with_builtins()
            .snapshot()
            .lookup("", "v1", plural)
            .unwrap()
            .clone()
    }

    proptest::proptest! {
        /// The first-byte search finds what a substring search finds.
        #[test]
        fn find_short_is_a_substring_search(
            hay in proptest::collection::vec(0u8..4, 0..200),
            needle in proptest::collection::vec(0u8..4, 1..6),
        ) {
            proptest::prop_assert_eq!(
                find_short(&hay, &needle),
                memchr::memmem::find(&hay, &needle)
            );
        }
    }

    /// Encoded from a value, only top-level metadata counts; rebuilt from
    /// JSON alone (recovery), any mention of a key does, so an object the
    /// controllers must see is never skipped.
    #[test]
    fn lifecycle_metadata_is_flagged_where_controllers_need_it() {
        let info = builtin("configmaps");
        let flagged = |v: serde_json::Value| {
            let encoded = StoredObject::encode(&info, &v, 1);
            let mut meta = ObjectMeta::of(&info, &v, 1);
            meta.lifecycle = None;
            let rebuilt = StoredObject::from_json(encoded.json_slice(), EventType::Added, meta);
            (
                encoded.has_lifecycle_metadata(),
                rebuilt.has_lifecycle_metadata(),
            )
        };
        for key in LIFECYCLE_KEYS {
            let v = json!({"metadata": {"name": "c", key: null}, "data": {"k": "v"}});
            assert_eq!(flagged(v), (true, true), "{key}");
        }
        let plain = json!({"metadata": {"name": "c", "labels": {"finalizers": "x"}},
            "spec": {"finalizers": ["kubernetes"]}, "data": {"deletionTimestamp": "\"ownerReferences\""}});
        assert_eq!(flagged(plain), (false, true));
        let none = json!({"metadata": {"name": "c"}, "data": {"k": "no finalizers here"}});
        assert_eq!(flagged(none), (false, false));
    }

    #[test]
    fn the_protobuf_form_is_made_once_and_framed_like_the_json() {
        let info = builtin("configmaps");
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": "7"},
            "data": {"k": "v"}});
        let o = StoredObject::encode_for(&info, &v, 7, EventType::Modified);
        let before = o.heap_size();
        let p = o.protobuf().unwrap();
        assert!(
            std::ptr::eq(p, o.protobuf().unwrap()),
            "kept, not re-encoded"
        );
        assert!(o.heap_size() > before);
        // The frame is a watch frame of the object's own event type around
        // the enveloped object, which holds the raw message.
        let object = p.object();
        assert!(p.frame().ends_with(&object));
        assert_eq!(
            p.frame()[..],
            kubeshard_core::protobuf::watch_frame("MODIFIED", &object)[..]
        );
        let back = kubeshard_core::protobuf::decode_object(&object).unwrap();
        assert_eq!(back, v);
        let raw_at = object.len() - p.raw().len() - 4;
        assert_eq!(&object[raw_at..object.len() - 4], p.raw());
        // A kind with no protobuf form is an error, and nothing is kept.
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}});
        let o = StoredObject::encode(&info, &cr, 1);
        assert!(o.protobuf().is_err());
    }

    #[test]
    fn json_and_frame_share_one_encoding() {
        let info = builtin("pods");
        let with_uid = json!({"metadata": {"name": "p", "ownerReferences": [{"uid": "u-0"}],
                                           "uid": "1c0a8f4e-6a53-4a86-a2de-3f0e0f9d3a51"}});
        let o = StoredObject::encode(&info, &with_uid, 3);
        assert_eq!(o.uid(), "1c0a8f4e-6a53-4a86-a2de-3f0e0f9d3a51");
        let v = json!({"metadata": {"name": "p", "namespace": "n", "resourceVersion": "7"},
                       "spec": {"nodeName": "node-1"}});
        for kind in [EventType::Added, EventType::Modified, EventType::Deleted] {
            let o = StoredObject::encode_for(&info, &v, 7, kind);
            assert_eq!(o.to_value(), v);
            assert_eq!(o.frame_kind(), kind);
            let frame: Value = serde_json::from_slice(o.frame()).unwrap();
            assert_eq!(frame, json!({"type": kind.as_str(), "object": v}));
            assert!(o.frame().ends_with(b"}\n"));
            assert_eq!(&o.json()[..], o.json_slice());
            assert_eq!(o.field("spec.nodeName"), Some("node-1"));
            assert_eq!(o.uid(), "");
        }
        let again = StoredObject::from_json(
            StoredObject::encode(&info, &v, 7).json_slice(),
            EventType::Modified,
            ObjectMeta::of(&info, &v, 7),
        );
        assert_eq!(again.to_value(), v);
        assert_eq!(again.frame_kind(), EventType::Modified);
    }
}
