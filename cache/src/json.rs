//! Compact JSON of a `serde_json::Value`, byte for byte what
//! `serde_json::to_writer` writes, but faster where stored objects spend
//! their bytes: long strings without escapes (a ConfigMap's data, a
//! managedFields entry's keys). serde_json checks every byte of a string
//! against its escape table one at a time and writes the string in runs
//! between escapes; here a string is first checked with a vectorisable
//! scan and, when clean (almost always), copied whole.

use serde_json::Value;

/// Keys kube's encoder writes first, in this order (a typed object's
/// TypeMeta, then its ObjectMeta), and the one it writes last.
const LEADING: [&str; 3] = ["kind", "apiVersion", "metadata"];
const TRAILING: &str = "status";

/// Appends the compact JSON of a whole object to `out`, its top-level keys
/// in the order kube's typed encoder writes them: `kind`, `apiVersion`,
/// `metadata`, the rest as given, `status` last (clients that compare
/// bodies as text, or read `kind` first, see what kube-apiserver sends).
pub fn write_object(out: &mut Vec<u8>, v: &Value) {
    let Value::Object(map) = v else {
        return write_value(out, v);
    };
    // One pass finds the placed members by comparison (no hashing: this
    // runs on every write), a second writes the rest between them.
    let mut lead: [Option<(&String, &Value)>; 3] = [None; 3];
    let mut last = None;
    for (k, item) in map {
        match k.as_str() {
            "kind" => lead[0] = Some((k, item)),
            "apiVersion" => lead[1] = Some((k, item)),
            "metadata" => lead[2] = Some((k, item)),
            TRAILING => last = Some((k, item)),
            _ => {}
        }
    }
    let middle = map
        .iter()
        .filter(|(k, _)| !LEADING.contains(&k.as_str()) && k.as_str() != TRAILING);
    write_members(out, lead.into_iter().flatten().chain(middle).chain(last));
}

/// `{"key":value,…}` of the members, in the order given.
fn write_members<'a>(out: &mut Vec<u8>, members: impl Iterator<Item = (&'a String, &'a Value)>) {
    out.push(b'{');
    for (i, (key, item)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, item);
    }
    out.push(b'}');
}

/// Appends the compact JSON of `v` to `out`.
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_with_serde(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_members(out, map.iter()),
    }
}

/// A JSON string: copied whole when nothing in it needs escaping, else
/// escaped by serde_json (so both agree on every escape's spelling).
fn write_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        write_with_serde(out, s);
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Whether JSON needs any byte of `b` escaped: quotes, backslashes and
/// control characters. No early exit, so the compiler vectorises the
/// scan; strings are short or clean, and a clean one is read whole anyway.
fn needs_escape(b: &[u8]) -> bool {
    b.iter().fold(false, |acc, &c| {
        acc | (c < 0x20) | (c == b'"') | (c == b'\\')
    })
}

fn write_with_serde<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    serde_json::to_writer(out, v).expect("numbers and strings always serialize");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[a-z\"\\\\\u{0}-\u{1f}\u{7f}é€😀]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(v in value()) {
            let mut ours = Vec::new();
            write_value(&mut ours, &v);
            prop_assert_eq!(ours, serde_json::to_vec(&v).unwrap());
        }
    }

    #[test]
    fn escapes_are_serde_jsons() {
        let v = serde_json::json!({"a\"b": "line\nnext\t\u{1}\\ \u{7f} é", "n": [1, -2, 1.5, null, true]});
        let mut ours = Vec::new();
        write_value(&mut ours, &v);
        assert_eq!(ours, serde_json::to_vec(&v).unwrap());
    }

    #[test]
    fn objects_lead_with_type_meta_and_end_with_status() {
        let v = serde_json::json!({"status": {"phase": "Running"}, "apiVersion": "v1", "spec": {"b": 1, "a": 2},
            "metadata": {"name": "x"}, "kind": "Pod", "data": null});
        let mut ours = Vec::new();
        write_object(&mut ours, &v);
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"},"spec":{"b":1,"a":2},"data":null,"status":{"phase":"Running"}}"#
        );
        let mut scalar = Vec::new();
        write_object(&mut scalar, &serde_json::json!([1]));
        assert_eq!(scalar, b"[1]");
    }

    proptest! {
        #[test]
        fn reordered_objects_hold_the_same_value(v in value()) {
            // Parsed back both ways (floats parse the same from both).
            let (mut reordered, mut plain) = (Vec::new(), Vec::new());
            write_object(&mut reordered, &v);
            write_value(&mut plain, &v);
            let a: Value = serde_json::from_slice(&reordered).unwrap();
            let b: Value = serde_json::from_slice(&plain).unwrap();
            prop_assert_eq!(a, b);
        }
    }
}
