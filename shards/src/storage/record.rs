//! The bytes of the log and of snapshots: objects archived with rkyv and
//! framed with a length and a CRC-32C, so that damage is found on read and
//! never served.
//!
//! A frame is `[len: u32 LE][crc32c(payload): u32 LE][payload][zero pad to 8]`.
//! A zero length marks the end of the written part of a file (log segments
//! are preallocated, so everything after the last frame reads as zeros).

use kubeshard_cache::object::ObjectMeta;
use kubeshard_cache::{EventType, StoredObject};
use rkyv::rancor::Error as RkyvError;
use rkyv::util::AlignedVec;
use rkyv::{Archive, Deserialize, Serialize};
use std::sync::Arc;

/// Bytes before a frame's payload: its length and checksum.
pub const FRAME_HEADER: usize = 8;
/// Frames start at multiples of this, so payloads stay aligned for rkyv.
pub const FRAME_ALIGN: usize = 8;
/// The largest payload a reader accepts: a damaged length must not make
/// recovery allocate gigabytes.
pub const MAX_PAYLOAD: usize = 256 << 20;

/// An object as it is logged and snapshotted: its encoded JSON plus the
/// metadata that lists and watches filter on, so recovery rebuilds a
/// [`StoredObject`] without parsing the JSON or consulting the catalog.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ObjectRecord {
    /// The catalog storage key of the object's resource.
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub revision: u64,
    pub labels: Vec<(String, String)>,
    pub fields: Vec<(String, String)>,
    pub json: Vec<u8>,
}

/// Everything that is ever written to a log segment or a snapshot file.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// First frame of every log segment. `base_revision` is the shard's last
    /// durable revision before the segment: every later record of the shard
    /// is in this segment or a following one, which is how recovery proves
    /// that a snapshot and the remaining segments leave no gap.
    SegmentHeader {
        shard: u32,
        seq: u64,
        base_revision: u64,
    },
    /// One committed mutation. For a deletion the object is its last state
    /// stamped with the deletion's revision (what watchers see).
    Mutation {
        revision: u64,
        kind: u8,
        object: ObjectRecord,
    },
    SnapshotHeader {
        shard: u32,
        shards: u32,
        revision: u64,
    },
    SnapshotObjects(Vec<ObjectRecord>),
    /// Last frame of a complete snapshot; a snapshot without it is ignored.
    SnapshotFooter {
        objects: u64,
        revision: u64,
    },
}

pub fn kind_code(kind: EventType) -> u8 {
    match kind {
        EventType::Added => 1,
        EventType::Modified => 2,
        EventType::Deleted => 3,
    }
}

pub fn kind_from_code(code: u8) -> Option<EventType> {
    match code {
        1 => Some(EventType::Added),
        2 => Some(EventType::Modified),
        3 => Some(EventType::Deleted),
        _ => None,
    }
}

impl ObjectRecord {
    pub fn from_stored(resource: &str, o: &StoredObject) -> Self {
        Self {
            resource: resource.to_string(),
            namespace: o.namespace.to_string(),
            name: o.name.to_string(),
            uid: o.uid().to_string(),
            revision: o.revision,
            labels: o.labels.to_vec(),
            fields: o.fields.to_vec(),
            json: o.json_slice().to_vec(),
        }
    }

    /// The stored object this record describes (encoded inside a `kind`
    /// watch frame, with `namespace` shared), and its resource key.
    pub fn into_stored(self, kind: EventType, namespace: Arc<str>) -> (String, StoredObject) {
        debug_assert_eq!(*namespace, *self.namespace);
        let meta = ObjectMeta {
            revision: self.revision,
            namespace,
            name: self.name.into(),
            uid: self.uid.into(),
            labels: self
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            fields: self
                .fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            lifecycle: None,
        };
        let stored = StoredObject::from_json(&self.json, kind, meta);
        (self.resource, stored)
    }
}

/// Appends `frame` to `out` (which must end at a frame boundary).
pub fn encode_frame(frame: &Frame, out: &mut Vec<u8>) {
    // Archived into a buffer kept per thread: a fresh one grew (and was
    // copied) four times per logged object.
    thread_local! {
        static SCRATCH: std::cell::RefCell<AlignedVec> = std::cell::RefCell::new(AlignedVec::new());
    }
    debug_assert_eq!(out.len() % FRAME_ALIGN, 0, "frames start aligned");
    SCRATCH.with_borrow_mut(|scratch| {
        let mut buf = std::mem::take(scratch);
        buf.clear();
        let payload = rkyv::api::high::to_bytes_in::<_, RkyvError>(frame, buf)
            .expect("archiving owned data cannot fail");
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out.resize(out.len().next_multiple_of(FRAME_ALIGN), 0);
        // A snapshot's batch of objects can be large: not kept for later.
        if payload.capacity() <= MAX_KEPT_SCRATCH {
            *scratch = payload;
        }
    });
}

/// The largest archiving buffer a thread keeps between frames.
const MAX_KEPT_SCRATCH: usize = 1 << 20;

/// What a reader finds at an offset.
#[derive(Debug)]
pub enum FrameRead {
    /// A good frame and the offset of the next one.
    Frame(Box<Frame>, usize),
    /// Zeros: nothing was written here.
    End,
    /// A frame is present but unreadable (cut short, checksum or archive
    /// mismatch); the string says how.
    Damaged(String),
}

/// Reads the frame at `offset` of `buf`.
pub fn read_frame(buf: &[u8], offset: usize) -> FrameRead {
    let Some(header) = buf.get(offset..offset + FRAME_HEADER) else {
        return if buf.len() <= offset || buf[offset..].iter().all(|b| *b == 0) {
            FrameRead::End
        } else {
            FrameRead::Damaged("frame header cut short".into())
        };
    };
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    if len == 0 {
        return if crc == 0 {
            FrameRead::End
        } else {
            FrameRead::Damaged("zero-length frame with a checksum".into())
        };
    }
    if len > MAX_PAYLOAD {
        return FrameRead::Damaged(format!("frame length {len} is implausible"));
    }
    let start = offset + FRAME_HEADER;
    let Some(payload) = buf.get(start..start + len) else {
        return FrameRead::Damaged(format!(
            "frame of {len} bytes runs past the end of the file"
        ));
    };
    if crc32c::crc32c(payload) != crc {
        return FrameRead::Damaged("checksum mismatch".into());
    }
    let mut aligned = AlignedVec::<16>::with_capacity(len);
    aligned.extend_from_slice(payload);
    match rkyv::from_bytes::<Frame, RkyvError>(&aligned) {
        Ok(frame) => FrameRead::Frame(Box::new(frame), (start + len).next_multiple_of(FRAME_ALIGN)),
        Err(e) => FrameRead::Damaged(format!("record does not decode: {e}")),
    }
}

/// Whether a good frame starts anywhere in `buf` at or after `from`: tells
/// a torn tail (nothing good follows the damage) from damage in the middle
/// of a log (good records follow it).
pub fn good_frame_after(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from.next_multiple_of(FRAME_ALIGN);
    while at + FRAME_HEADER <= buf.len() {
        if let FrameRead::Frame(..) = read_frame(buf, at) {
            return Some(at);
        }
        at += FRAME_ALIGN;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn object(name: &str, rev: u64, body: usize) -> ObjectRecord {
        ObjectRecord {
            resource: "/configmaps".into(),
            namespace: "default".into(),
            name: name.into(),
            uid: "u-1".into(),
            revision: rev,
            labels: vec![("app".into(), "x".into())],
            fields: vec![],
            json: format!("{{\"uid\":\"u-1\",\"pad\":\"{}\"}}", "x".repeat(body)).into_bytes(),
        }
    }

    fn mutation(rev: u64, body: usize) -> Frame {
        Frame::Mutation {
            revision: rev,
            kind: 1,
            object: object(&format!("o{rev}"), rev, body),
        }
    }

    fn read_all(buf: &[u8]) -> (Vec<Frame>, FrameRead) {
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            match read_frame(buf, at) {
                FrameRead::Frame(f, next) => {
                    out.push(*f);
                    at = next;
                }
                other => return (out, other),
            }
        }
    }

    #[test]
    fn frames_round_trip_and_end_at_zeros() {
        let mut buf = Vec::new();
        let frames = vec![
            Frame::SegmentHeader {
                shard: 1,
                seq: 7,
                base_revision: 41,
            },
            mutation(42, 10),
            mutation(43, 1000),
            Frame::SnapshotObjects(vec![object("a", 3, 5), object("b", 4, 0)]),
        ];
        for f in &frames {
            encode_frame(f, &mut buf);
        }
        buf.resize(buf.len() + 4096, 0);
        let (got, end) = read_all(&buf);
        assert_eq!(got, frames);
        assert!(matches!(end, FrameRead::End));
    }

    /// The per-thread archiving buffer changes nothing on disk: a frame
    /// encoded after bigger and smaller ones is the one a fresh buffer
    /// makes, and its payload is rkyv's.
    #[test]
    fn frames_are_the_same_bytes_whatever_came_before() {
        let f = mutation(42, 100);
        let mut first = Vec::new();
        encode_frame(&f, &mut first);
        let mut other = Vec::new();
        encode_frame(&mutation(1, 5000), &mut other);
        encode_frame(&mutation(2, 1), &mut other);
        let mut again = Vec::new();
        encode_frame(&f, &mut again);
        assert_eq!(first, again);
        let payload = rkyv::to_bytes::<RkyvError>(&f).unwrap();
        assert_eq!(
            &first[FRAME_HEADER..FRAME_HEADER + payload.len()],
            &payload[..]
        );
    }

    #[test]
    fn stored_objects_survive_the_record() {
        let rec = object("x", 9, 20);
        let (resource, stored) = rec
            .clone()
            .into_stored(EventType::Modified, "default".into());
        assert_eq!(resource, "/configmaps");
        assert_eq!(ObjectRecord::from_stored(&resource, &stored), rec);
    }

    proptest! {
        /// Any single flipped byte inside a frame is reported as damage (or,
        /// in the zero padding, ignored), never decoded as a different frame.
        #[test]
        fn a_flipped_byte_is_never_served(pos in 0usize..2000, bit in 0u8..8) {
            let mut buf = Vec::new();
            encode_frame(&mutation(5, 300), &mut buf);
            encode_frame(&mutation(6, 300), &mut buf);
            let original = buf.clone();
            let pos = pos % buf.len();
            buf[pos] ^= 1 << bit;
            let (got, _) = read_all(&buf);
            let (want, _) = read_all(&original);
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(g, w);
            }
            prop_assert!(got.len() <= want.len());
        }

        /// A log cut at any byte reads as a prefix of its frames.
        #[test]
        fn a_torn_tail_reads_as_a_prefix(cut in 0usize..3000) {
            let mut buf = Vec::new();
            for r in 1..5 {
                encode_frame(&mutation(r, 200), &mut buf);
            }
            let cut = cut % buf.len();
            let (got, _) = read_all(&buf[..cut]);
            let (want, _) = read_all(&buf);
            prop_assert_eq!(&got[..], &want[..got.len()]);
        }
    }

    #[test]
    fn good_frames_after_damage_are_found() {
        let mut buf = Vec::new();
        encode_frame(&mutation(1, 100), &mut buf);
        let second = buf.len();
        encode_frame(&mutation(2, 100), &mut buf);
        buf[20] ^= 0xff;
        assert!(matches!(read_frame(&buf, 0), FrameRead::Damaged(_)));
        assert_eq!(good_frame_after(&buf, 8), Some(second));
        assert_eq!(good_frame_after(&buf, second + 8), None);
    }
}
