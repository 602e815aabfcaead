//! Decoding of Kubernetes protobuf request bodies into JSON.
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
mod jsonschema;
mod schema;
mod special;
mod wire;

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};
use wire::Reader;

/// The media type of Kubernetes' protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Every protobuf-encoded object starts with these bytes.
pub(crate) const MAGIC: &[u8] = b"k8s\x00";

/// True for "application/vnd.kubernetes.protobuf" (parameters ignored).
///
/// The streaming variant (`;stream=watch`) is also protobuf, so parameters
/// do not change the answer; matching is case-insensitive like media types.
pub fn is_protobuf(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case(CONTENT_TYPE)
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
