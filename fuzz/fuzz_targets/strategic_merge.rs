//! A strategic merge patch of arbitrary bytes against a pod: an error is
//! fine, a panic is a bug. The input splits at the first NUL into the live
//! object and the patch.
#![no_main]

use kubeshard_core::{patch::strategic, schema};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (live, patch) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&b"{}"[..], data),
    };
    let (Ok(live), Ok(patch)) = (
        serde_json::from_slice::<serde_json::Value>(live),
        serde_json::from_slice::<serde_json::Value>(patch),
    ) else {
        return;
    };
    let pod = schema::builtin().kind("", "v1", "Pod").unwrap();
    let _ = strategic::apply(live, patch, pod);
});
