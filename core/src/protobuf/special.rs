//! Messages whose JSON form is not a plain object: apimachinery types with
//! custom `MarshalJSON` methods in Go. Each renderer reproduces what Go's
//! JSON encoding of the decoded value would be, since that is what a JSON
//! client sends for the same object.

use super::decode::{expect_len, string, MAX_DEPTH};
use super::schema::Ty;
use super::wire::{Reader, VARINT};
use serde_json::Value;

/// Renders the payload of a special message of type `ty`.
pub(super) fn render(ty: Ty, data: &[u8], depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("objects nested deeper than {MAX_DEPTH} levels"));
    }
    match ty {
        Ty::Time => time(data, false),
        Ty::MicroTime => time(data, true),
        Ty::Duration => {
            let nanos = ints(data)?.first;
            Ok(Value::String(go_duration(nanos)))
        }
        Ty::IntOrString => int_or_string(data),
        Ty::Quantity => {
            let s = strings(data, 1)?.pop().unwrap_or_default();
            // An unset Quantity is zero, which Go prints as "0".
            Ok(Value::String(if s.is_empty() { "0".into() } else { s }))
        }
        Ty::FieldsV1 => embedded_json(data, depth, false),
        Ty::RawExtension => embedded_json(data, depth, true),
        Ty::StrList => Ok(Value::Array(
            strings(data, 1)?.into_iter().map(Value::String).collect(),
        )),
        other => Err(format!("{other:?} is not a special type")),
    }
}

/// Writes the payload of a special message of type `ty` from its JSON
/// form: the inverse of [`render`], as Go's marshallers lay it out (every
/// field of these small structs is a non-pointer, so all are written).
pub(super) fn write(ty: Ty, v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    use super::encode::bytes;
    use super::wire::{key, varint, LEN};
    match (ty, v) {
        // The zero time is an empty message.
        (Ty::Time | Ty::MicroTime | Ty::Duration, Value::Null) => {}
        (Ty::Time | Ty::MicroTime, Value::String(s)) => {
            let t = chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| format!("{s:?} is not an RFC 3339 time: {e}"))?;
            let nanos = if ty == Ty::MicroTime {
                t.timestamp_subsec_micros() * 1000
            } else {
                0
            };
            key(out, 1, VARINT);
            varint(out, t.timestamp() as u64);
            key(out, 2, VARINT);
            varint(out, u64::from(nanos));
        }
        (Ty::Duration, Value::String(s)) => {
            key(out, 1, VARINT);
            varint(out, parse_go_duration(s)? as u64);
        }
        (Ty::IntOrString, v) => {
            let (kind, int_val, str_val) = match v {
                Value::String(s) => (1, 0, s.as_str()),
                Value::Number(n) => (0, n.as_i64().ok_or("expected an integer")?, ""),
                Value::Null => (0, 0, ""),
                other => return Err(format!("expected an int or a string, got {other}")),
            };
            key(out, 1, VARINT);
            varint(out, kind);
            key(out, 2, VARINT);
            varint(out, i64::from(int_val as i32) as u64);
            key(out, 3, LEN);
            bytes(out, str_val.as_bytes());
        }
        (Ty::Quantity, v) => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Null => "0".into(),
                other => return Err(format!("expected a quantity, got {other}")),
            };
            key(out, 1, LEN);
            bytes(out, s.as_bytes());
        }
        (Ty::FieldsV1 | Ty::RawExtension, v) => {
            key(out, 1, LEN);
            bytes(out, &serde_json::to_vec(v).map_err(|e| e.to_string())?);
        }
        (Ty::StrList, Value::Array(items)) => {
            for item in items {
                key(out, 1, LEN);
                bytes(out, item.as_str().unwrap_or("").as_bytes());
            }
        }
        (ty, v) => return Err(format!("{v} is not a valid {ty:?}")),
    }
    Ok(())
}

/// Parses a Go duration string (`1h2m3.5s`, `-1.5ms`, `0`) into
/// nanoseconds, as Go's `time.ParseDuration` does.
pub(super) fn parse_go_duration(s: &str) -> Result<i64, String> {
    let bad = || format!("invalid duration {s:?}");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    if total > i64::MAX as f64 {
        return Err(bad());
    }
    let nanos = total.round() as i64;
    Ok(if neg { -nanos } else { nanos })
}

/// The varint fields 1 and 2 of a small message (absent ones are zero).
struct Ints {
    first: i64,
    second: i64,
}

fn ints(data: &[u8]) -> Result<Ints, String> {
    let mut r = Reader::new(data);
    let mut out = Ints {
        first: 0,
        second: 0,
    };
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        match (tag, wt) {
            // Two's complement is how protobuf carries negative ints.
            (1, VARINT) => out.first = r.varint()? as i64,
            (2, VARINT) => out.second = r.varint()? as i64,
            (1 | 2, _) => return Err(format!("field {tag}: wire type {wt}, expected {VARINT}")),
            _ => r.skip(tag, wt, MAX_DEPTH)?,
        }
    }
    Ok(out)
}

/// All values of string field `tag` in `data`, in order.
fn strings(data: &[u8], tag: u32) -> Result<Vec<String>, String> {
    let mut r = Reader::new(data);
    let mut out = Vec::new();
    while !r.is_empty() {
        let (t, wt) = r.key()?;
        if t == tag {
            out.push(string(expect_len(wt, &mut r)?));
        } else {
            r.skip(t, wt, MAX_DEPTH)?;
        }
    }
    Ok(out)
}

/// meta/v1 Time and MicroTime ({1: seconds, 2: nanos}). Go writes an empty
/// message for the zero time, which its JSON encoding renders as `null`.
/// Time drops the nanoseconds on both the protobuf and the JSON side.
fn time(data: &[u8], micro: bool) -> Result<Value, String> {
    if data.is_empty() {
        return Ok(Value::Null);
    }
    let Ints {
        first: secs,
        second: nanos,
    } = ints(data)?;
    let nanos = if micro { i64::from(nanos as i32) } else { 0 };
    let secs = secs
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or("timestamp out of range")?;
    // rem_euclid keeps this in 0..1e9, which fits u32.
    let nanos = nanos.rem_euclid(1_000_000_000) as u32;
    let t = chrono::DateTime::from_timestamp(secs, nanos).ok_or("timestamp out of range")?;
    // Go's MarshalJSON refuses years that RFC 3339 cannot spell.
    let year = chrono::Datelike::year(&t);
    if !(0..=9999).contains(&year) {
        return Err(format!("year {year} outside of range [0,9999]"));
    }
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Value::String(t.format(format).to_string()))
}

/// util/intstr IntOrString {1: type, 2: intVal, 3: strVal}.
fn int_or_string(data: &[u8]) -> Result<Value, String> {
    let mut r = Reader::new(data);
    let (mut kind, mut int_val, mut str_val) = (0u64, 0u64, String::new());
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        match (tag, wt) {
            (1, VARINT) => kind = r.varint()?,
            (2, VARINT) => int_val = r.varint()?,
            (3, _) => str_val = string(expect_len(wt, &mut r)?),
            (1 | 2, _) => return Err(format!("field {tag}: wire type {wt}, expected {VARINT}")),
            _ => r.skip(tag, wt, MAX_DEPTH)?,
        }
    }
    match kind {
        // intVal is an int32 on the wire; truncation is the protobuf rule.
        0 => Ok(Value::from(i64::from(int_val as i32))),
        1 => Ok(Value::String(str_val)),
        other => Err(format!("impossible IntOrString type {other}")),
    }
}

/// FieldsV1 and RawExtension carry their payload in bytes field 1. FieldsV1
/// always holds JSON; a RawExtension holds JSON or, when the sender used
/// protobuf for the embedded object too, a nested `k8s\0` envelope.
fn embedded_json(data: &[u8], depth: usize, allow_protobuf: bool) -> Result<Value, String> {
    let mut r = Reader::new(data);
    let mut raw: &[u8] = &[];
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        if tag == 1 {
            raw = expect_len(wt, &mut r)?;
        } else {
            r.skip(tag, wt, MAX_DEPTH)?;
        }
    }
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    if allow_protobuf && raw.starts_with(super::MAGIC) {
        return super::decode_envelope(&raw[super::MAGIC.len()..], depth + 1);
    }
    serde_json::from_slice(raw).map_err(|e| format!("embedded object is not JSON: {e}"))
}

/// Formats nanoseconds the way Go's `time.Duration.String` does, e.g.
/// `1h2m3.5s`, `1.5ms`, `0s`.
pub(super) fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    if u < 1_000_000_000 {
        let (unit, scale, width) = match u {
            0..=999 => ("ns", 1, 0),
            1_000..=999_999 => ("µs", 1_000, 3),
            _ => ("ms", 1_000_000, 6),
        };
        return format!("{sign}{}{unit}", fraction(u / scale, u % scale, width));
    }
    let secs = u / 1_000_000_000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = sign.to_string();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&fraction(s, u % 1_000_000_000, 9));
    out.push('s');
    out
}

/// `whole.frac` with `frac` zero-padded to `width` digits and trailing zeros
/// dropped; just `whole` when there is no fraction.
fn fraction(whole: u64, frac: u64, width: usize) -> String {
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_match_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_001, "1h2m3.000000001s"),
            (-1_500_000_000, "-1.5s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(go_duration(nanos), want, "{nanos}");
        }
    }

    #[test]
    fn durations_parse_as_go_prints_them() {
        for nanos in [
            0,
            1,
            1_100,
            2_200_000,
            1_500_000_000,
            90_000_000_000,
            3_723_000_000_001,
            -1_500_000_000,
        ] {
            assert_eq!(parse_go_duration(&go_duration(nanos)), Ok(nanos));
        }
        assert_eq!(parse_go_duration("1m30s"), Ok(90_000_000_000));
        for bad in ["", "-", "1", "1x", "h", "1.2.3s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn special_values_round_trip() {
        let cases = [
            (Ty::Time, Value::from("2023-11-14T22:13:20Z")),
            (Ty::MicroTime, Value::from("2023-11-14T22:13:20.123456Z")),
            (Ty::Time, Value::Null),
            (Ty::Duration, Value::from("1h2m3s")),
            (Ty::IntOrString, Value::from(8080)),
            (Ty::IntOrString, Value::from("http")),
            (Ty::Quantity, Value::from("100m")),
            (Ty::FieldsV1, serde_json::json!({"f:metadata": {}})),
            (Ty::RawExtension, serde_json::json!({"kind": "Foo"})),
            (Ty::StrList, serde_json::json!(["a", "b"])),
        ];
        for (ty, v) in cases {
            let mut out = Vec::new();
            write(ty, &v, &mut out).unwrap();
            assert_eq!(render(ty, &out, 1), Ok(v.clone()), "{ty:?}");
        }
        // Go's layout: every field of the small structs is written.
        let mut out = Vec::new();
        write(Ty::IntOrString, &Value::from(80), &mut out).unwrap();
        assert_eq!(out, [0x08, 0x00, 0x10, 0x50, 0x1a, 0x00]);
        assert!(write(Ty::Time, &Value::from("yesterday"), &mut Vec::new()).is_err());
    }

    #[test]
    fn times() {
        // seconds = 1700000000, nanos = 123456789
        let data = [
            0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06, 0x10, 0x95, 0x9a, 0xef, 0x3a,
        ];
        assert_eq!(time(&data, false), Ok(Value::from("2023-11-14T22:13:20Z")));
        assert_eq!(
            time(&data, true),
            Ok(Value::from("2023-11-14T22:13:20.123456Z"))
        );
        assert_eq!(time(&[], false), Ok(Value::Null));
        // An explicit epoch is a real time, not the zero value.
        assert_eq!(
            time(&[0x08, 0x00], false),
            Ok(Value::from("1970-01-01T00:00:00Z"))
        );
        // Year 10000 and beyond cannot be written as RFC 3339.
        let far = [0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        assert!(time(&far, false).is_err());
    }

    /// Wraps `raw` as bytes field 1, the layout of FieldsV1 and RawExtension.
    fn field1(raw: &[u8]) -> Vec<u8> {
        let mut out = vec![0x0a, u8::try_from(raw.len()).unwrap()];
        out.extend_from_slice(raw);
        out
    }

    #[test]
    fn embedded_payloads() {
        let fields = field1(br#"{"f:metadata":{"f:labels":{}}}"#);
        let want = serde_json::json!({"f:metadata": {"f:labels": {}}});
        assert_eq!(render(Ty::FieldsV1, &fields, 1), Ok(want));
        assert!(render(Ty::FieldsV1, &field1(b"{not json"), 1).is_err());
        assert_eq!(render(Ty::RawExtension, &[], 1), Ok(Value::Null));
        let json = field1(br#"{"kind":"Foo","n":1}"#);
        assert_eq!(
            render(Ty::RawExtension, &json, 1),
            Ok(serde_json::json!({"kind": "Foo", "n": 1}))
        );
        // A nested protobuf object: k8s\0 + Unknown{TypeMeta{v1, Namespace}, raw{metadata{name: x}}}.
        let mut nested = b"k8s\x00".to_vec();
        nested.extend([0x0a, 0x0f, 0x0a, 0x02, b'v', b'1', 0x12, 0x09]);
        nested.extend(b"Namespace");
        nested.extend([0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'x']);
        let want =
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        assert_eq!(render(Ty::RawExtension, &field1(&nested), 1), Ok(want));
        assert!(render(Ty::RawExtension, &field1(&nested), MAX_DEPTH).is_err());
        assert!(render(Ty::RawExtension, &field1(b"\x01\x02"), 1).is_err());
        assert_eq!(
            render(Ty::Duration, &[0x08, 0x96, 0x01], 1),
            Ok(Value::from("150ns"))
        );
        assert_eq!(render(Ty::Quantity, &[], 1), Ok(Value::from("0")));
        assert_eq!(
            render(Ty::StrList, &field1(b"a"), 1),
            Ok(serde_json::json!(["a"]))
        );
    }

    #[test]
    fn int_or_string_types() {
        assert_eq!(int_or_string(&[0x10, 0x50]), Ok(Value::from(80)));
        assert_eq!(
            int_or_string(&[0x08, 0x01, 0x1a, 0x01, b'x']),
            Ok(Value::from("x"))
        );
        assert_eq!(int_or_string(&[]), Ok(Value::from(0)));
        assert!(int_or_string(&[0x08, 0x02]).is_err());
    }
}
