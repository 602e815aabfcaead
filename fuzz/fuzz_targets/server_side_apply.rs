//! Server-side apply of an arbitrary configuration over a live deployment,
//! then recording an update: errors are fine, panics are bugs.
#![no_main]

use kubeshard_core::apply::{self, Writer};
use kubeshard_core::schema;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(config) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let w = Writer {
        schema: schema::builtin().kind("apps", "v1", "Deployment"),
        manager: "fuzz",
        api_version: "apps/v1",
        subresource: "",
        status_is_separate: true,
        now: "2025-01-01T00:00:00Z",
    };
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"a": "b"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    if let Ok(mut merged) = apply::apply(&w, Some(&live), &config, false, "fuzz") {
        apply::update(&w, Some(&live), &mut merged);
    }
});
