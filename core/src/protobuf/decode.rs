//! Schema-driven transcoding of one protobuf message into a JSON object.
//!
//! The rules mirror what Go does when kube-apiserver unmarshals the body
//! into its typed struct and a JSON client would have marshalled the same
//! struct: last value wins for scalars, repeated messages of a singular
//! field merge, unknown tags are skipped, and fields whose zero value Go's
//! `omitempty` drops (see [`Field::omit_zero`]) are left out when zero.

use super::schema::{self, Card, Field, Message, Ty};
use super::wire::{Reader, FIXED64, LEN, VARINT};
use base64::Engine;
use serde_json::{Map, Number, Value};

/// Deepest message nesting accepted; real objects stay far below it, and it
/// keeps hostile bodies from exhausting the stack.
pub(super) const MAX_DEPTH: usize = 64;

/// Decodes `data` as `msg` into `out` (fields are merged, which is also how
/// inlined structs land in their parent).
pub(super) fn message_into(
    msg: &Message,
    data: &[u8],
    depth: usize,
    out: &mut Map<String, Value>,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("objects nested deeper than {MAX_DEPTH} levels"));
    }
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        match msg.field(tag) {
            None => r.skip(tag, wt, MAX_DEPTH - depth)?,
            Some(f) => field_into(f, wt, &mut r, depth, out)
                .map_err(|e| format!("{}.{}: {e}", short_name(msg), f.json))?,
        }
    }
    Ok(())
}

fn short_name(msg: &Message) -> &'static str {
    msg.name.rsplit('.').next().unwrap_or(msg.name)
}

fn field_into(
    f: &Field,
    wt: u8,
    r: &mut Reader<'_>,
    depth: usize,
    out: &mut Map<String, Value>,
) -> Result<(), String> {
    match f.card {
        Card::Inline => {
            let Ty::Msg(i) = f.ty else {
                return Err("inline field is not a message".into());
            };
            let data = expect_len(wt, r)?;
            message_into(schema::message(i), data, depth + 1, out)
        }
        Card::One => {
            let value = value(f.ty, wt, r, depth)?;
            if f.omit_zero && is_zero(&value) {
                out.remove(f.json);
            } else if let (Value::Object(new), Some(Value::Object(old))) =
                (&value, out.get_mut(f.json))
            {
                // A singular message seen twice merges, as protobuf requires.
                merge(old, new.clone());
            } else {
                out.insert(f.json.to_string(), value);
            }
            Ok(())
        }
        Card::Rep => {
            let slot = out
                .entry(f.json)
                .or_insert_with(|| Value::Array(Vec::new()));
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            let Value::Array(items) = slot else {
                unreachable!("just made an array")
            };
            if wt == LEN && matches!(f.ty, Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64) {
                // Packed scalars: one length-delimited run of values.
                let mut packed = Reader::new(r.bytes()?);
                let inner = if f.ty == Ty::F64 { FIXED64 } else { VARINT };
                while !packed.is_empty() {
                    items.push(value(f.ty, inner, &mut packed, depth)?);
                }
            } else {
                items.push(value(f.ty, wt, r, depth)?);
            }
            Ok(())
        }
        Card::Map => {
            let (key, val) = map_entry(f.ty, expect_len(wt, r)?, depth)?;
            let slot = out
                .entry(f.json)
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Value::Object(entries) = slot {
                entries.insert(key, val);
            }
            Ok(())
        }
    }
}

/// One `map<string, T>` entry: {1: key, 2: value}. A missing key or value
/// is the type's zero value, as in Go.
fn map_entry(ty: Ty, data: &[u8], depth: usize) -> Result<(String, Value), String> {
    let mut r = Reader::new(data);
    let (mut key, mut val) = (String::new(), None);
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        match tag {
            1 => key = string(expect_len(wt, &mut r)?),
            2 => val = Some(value(ty, wt, &mut r, depth)?),
            _ => r.skip(tag, wt, MAX_DEPTH - depth)?,
        }
    }
    let val = match val {
        Some(v) => v,
        None => zero(ty, depth)?,
    };
    Ok((key, val))
}

fn zero(ty: Ty, depth: usize) -> Result<Value, String> {
    value(ty, LEN, &mut Reader::new(&[0]), depth)
}

/// Reads one value of type `ty` sent with wire type `wt`.
fn value(ty: Ty, wt: u8, r: &mut Reader<'_>, depth: usize) -> Result<Value, String> {
    Ok(match ty {
        // Two's-complement reinterpretation is how protobuf encodes signed ints.
        Ty::Bool => Value::Bool(expect_varint(wt, r)? != 0),
        Ty::I32 => Value::from(i64::from(expect_varint(wt, r)? as i32)),
        Ty::I64 => Value::from(expect_varint(wt, r)? as i64),
        Ty::F64 => {
            if wt != FIXED64 {
                return Err(format!("wire type {wt}, expected {FIXED64}"));
            }
            float(f64::from_bits(r.fixed64()?))?
        }
        Ty::Str => Value::String(string(expect_len(wt, r)?)),
        Ty::Bytes => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(expect_len(wt, r)?))
        }
        Ty::Msg(i) => {
            let mut obj = Map::new();
            message_into(schema::message(i), expect_len(wt, r)?, depth + 1, &mut obj)?;
            Value::Object(obj)
        }
        special => super::special::render(special, expect_len(wt, r)?, depth + 1)?,
    })
}

fn expect_varint(wt: u8, r: &mut Reader<'_>) -> Result<u64, String> {
    if wt != VARINT {
        return Err(format!("wire type {wt}, expected {VARINT}"));
    }
    r.varint()
}

pub(super) fn expect_len<'a>(wt: u8, r: &mut Reader<'a>) -> Result<&'a [u8], String> {
    if wt != LEN {
        return Err(format!("wire type {wt}, expected {LEN}"));
    }
    r.bytes()
}

/// Go strings may hold any bytes; its JSON encoder writes invalid UTF-8 as
/// U+FFFD, so the same lossy conversion reproduces what it would send.
pub(super) fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A double as Go's encoder writes it: integral values without a fraction
/// (so they compare equal to what a JSON client sends), and NaN or
/// infinities rejected because JSON cannot carry them.
fn float(x: f64) -> Result<Value, String> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if x.fract() == 0.0 && x.abs() < EXACT {
        // In range and integral, so the conversion is exact.
        return Ok(Value::from(x as i64));
    }
    Number::from_f64(x)
        .map(Value::Number)
        .ok_or_else(|| format!("{x} cannot be represented in JSON"))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Protobuf merge of two decodings of the same singular message: scalars
/// from `new` win, nested objects merge, arrays concatenate.
fn merge(old: &mut Map<String, Value>, new: Map<String, Value>) {
    for (k, v) in new {
        match (old.get_mut(&k), v) {
            (Some(Value::Object(o)), Value::Object(n)) => merge(o, n),
            (Some(Value::Array(o)), Value::Array(n)) => o.extend(n),
            (_, v) => {
                old.insert(k, v);
            }
        }
    }
}
