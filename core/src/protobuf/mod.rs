//! Kubernetes' protobuf encoding: request bodies decoded into JSON, and
//! responses encoded from JSON for clients that ask for protobuf.
//!
//! kubectl's typed clients (`kubectl create namespace|configmap|secret|
//! deployment|serviceaccount`, `kubectl auth can-i`, …) send
//! `Content-Type: application/vnd.kubernetes.protobuf`. kubeshard works on
//! JSON objects throughout, so instead of carrying typed structs it
//! transcodes the body into the `serde_json::Value` a JSON client would
//! have sent for the same object, and answers in JSON (the clients' Accept
//! header allows it).
//!
//! The body is the 4-byte magic `k8s\0` followed by a `runtime.Unknown`
//! {1: TypeMeta{1: apiVersion, 2: kind}, 2: raw object, 3: contentEncoding,
//! 4: contentType}; the raw object follows the kind's generated.proto. The
//! schema of every kind kubeshard serves is a generated table (see
//! `schema.rs` and `core/tools/gen_protobuf_schema.py`).
//!
//! Go's protobuf encoding writes every non-pointer field, even when zero,
//! while its JSON encoding drops zero values of `omitempty` fields. So a
//! kubectl body carries `uid: ""`, `generation: 0`, `type: ""` and the like
//! that a JSON body would not; the table marks those fields (derived from
//! Go's own output by `core/tools/protobuf_oracle.py`) and the decoder
//! drops their zero values, so that server-side defaulting keyed on
//! absent fields behaves the same for both encodings.

mod decode;
mod encode;
mod jsonschema;
mod range_allocation;
mod schema;
mod special;
mod wire;

#[cfg(test)]
mod encode_tests;
#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;

pub use range_allocation::{decode_range_allocation, encode_range_allocation};
use serde_json::{Map, Value};
use std::ops::Range;
use wire::{key, varint, varint_len, Reader, LEN};

/// The media type of Kubernetes' protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Every protobuf-encoded object starts with these bytes.
pub const MAGIC: &[u8] = b"k8s\x00";

/// True for "application/vnd.kubernetes.protobuf" (parameters ignored).
///
/// The streaming variant (`;stream=watch`) is also protobuf, so parameters
/// do not change the answer; matching is case-insensitive like media types.
pub fn is_protobuf(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case(CONTENT_TYPE)
}

/// The media type of a protobuf watch stream.
pub const STREAM_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// What follows the raw object in an envelope: Go always writes the
/// Unknown's (empty) contentEncoding and contentType.
const ENVELOPE_TAIL: &[u8] = &[0x1a, 0x00, 0x22, 0x00];

/// Room left in front of an encoding for a watch frame's header: the
/// 4-byte length, the event type (at most `MODIFIED`/`BOOKMARK`) and two
/// keys and lengths.
const WATCH_HEAD_ROOM: usize = 32;

/// An object's protobuf encoding, as kube-apiserver sends it
/// (`k8s\0` + Unknown{TypeMeta, raw, "", ""}), with room in front for a
/// watch frame's header so that a frame around it costs no copy.
#[derive(Debug)]
pub struct Encoded {
    buf: Vec<u8>,
    /// The enveloped object in `buf`.
    object: Range<usize>,
    /// The object's raw message (a list's items are raw messages).
    raw: Range<usize>,
}

impl Encoded {
    /// The enveloped object: a GET's body, a watch event's object.
    pub fn object(&self) -> &[u8] {
        &self.buf[self.object.clone()]
    }

    /// The raw message, as a list carries its items.
    pub fn raw(&self) -> &[u8] {
        &self.buf[self.raw.clone()]
    }

    /// Writes a watch frame's header for an `event_type` event in front of
    /// the object; returns the buffer, and the frame's, the object's and
    /// the raw message's ranges in it.
    pub fn frame(mut self, event_type: &str) -> (Vec<u8>, [Range<usize>; 3]) {
        let head = watch_event_head(event_type, self.object.len());
        let start = self.object.start - head.len();
        self.buf[start..self.object.start].copy_from_slice(&head);
        let end = self.object.end;
        (self.buf, [start..end, self.object, self.raw])
    }

    /// The enveloped object, as shared bytes (a response body).
    pub fn into_object(self) -> bytes::Bytes {
        bytes::Bytes::from(self.buf).slice(self.object)
    }
}

/// Encodes `obj` in the protobuf form of the kind it names (its
/// `apiVersion` and `kind`). Errors name the first field that does not fit
/// the kind's schema, or a kind with no protobuf form (custom resources).
pub fn encode_object(obj: &Value) -> Result<Encoded, String> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    encode_as(obj, api_version, kind)
}

/// Encodes `obj` as `api_version`/`kind`.
fn encode_as(obj: &Value, api_version: &str, kind: &str) -> Result<Encoded, String> {
    let msg = schema::root(api_version, kind)
        .ok_or_else(|| format!("no protobuf encoding for {api_version}, Kind={kind}"))?;
    // A CRD's schemas have a protobuf layout of their own.
    let proto_form;
    let obj = if kind == "CustomResourceDefinition" {
        let mut crd = obj.clone();
        jsonschema::crd_schemas_to_proto(&mut crd);
        proto_form = crd;
        &proto_form
    } else {
        obj
    };
    let fields = obj.as_object().ok_or("not an object")?;
    let type_meta = type_meta(api_version, kind);
    // The envelope's header is written once the raw message's length is
    // known, right-aligned against it, in room reserved for its longest
    // form (a 5-byte length).
    let room = WATCH_HEAD_ROOM
        + MAGIC.len()
        + 1
        + varint_len(type_meta.len() as u64)
        + type_meta.len()
        + 1
        + 5;
    let mut buf = Vec::with_capacity(room + 256);
    buf.resize(room, 0);
    encode::message(msg, fields, &mut buf, 0)?;
    let raw = room..buf.len();
    buf.extend_from_slice(ENVELOPE_TAIL);
    let mut head = Vec::with_capacity(room - WATCH_HEAD_ROOM);
    head.extend_from_slice(MAGIC);
    key(&mut head, 1, LEN);
    encode::bytes(&mut head, &type_meta);
    key(&mut head, 2, LEN);
    varint(&mut head, raw.len() as u64);
    let start = room - head.len();
    buf[start..room].copy_from_slice(&head);
    let end = buf.len();
    Ok(Encoded {
        buf,
        object: start..end,
        raw,
    })
}

/// TypeMeta{1: apiVersion, 2: kind}.
fn type_meta(api_version: &str, kind: &str) -> Vec<u8> {
    let mut tm = Vec::with_capacity(4 + api_version.len() + kind.len());
    key(&mut tm, 1, LEN);
    encode::bytes(&mut tm, api_version.as_bytes());
    key(&mut tm, 2, LEN);
    encode::bytes(&mut tm, kind.as_bytes());
    tm
}

/// The bytes of a protobuf watch frame before its object: the frame's
/// 4-byte big-endian length, then WatchEvent{1: type, 2: RawExtension{1:
/// the enveloped object}} up to the object's bytes. kube's watch stream
/// is these frames back to back (its `LengthDelimitedFramer`).
pub fn watch_event_head(event_type: &str, object_len: usize) -> Vec<u8> {
    let mut event = Vec::with_capacity(WATCH_HEAD_ROOM);
    key(&mut event, 1, LEN);
    encode::bytes(&mut event, event_type.as_bytes());
    let raw_ext_len = 1 + varint_len(object_len as u64) + object_len;
    key(&mut event, 2, LEN);
    varint(&mut event, raw_ext_len as u64);
    key(&mut event, 1, LEN);
    varint(&mut event, object_len as u64);
    let total = u32::try_from(event.len() + object_len).unwrap_or(u32::MAX);
    let mut head = total.to_be_bytes().to_vec();
    head.extend_from_slice(&event);
    head
}

/// A whole watch frame for an event about `object` (an enveloped
/// encoding), for events built on request (bookmarks, errors).
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut frame = watch_event_head(event_type, object.len());
    frame.extend_from_slice(object);
    frame
}

/// A protobuf list response around items already encoded: the bytes
/// before the first item (envelope, TypeMeta, the list's metadata), what
/// goes before each item (its key and length), and the closing bytes.
pub struct ListFrame {
    pub head: Vec<u8>,
    pub tail: &'static [u8],
}

/// Frames a list of `list_kind` whose items' raw messages have
/// `item_lens`; `metadata` is the list's ListMeta in JSON.
pub fn list_frame(
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    item_lens: impl Iterator<Item = usize>,
) -> Result<ListFrame, String> {
    let msg = schema::root(api_version, list_kind)
        .ok_or_else(|| format!("no protobuf encoding for {api_version}, Kind={list_kind}"))?;
    let mut meta = Map::new();
    meta.insert("metadata".into(), metadata.clone());
    let mut list_meta = Vec::new();
    encode::message(msg, &meta, &mut list_meta, 0)?;
    let items: usize = item_lens.map(|l| 1 + varint_len(l as u64) + l).sum();
    let mut head = Vec::with_capacity(64 + list_meta.len());
    head.extend_from_slice(MAGIC);
    key(&mut head, 1, LEN);
    encode::bytes(&mut head, &type_meta(api_version, list_kind));
    key(&mut head, 2, LEN);
    varint(&mut head, (list_meta.len() + items) as u64);
    head.extend_from_slice(&list_meta);
    Ok(ListFrame {
        head,
        tail: ENVELOPE_TAIL,
    })
}

/// The key and length before a list item of `len` bytes (`items` is
/// field 2 of every kube list).
pub fn item_head(len: usize) -> ItemHead {
    let mut h = ItemHead {
        bytes: [0; 11],
        len: 0,
    };
    // Written in place: a list makes one per item.
    let mut at = 0;
    let mut put = |b: u8| {
        h.bytes[at] = b;
        at += 1;
    };
    put(2 << 3 | LEN);
    let mut v = len as u64;
    while v >= 0x80 {
        put((v as u8) | 0x80);
        v >>= 7;
    }
    put(v as u8);
    h.len = at as u8;
    h
}

/// See [`item_head`]: at most a key and a 10-byte varint, held inline.
#[derive(Clone, Copy, Debug)]
pub struct ItemHead {
    bytes: [u8; 11],
    len: u8,
}

impl ItemHead {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
}

/// Decodes a k8s protobuf body (magic + runtime.Unknown) into the JSON
/// object a JSON client would send, with apiVersion and kind set from the
/// TypeMeta. Errors are human-readable strings (the server wraps them in
/// 400 BadRequest).
pub fn decode_object(body: &[u8]) -> Result<Value, String> {
    match body.strip_prefix(MAGIC) {
        _ if body.is_empty() => Err("empty body".into()),
        None => Err("provided data does not appear to be a protobuf message, \
                     expected prefix [107 56 115 0]"
            .into()),
        Some([]) => Err("empty body".into()),
        Some(rest) => decode_envelope(rest, 0),
    }
}

/// Like [`decode_object`], for a body whose TypeMeta may be left empty
/// (kube fills it from the endpoint's default, as for DeleteOptions).
pub fn decode_object_or(body: &[u8], api_version: &str, kind: &str) -> Result<Value, String> {
    match body.strip_prefix(MAGIC) {
        Some(rest) if !rest.is_empty() => {
            let (given_version, given_kind, _) = read_unknown(rest, 0)?;
            if given_kind.is_empty() && given_version.is_empty() {
                return decode_typed(rest, api_version, kind);
            }
            decode_object(body)
        }
        _ => decode_object(body),
    }
}

/// Decodes the envelope's raw bytes as `api_version`/`kind`, whatever its
/// TypeMeta says.
fn decode_typed(data: &[u8], api_version: &str, kind: &str) -> Result<Value, String> {
    let (_, _, raw) = read_unknown(data, 0)?;
    let msg = schema::root(api_version, kind)
        .ok_or_else(|| format!("no protobuf decoding for {api_version}, Kind={kind}"))?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String(kind.into()));
    decode::message_into(msg, raw, 1, &mut out)?;
    Ok(json_form(Value::Object(out)))
}

/// What Go's JSON encoding gives where a kind's protobuf fields do not
/// map one to one (a CRD's schemas).
fn json_form(mut obj: Value) -> Value {
    if obj.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
        jsonschema::crd_schemas_to_json(&mut obj);
    }
    obj
}

/// Decodes a `runtime.Unknown` (without the magic) at nesting `depth`;
/// RawExtension fields come back here for embedded protobuf objects.
fn decode_envelope(data: &[u8], depth: usize) -> Result<Value, String> {
    if depth > decode::MAX_DEPTH {
        return Err(format!(
            "objects nested deeper than {} levels",
            decode::MAX_DEPTH
        ));
    }
    let (api_version, kind, raw) = read_unknown(data, depth)?;
    if kind.is_empty() {
        return Err(format!(
            "Object 'Kind' is missing in protobuf body (apiVersion {api_version:?})"
        ));
    }
    if api_version.is_empty() {
        return Err(format!(
            "Object 'apiVersion' is missing in protobuf body (kind {kind:?})"
        ));
    }
    let msg = schema::root(&api_version, &kind).ok_or_else(|| {
        format!("no protobuf decoding for {api_version}, Kind={kind}; send JSON instead")
    })?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version));
    out.insert("kind".into(), Value::String(kind));
    decode::message_into(msg, raw, depth + 1, &mut out)?;
    Ok(json_form(Value::Object(out)))
}

/// Reads the Unknown envelope: (apiVersion, kind, raw). contentEncoding and
/// contentType are ignored, as kube-apiserver ignores them: the raw bytes of
/// a request are always the protobuf encoding of the named kind.
fn read_unknown(data: &[u8], depth: usize) -> Result<(String, String, &[u8]), String> {
    let mut r = Reader::new(data);
    let (mut api_version, mut kind, mut raw): (String, String, &[u8]) = Default::default();
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        match tag {
            1 => {
                let mut tm = Reader::new(decode::expect_len(wt, &mut r)?);
                while !tm.is_empty() {
                    let (t, w) = tm.key()?;
                    match t {
                        1 => api_version = decode::string(decode::expect_len(w, &mut tm)?),
                        2 => kind = decode::string(decode::expect_len(w, &mut tm)?),
                        _ => tm.skip(t, w, decode::MAX_DEPTH - depth)?,
                    }
                }
            }
            2 => raw = decode::expect_len(wt, &mut r)?,
            _ => r.skip(tag, wt, decode::MAX_DEPTH - depth)?,
        }
    }
    Ok((api_version, kind, raw))
}
