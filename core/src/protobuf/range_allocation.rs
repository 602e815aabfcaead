//! core/v1 RangeAllocation, the one stored kind no API serves: kube keeps
//! its node-port bitmap in it (`ranges/servicenodeports`), and a server
//! sharing kube's etcd must read and write that bitmap as kube does. It
//! has three fields (metadata, range, data), so it is written by hand
//! rather than through the generated schema, which holds served kinds.

use super::wire::{key, Reader, LEN};
use super::{decode, encode, read_unknown, type_meta, ENVELOPE_TAIL, MAGIC};

const API_VERSION: &str = "v1";
const KIND: &str = "RangeAllocation";

/// The stored form of a RangeAllocation: `range` as kube's flag writes it
/// (`30000-32767`), `data` its bitmap.
pub fn encode_range_allocation(range: &str, data: &[u8]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(16 + range.len() + data.len());
    key(&mut raw, 1, LEN);
    encode::bytes(&mut raw, &[]);
    key(&mut raw, 2, LEN);
    encode::bytes(&mut raw, range.as_bytes());
    key(&mut raw, 3, LEN);
    encode::bytes(&mut raw, data);
    let mut out = MAGIC.to_vec();
    key(&mut out, 1, LEN);
    encode::bytes(&mut out, &type_meta(API_VERSION, KIND));
    key(&mut out, 2, LEN);
    encode::bytes(&mut out, &raw);
    out.extend_from_slice(ENVELOPE_TAIL);
    out
}

/// The range and bitmap of a stored RangeAllocation, in protobuf or (as a
/// server with `--storage-media-type=application/json` writes it) JSON.
pub fn decode_range_allocation(stored: &[u8]) -> Result<(String, Vec<u8>), String> {
    let Some(envelope) = stored.strip_prefix(MAGIC) else {
        return from_json(stored);
    };
    let (api_version, kind, raw) = read_unknown(envelope, 0)?;
    if (api_version.as_str(), kind.as_str()) != (API_VERSION, KIND) {
        return Err(format!(
            "expected a v1 RangeAllocation, found {api_version}, Kind={kind}"
        ));
    }
    let (mut range, mut data) = (String::new(), Vec::new());
    let mut r = Reader::new(raw);
    while !r.is_empty() {
        let (tag, wt) = r.key()?;
        match tag {
            2 => range = decode::string(decode::expect_len(wt, &mut r)?),
            3 => data = decode::expect_len(wt, &mut r)?.to_vec(),
            _ => r.skip(tag, wt, decode::MAX_DEPTH)?,
        }
    }
    Ok((range, data))
}

fn from_json(stored: &[u8]) -> Result<(String, Vec<u8>), String> {
    use base64::Engine;
    let v: serde_json::Value = serde_json::from_slice(stored).map_err(|e| e.to_string())?;
    let range = v.get("range").and_then(|r| r.as_str()).unwrap_or_default();
    let data = v.get("data").and_then(|d| d.as_str()).unwrap_or_default();
    let data = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("RangeAllocation data: {e}"))?;
    Ok((range.to_string(), data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_allocation_round_trips_in_either_form() {
        let bytes = encode_range_allocation("30000-32767", &[0x80, 0x01]);
        assert!(bytes.starts_with(MAGIC));
        let (range, data) = decode_range_allocation(&bytes).unwrap();
        assert_eq!(
            (range.as_str(), data.as_slice()),
            ("30000-32767", &[0x80, 0x01][..])
        );
        let json = br#"{"kind":"RangeAllocation","apiVersion":"v1","metadata":{},"range":"1-9","data":"AQ=="}"#;
        assert_eq!(
            decode_range_allocation(json).unwrap(),
            ("1-9".into(), vec![1])
        );
        let other = crate::protobuf::encode_object(&serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}))
        .unwrap()
        .into_object();
        assert!(decode_range_allocation(&other).is_err());
    }
}
