//! PersistentVolumeClaims across updates (kube's
//! `ValidatePersistentVolumeClaimUpdate`): the spec is fixed once
//! created, except that a binder may fill in `volumeName`, a class may be
//! given to a claim that had none, and a bound claim may grow its storage
//! request (never below what it has) or change its volume attributes
//! class.

use crate::quantity::nanos;
use crate::status::{field_forbidden, StatusCause};
use serde_json::Value;

const IMMUTABLE: &str = "spec is immutable after creation except resources.requests and \
volumeAttributesClassName for bound claims";

fn storage_request(pvc: &Value) -> Option<&Value> {
    pvc.pointer("/spec/resources/requests/storage")
}

pub(super) fn validate_claim_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let (Some(mut spec), Some(mut before)) = (new.get("spec").cloned(), old.get("spec").cloned())
    else {
        return vec![];
    };
    if spec == before {
        return vec![];
    }
    let unset = |s: &Value, key: &str| s.get(key).and_then(Value::as_str).is_none_or(str::is_empty);
    for key in ["volumeName", "storageClassName"] {
        if unset(&before, key) {
            match spec.get(key) {
                Some(v) => before[key] = v.clone(),
                None => {
                    if let Some(b) = before.as_object_mut() {
                        b.remove(key);
                    }
                }
            }
        }
    }
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        if let (Some(r), Some(old_r)) = (
            spec.pointer_mut("/resources/requests/storage"),
            storage_request(old),
        ) {
            *r = old_r.clone();
        }
        match before.get("volumeAttributesClassName") {
            Some(v) => spec["volumeAttributesClassName"] = v.clone(),
            None => {
                if let Some(s) = spec.as_object_mut() {
                    s.remove("volumeAttributesClassName");
                }
            }
        }
    }
    let mut causes = Vec::new();
    if spec != before {
        causes.push(field_forbidden("spec", IMMUTABLE));
    }
    let size = |pvc: &Value| storage_request(pvc).and_then(nanos);
    if let (Some(n), Some(o)) = (size(new), size(old)) {
        let capacity = old.pointer("/status/capacity/storage").and_then(nanos);
        if n < o && capacity.is_none_or(|c| n <= c) {
            causes.push(field_forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(size: &str, phase: &str) -> Value {
        json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
            "status": {"phase": phase, "capacity": {"storage": size}}})
    }

    #[test]
    fn a_claims_spec_is_fixed_but_for_binding_and_growth() {
        let pending = claim("1Gi", "Pending");
        let mut named = pending.clone();
        named["spec"]["volumeName"] = json!("pv-1");
        named["spec"]["storageClassName"] = json!("fast");
        assert!(validate_claim_update(&named, &pending).is_empty());
        let mut modes = pending.clone();
        modes["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(validate_claim_update(&modes, &pending)[0].field, "spec");
        assert_eq!(
            validate_claim_update(&claim("2Gi", "Pending"), &pending)[0].field,
            "spec",
            "only bound claims grow"
        );
        let bound = claim("1Gi", "Bound");
        assert!(validate_claim_update(&claim("2Gi", "Bound"), &bound).is_empty());
        let shrunk = validate_claim_update(&claim("512Mi", "Bound"), &bound);
        assert_eq!(shrunk[0].field, "spec.resources.requests.storage");
    }
}
