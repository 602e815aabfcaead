//! A change to one object, as rings hold it and watchers receive it.

use crate::object::StoredObject;
use bytes::Bytes;
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

#[derive(Debug)]
pub struct Event {
    pub revision: u64,
    pub kind: EventType,
    /// The catalog storage key of the object's resource.
    pub resource: Arc<str>,
    /// The object after the change; for a deletion, its last state stamped
    /// with the deletion's revision (what kube sends in DELETED).
    pub object: Arc<StoredObject>,
    /// The object before the change (None for a creation): selector
    /// transitions need it, and list snapshots undo events through it.
    pub prev: Option<Arc<StoredObject>>,
    /// `prev` re-stamped with this event's revision, built on first use: a
    /// watcher whose selector stops matching gets it as a DELETED object.
    prev_at_revision: OnceLock<Bytes>,
    /// The JSON watch-event line for this event, built once and shared by
    /// every watcher that receives the event unchanged.
    frame: OnceLock<Bytes>,
}

impl Event {
    pub fn new(
        revision: u64,
        kind: EventType,
        resource: Arc<str>,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
    ) -> Self {
        Self {
            revision,
            kind,
            resource,
            object,
            prev,
            prev_at_revision: OnceLock::new(),
            frame: OnceLock::new(),
        }
    }

    /// `{"type":"MODIFIED","object":{...}}\n`, encoded on first use.
    pub fn frame(&self) -> &Bytes {
        self.frame
            .get_or_init(|| watch_frame(self.kind.as_str(), &self.object.bytes))
    }

    /// The previous object with `metadata.resourceVersion` set to this
    /// event's revision, encoded once however many watchers ask.
    pub fn prev_restamped(&self) -> Option<&Bytes> {
        let prev = self.prev.as_ref()?;
        Some(self.prev_at_revision.get_or_init(|| {
            let mut v = prev.to_value();
            kubeshard_core::meta::set_meta(
                &mut v,
                "resourceVersion",
                serde_json::Value::String(self.revision.to_string()),
            );
            Bytes::from(serde_json::to_vec(&v).expect("a Value always serializes"))
        }))
    }
}

/// One JSON watch-event line, `{"type":T,"object":O}\n`, around an already
/// encoded object (events, bookmarks, errors and synthetic ADDEDs alike).
pub fn watch_frame(kind: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}
