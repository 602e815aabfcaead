//! Services across updates: the cluster IPs and families the allocator
//! gave a Service stay with it. An update that leaves them out keeps
//! them (kube patches them in from the stored Service); one that changes
//! them is refused.

use crate::status::{field_invalid, StatusCause};
use serde_json::Value;

const ALLOCATED: [&str; 4] = ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"];

/// An ExternalName Service: a DNS alias, holding no cluster address.
pub fn is_external_name(obj: &Value) -> bool {
    obj.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName")
}

fn unset(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

pub(super) fn keep_allocated(new: &mut Value, old: &Value) {
    if is_external_name(new) {
        return;
    }
    let (Some(spec), Some(old_spec)) = (
        new.get_mut("spec").and_then(Value::as_object_mut),
        old.get("spec").and_then(Value::as_object),
    ) else {
        return;
    };
    for field in ALLOCATED {
        if unset(spec.get(field)) && !unset(old_spec.get(field)) {
            spec.insert(field.into(), old_spec[field].clone());
        }
    }
}

pub(super) fn validate_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    if is_external_name(new) || is_external_name(old) {
        return vec![];
    }
    let ips = |o: &Value| {
        o.pointer("/spec/clusterIPs")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (before, after) = (ips(old), ips(new));
    if unset(Some(&before)) || before == after {
        return vec![];
    }
    let first = after.get(0).and_then(Value::as_str).unwrap_or_default();
    vec![field_invalid(
        "spec.clusterIPs[0]",
        first,
        "may not change once set",
    )]
}
