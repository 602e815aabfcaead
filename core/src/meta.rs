//! Reading and writing `metadata` on objects held as JSON values.
//!
//! Objects travel as `serde_json::Value` between decode and encode; these
//! helpers keep the path-walking in one place.

use serde_json::{Map, Value};

/// Maps up to this size are searched key by key rather than hashed.
const SCAN_MAX: usize = 16;

/// `map[key]`, cheaper than the map's own lookup for the small maps
/// metadata lives in: serde_json hashes every key with SipHash, and a
/// create looked up its name and namespace alone a dozen times. A scan
/// compares lengths first, so most keys are passed over in one
/// comparison.
pub fn member<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() > SCAN_MAX {
        return map.get(key);
    }
    map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
}

/// `obj[key]` for an object (None for anything else), as [`member`].
pub fn field<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    member(obj.as_object()?, key)
}

pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    field(obj, "metadata")?.as_object()
}

/// `metadata` as a mutable map, created when absent or not an object.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = match obj {
        Value::Object(m) => m,
        other => {
            *other = Value::Object(Map::new());
            other.as_object_mut().expect("just set")
        }
    };
    let md = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !md.is_object() {
        *md = Value::Object(Map::new());
    }
    md.as_object_mut().expect("just set")
}

/// A string at a JSON pointer, "" when absent.
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The array at a JSON pointer, empty when absent.
pub fn array_at<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    member(metadata(obj)?, field)?.as_str()
}

pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace").unwrap_or("")
}

pub fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion").unwrap_or("")
}

pub fn set_meta(obj: &mut Value, field: &str, value: Value) {
    metadata_mut(obj).insert(field.to_string(), value);
}

pub fn remove_meta(obj: &mut Value, field: &str) {
    metadata_mut(obj).remove(field);
}

/// Labels as owned pairs, sorted by key; non-string values are skipped
/// (validation rejects them before anything is stored).
pub fn labels(obj: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = metadata(obj)
        .and_then(|m| member(m, "labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The value at a dotted path rendered the way kube's field selectors see
/// it: strings as is, booleans and numbers as text, missing as "".
pub fn field_value<K: AsRef<str>>(obj: &Value, path: &[K]) -> String {
    let mut cur = obj;
    for p in path {
        match cur.get(p.as_ref()) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// Parses a decimal resourceVersion; "" and "0" have meanings of their own
/// to callers, so this only accepts what kube accepts as a number.
pub fn parse_resource_version(rv: &str) -> Option<u64> {
    if rv.is_empty() || !rv.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rv.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_and_writes_metadata() {
        let mut o = json!({"metadata": {"name": "a", "labels": {"z": "1", "a": "2", "n": 3}}});
        assert_eq!(name(&o), "a");
        assert_eq!(namespace(&o), "");
        assert_eq!(
            labels(&o),
            vec![("a".into(), "2".into()), ("z".into(), "1".into())]
        );
        set_meta(&mut o, "namespace", json!("ns"));
        assert_eq!(namespace(&o), "ns");
        let mut bare = json!(5);
        set_meta(&mut bare, "name", json!("x"));
        assert_eq!(name(&bare), "x");
    }

    #[test]
    fn field_values_render_like_kube() {
        let o = json!({"spec": {"nodeName": "n1", "hostNetwork": true, "replicas": 3}});
        assert_eq!(field_value(&o, &["spec", "nodeName"]), "n1");
        assert_eq!(field_value(&o, &["spec", "hostNetwork"]), "true");
        assert_eq!(field_value(&o, &["spec", "replicas"]), "3");
        assert_eq!(field_value(&o, &["status", "phase"]), "");
    }

    #[test]
    fn resource_versions() {
        assert_eq!(parse_resource_version("42"), Some(42));
        assert_eq!(parse_resource_version(""), None);
        assert_eq!(parse_resource_version("-1"), None);
        assert_eq!(parse_resource_version("1e3"), None);
    }

    proptest::proptest! {
        /// The scan and the map's own lookup agree, on both sides of the
        /// size where one hands over to the other.
        #[test]
        fn member_is_the_maps_lookup(
            keys in proptest::collection::vec("[a-d]{0,3}", 0..40),
            probe in "[a-d]{0,3}",
        ) {
            let map: Map<String, Value> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), Value::from(i)))
                .collect();
            proptest::prop_assert_eq!(member(&map, &probe), map.get(&probe));
            for k in &keys {
                proptest::prop_assert_eq!(member(&map, k), map.get(k));
            }
        }
    }
}
