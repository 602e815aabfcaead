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

    /// The type a watch event's `type` names (not BOOKMARK or ERROR).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ADDED" => Some(EventType::Added),
            "MODIFIED" => Some(EventType::Modified),
            "DELETED" => Some(EventType::Deleted),
            _ => None,
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
    /// A DELETED line for `prev` re-stamped with this event's revision,
    /// built on first use: what a watcher whose selector stops matching
    /// gets. (The event's own line is its object's frame.) Boxed: few
    /// events ever need it, and every event in the history rings would
    /// otherwise carry the 40 bytes of an unset `Bytes` (an event is 80
    /// bytes instead of 112 with the allocator's size classes).
    prev_deleted: OnceLock<Box<Bytes>>,
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
            prev_deleted: OnceLock::new(),
        }
    }

    /// `{"type":"MODIFIED","object":{...}}\n`: the object was encoded
    /// inside this line when the change was committed, so it is shared by
    /// every watcher that receives the event unchanged.
    pub fn frame(&self) -> &Bytes {
        debug_assert_eq!(self.object.frame_kind(), self.kind);
        self.object.frame()
    }

    /// The previous object's JSON restamped with this event's revision
    /// (the object of [`Self::prev_deleted_frame`]).
    pub fn prev_restamped_json(&self) -> Option<Bytes> {
        let frame = self.prev_deleted_frame()?;
        let prefix = b"{\"type\":\"DELETED\",\"object\":".len();
        Some(frame.slice(prefix..frame.len() - 2))
    }

    /// A DELETED line for the previous object with its resourceVersion set
    /// to this event's revision, encoded once however many watchers ask.
    pub fn prev_deleted_frame(&self) -> Option<&Bytes> {
        let prev = self.prev.as_ref()?;
        let frame = self.prev_deleted.get_or_init(|| {
            let mut v = prev.to_value();
            kubeshard_core::meta::set_meta(
                &mut v,
                "resourceVersion",
                serde_json::Value::String(self.revision.to_string()),
            );
            Box::new(watch_frame(
                EventType::Deleted.as_str(),
                &serde_json::to_vec(&v).expect("a Value always serializes"),
            ))
        });
        Some(frame)
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

/// An ADDED event of an empty object, for the rings' and hub's tests.
#[cfg(test)]
pub(crate) fn test_event(revision: u64, resource: &str, name: &str) -> Arc<Event> {
    use crate::object::ObjectMeta;
    let obj = Arc::new(StoredObject::from_json(
        b"{}",
        EventType::Added,
        ObjectMeta {
            revision,
            namespace: "".into(),
            name: name.into(),
            uid: "".into(),
            labels: Default::default(),
            fields: Default::default(),
            lifecycle: None,
        },
    ));
    Arc::new(Event::new(
        revision,
        EventType::Added,
        Arc::from(resource),
        obj,
        None,
    ))
}

#[cfg(test)]
mod size_tests {
    /// Every event in every history ring pays for this struct: keep it in
    /// jemalloc's 80-byte class (with the Arc's two counters).
    #[test]
    fn an_event_stays_small() {
        assert!(std::mem::size_of::<super::Event>() <= 64);
    }
}
