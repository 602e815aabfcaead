//! meta.k8s.io/v1 Table rendering for kubectl's server-side printing.
//! Every kind gets NAME and AGE; per-kind columns come with the kubectl
//! surface work.

use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use serde_json::{json, Value};
use std::sync::Arc;

fn columns() -> Value {
    json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.", "priority": 0},
        {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}
    ])
}

/// A Table of objects; each row carries the object's metadata as
/// PartialObjectMetadata (kube's default `includeObject=Metadata`).
pub fn for_objects(
    _info: &ResourceInfo,
    items: &[Arc<StoredObject>],
    cont: Option<&str>,
    rv: &str,
) -> Value {
    let now = chrono::Utc::now();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let v = o.to_value();
            let md = v.get("metadata").cloned().unwrap_or_else(|| json!({}));
            let age = md
                .get("creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| human_duration((now - t.with_timezone(&chrono::Utc)).num_seconds()))
                .unwrap_or_else(|| "<unknown>".into());
            json!({
                "cells": [o.name.as_ref(), age],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md}
            })
        })
        .collect();
    let mut metadata = json!({});
    if !rv.is_empty() {
        metadata["resourceVersion"] = json!(rv);
    }
    if let Some(c) = cont {
        metadata["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns(),
        "rows": rows
    })
}

/// kube's short human durations: "45s", "3m20s", "5h", "12d", "3y45d".
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        let rem = s % 60;
        return if rem == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{rem}s")
        };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = s / 3600;
    if h < 8 {
        let rem = (s % 3600) / 60;
        return if rem == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rem}m")
        };
    }
    if h < 48 {
        return format!("{h}h");
    }
    if h < 24 * 8 {
        let d = h / 24;
        let rem = h % 24;
        return if rem == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rem}h")
        };
    }
    if h < 24 * 365 * 2 {
        return format!("{}d", h / 24);
    }
    if h < 24 * 365 * 8 {
        let y = h / 24 / 365;
        let d = (h / 24) % 365;
        return if d == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{d}d")
        };
    }
    format!("{}y", h / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn durations_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(60 * 30), "30m");
        assert_eq!(human_duration(3600 * 5 + 60 * 7), "5h7m");
        assert_eq!(human_duration(3600 * 30), "30h");
        assert_eq!(human_duration(3600 * 24 * 3), "3d");
        assert_eq!(human_duration(-5), "<invalid>");
    }
}
