//! A JSON patch of arbitrary bytes against a small config map, through
//! core's bounded `apply`: an error is fine, a panic (or a stack overflow)
//! is a bug, and so is a document nested deeper than `MAX_DEPTH` or grown
//! past what the patch can account for: the copy budget plus what the
//! patch's own text adds. Numbers can come out longer than they went in
//! (`1e15` is written `1000000000000000.0`), never more than five times,
//! so the patch's length counts five times.
#![no_main]

use kubeshard_core::patch::json::{self, MAX_COPY_BYTES};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const NUMBER_EXPANSION: usize = 5;

fuzz_target!(|data: &[u8]| {
    let Ok(patch) = serde_json::from_slice::<json::Patch>(data) else {
        return;
    };
    let mut doc = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"a": "b"}},
        "data": {"key": "value", "list": "1,2,3"},
        "binaryData": {},
    });
    let before = json::encoded_len_within(&doc, usize::MAX).unwrap();
    let _ = json::apply(&mut doc, &patch);
    let bound = before + MAX_COPY_BYTES + NUMBER_EXPANSION * data.len();
    assert!(
        json::encoded_len_within(&doc, bound).is_some(),
        "the document grew past {bound} bytes"
    );
    assert!(
        depth(&doc) <= json::MAX_DEPTH,
        "the document nests too deep"
    );
});

/// Nesting depth, recursively: fine below `MAX_DEPTH`, which is the point.
fn depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
