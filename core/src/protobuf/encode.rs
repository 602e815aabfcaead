//! Schema-driven transcoding of a JSON object into one protobuf message:
//! the inverse of `decode.rs`, for responses to clients that asked for
//! `application/vnd.kubernetes.protobuf`.
//!
//! The output follows what Go's generated marshallers write for the same
//! object, so client-go decodes it into the structs a JSON client would
//! get: fields in tag order, map entries sorted by key, repeated scalars
//! unpacked (proto2), `null` as absent, and the zero value of a field
//! Go's JSON drops (`omitempty` on a non-pointer field, which protobuf
//! always carries) written when the JSON leaves it out.
//!
//! Nested messages are written in place: one byte is reserved for the
//! length and the bytes are moved up in the rare case the length needs
//! more (a message of 128 bytes or more), so an object is encoded in one
//! pass and one buffer.

use super::schema::{self, Card, Field, Message, Ty};
use super::wire::{key, varint, FIXED64, LEN, VARINT};
use base64::Engine;
use serde_json::{Map, Value};

/// Deepest JSON nesting encoded; stored objects are validated far below
/// it, and it keeps the recursion bounded.
const MAX_DEPTH: usize = 100;

/// Writes `obj`'s fields as the fields of `msg` (no key or length of its
/// own: the caller frames it).
pub(super) fn message(
    msg: &Message,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("objects nested deeper than {MAX_DEPTH} levels"));
    }
    for f in msg.fields {
        field(f, obj, out, depth).map_err(|e| format!("{}.{}: {e}", short_name(msg), f.json))?;
    }
    Ok(())
}

fn short_name(msg: &Message) -> &'static str {
    msg.name.rsplit('.').next().unwrap_or(msg.name)
}

fn field(
    f: &Field,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), String> {
    if f.card == Card::Inline {
        // An embedded struct's fields live in the parent's object; Go
        // writes the embedded message whatever it holds.
        let Ty::Msg(i) = f.ty else {
            return Err("inline field is not a message".into());
        };
        return nested(out, f.tag, |out| {
            message(schema::message(i), obj, out, depth + 1)
        });
    }
    let v = match obj.get(f.json) {
        // Go's JSON writes `null` for a non-pointer Time at zero (a nil
        // pointer is left out), and its protobuf an empty message.
        Some(Value::Null) if matches!(f.ty, Ty::Time | Ty::MicroTime) && f.card == Card::One => {
            key(out, f.tag, LEN);
            out.push(0);
            return Ok(());
        }
        None | Some(Value::Null) => {
            if f.omit_zero && f.card == Card::One {
                zero(f, out);
            }
            return Ok(());
        }
        Some(v) => v,
    };
    match f.card {
        Card::One | Card::Inline => value(f.ty, f.tag, v, out, depth),
        Card::Rep => {
            let items = v.as_array().ok_or("expected an array")?;
            for item in items {
                value(f.ty, f.tag, item, out, depth)?;
            }
            Ok(())
        }
        Card::Map => {
            let entries = v.as_object().ok_or("expected an object")?;
            let mut keys: Vec<&String> = entries.keys().collect();
            keys.sort_unstable();
            for k in keys {
                nested(out, f.tag, |out| {
                    key(out, 1, LEN);
                    bytes(out, k.as_bytes());
                    value(f.ty, 2, &entries[k], out, depth)
                })?;
            }
            Ok(())
        }
    }
}

/// The zero value Go writes for a non-pointer scalar the JSON left out.
fn zero(f: &Field, out: &mut Vec<u8>) {
    match f.ty {
        Ty::Str | Ty::Bytes => {
            key(out, f.tag, LEN);
            out.push(0);
        }
        Ty::Bool | Ty::I32 | Ty::I64 => {
            key(out, f.tag, VARINT);
            out.push(0);
        }
        Ty::F64 => {
            key(out, f.tag, FIXED64);
            out.extend_from_slice(&[0; 8]);
        }
        // Messages the oracle marks are never omitted by Go's JSON.
        _ => {}
    }
}

/// Writes one value of type `ty` as field `tag`. `null` inside an array
/// or map is the type's zero value, as Go would hold it.
fn value(ty: Ty, tag: u32, v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match ty {
        Ty::Str => {
            key(out, tag, LEN);
            bytes(out, str_of(v)?.as_bytes());
        }
        Ty::Bytes => {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(str_of(v)?)
                .map_err(|e| format!("not base64: {e}"))?;
            key(out, tag, LEN);
            bytes(out, &raw);
        }
        Ty::Bool => {
            key(out, tag, VARINT);
            out.push(u8::from(v.as_bool().unwrap_or(false)));
        }
        // Two's complement, sign-extended to 64 bits, is protobuf's int32.
        Ty::I32 => {
            key(out, tag, VARINT);
            varint(out, i64::from(int_of(v)? as i32) as u64);
        }
        Ty::I64 => {
            key(out, tag, VARINT);
            varint(out, int_of(v)? as u64);
        }
        Ty::F64 => {
            let x = match v {
                Value::Null => 0.0,
                v => v.as_f64().ok_or("expected a number")?,
            };
            key(out, tag, FIXED64);
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        Ty::Msg(i) => {
            let empty = Map::new();
            let obj = match v {
                Value::Null => &empty,
                v => v.as_object().ok_or("expected an object")?,
            };
            nested(out, tag, |out| {
                message(schema::message(i), obj, out, depth + 1)
            })?;
        }
        special => nested(out, tag, |out| super::special::write(special, v, out))?,
    }
    Ok(())
}

fn str_of(v: &Value) -> Result<&str, String> {
    match v {
        Value::String(s) => Ok(s),
        Value::Null => Ok(""),
        other => Err(format!("expected a string, got {other}")),
    }
}

fn int_of(v: &Value) -> Result<i64, String> {
    match v {
        Value::Null => Ok(0),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))
            .ok_or_else(|| format!("expected an integer, got {n}")),
        other => Err(format!("expected an integer, got {other}")),
    }
}

/// A length-delimited payload.
pub(super) fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Field `tag` holding what `body` writes, its length filled in after.
pub(super) fn nested(
    out: &mut Vec<u8>,
    tag: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
) -> Result<(), String> {
    key(out, tag, LEN);
    let at = out.len();
    out.push(0);
    body(out)?;
    let len = out.len() - at - 1;
    if len < 0x80 {
        // Fits the reserved byte: the common case, no move.
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        varint(&mut prefix, len as u64);
        out.splice(at..at + 1, prefix);
    }
    Ok(())
}
