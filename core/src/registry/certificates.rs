//! CertificateSigningRequests (certificates.k8s.io/v1): who asked is
//! recorded by the server, the spec never changes after create, and the
//! decision (Approved or Denied) is written only through `/approval` —
//! a signer writing `/status` cannot approve its own requests.

use crate::authn::UserInfo;
use crate::status::StatusCause;
use crate::status::{field_forbidden, field_invalid, field_not_supported, field_required};
use base64::Engine;
use serde_json::{json, Map, Value};

const APPROVED: &str = "Approved";
const DENIED: &str = "Denied";
const DECISIONS: [&str; 2] = [APPROVED, DENIED];

/// The signer v1 no longer accepts new requests for.
const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";
/// The shortest certificate lifetime a request may ask for.
const MIN_EXPIRATION_SECONDS: i64 = 600;
const KEY_USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// Records the requesting user in the spec, whatever the body claimed.
pub fn stamp_requester(obj: &mut Value, user: &UserInfo) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["username", "uid", "groups", "extra"] {
        spec.remove(key);
    }
    if !user.name.is_empty() {
        spec.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

/// An update of the object itself changes its metadata only.
pub(super) fn keep_spec(new: &mut Value, old: &Value) {
    if let (Some(n), Some(spec)) = (new.as_object_mut(), old.get("spec")) {
        n.insert("spec".into(), spec.clone());
    }
}

/// A `/status` write: the decision conditions stay as stored (a write
/// that adds or removes one is refused by validation).
pub fn on_status_update(new: &mut Value, old: &Value) {
    for kind in DECISIONS {
        let old_at = indices(old, kind);
        let new_at = indices(new, kind);
        if old_at.len() != new_at.len() {
            continue;
        }
        for (o, n) in old_at.into_iter().zip(new_at) {
            if let (Some(c), Some(slot)) = (condition(old, o).cloned(), condition_mut(new, n)) {
                *slot = c;
            }
        }
    }
    stamp_condition_times(new, old);
}

/// What a `/status` write may not do: add or remove a decision (only
/// `/approval` decides).
pub fn status_update_causes(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for kind in DECISIONS {
        let (before, after) = (indices(old, kind).len(), indices(new, kind).len());
        let verb = match after.cmp(&before) {
            std::cmp::Ordering::Greater => "add",
            std::cmp::Ordering::Less => "remove",
            std::cmp::Ordering::Equal => continue,
        };
        causes.push(field_forbidden(
            "status.conditions",
            &format!("updates may not {verb} a condition of type {kind:?}"),
        ));
    }
    causes
}

/// A `/approval` write: the stored request with the written conditions
/// (its metadata as stored).
pub fn approval(requested: &Value, old: &Value) -> Value {
    let mut out = old.clone();
    let conditions = requested
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or_else(|| json!([]));
    if let Some(root) = out.as_object_mut() {
        let status = root.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        status["conditions"] = conditions;
    }
    stamp_condition_times(&mut out, old);
    out
}

/// kube fills in a condition's update and transition times when the
/// writer left them out; a condition that did not change keeps its
/// transition time.
fn stamp_condition_times(new: &mut Value, old: &Value) {
    let now = super::lifecycle::format_time(chrono::Utc::now());
    let old_conditions = conditions(old).to_vec();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        c.entry("lastUpdateTime").or_insert_with(|| json!(now));
        if c.get("lastTransitionTime").is_none_or(Value::is_null) {
            let same =
                |o: &&Value| o.get("type") == c.get("type") && o.get("status") == c.get("status");
            let at = old_conditions
                .iter()
                .find(same)
                .and_then(|o| o.get("lastTransitionTime"))
                .filter(|t| !t.is_null())
                .cloned()
                .unwrap_or_else(|| json!(now));
            c.insert("lastTransitionTime".into(), at);
        }
    }
}

/// An approved request not yet denied, failed or issued: what a signer
/// has to act on.
pub fn awaits_certificate(csr: &Value) -> bool {
    let holds = |kind: &str| {
        conditions(csr)
            .iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    };
    holds(APPROVED)
        && !holds(DENIED)
        && !holds("Failed")
        && csr
            .pointer("/status/certificate")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn condition(obj: &Value, i: usize) -> Option<&Value> {
    conditions(obj).get(i)
}

fn condition_mut(obj: &mut Value, i: usize) -> Option<&mut Value> {
    obj.pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
        .and_then(|l| l.get_mut(i))
}

fn indices(obj: &Value, kind: &str) -> Vec<usize> {
    conditions(obj)
        .iter()
        .enumerate()
        .filter(|(_, c)| c.get("type").and_then(Value::as_str) == Some(kind))
        .map(|(i, _)| i)
        .collect()
}

/// The request itself: a PEM certificate request, a signer, usages.
pub(super) fn validate(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").and_then(Value::as_object);
    let empty = Map::new();
    let spec = spec.unwrap_or(&empty);
    match spec.get("request").and_then(Value::as_str) {
        None | Some("") => causes.push(field_required("spec.request", "")),
        Some(r) if !is_pem_request(r) => causes.push(field_invalid(
            "spec.request",
            "<request>",
            "PEM block type must be CERTIFICATE REQUEST",
        )),
        Some(_) => {}
    }
    match spec.get("signerName").and_then(Value::as_str) {
        None | Some("") => causes.push(field_required("spec.signerName", "")),
        Some(s) => causes.extend(validate_signer(s)),
    }
    match spec.get("usages").and_then(Value::as_array) {
        None => causes.push(field_required("spec.usages", "")),
        Some(list) => {
            for (i, u) in list.iter().enumerate() {
                let u = u.as_str().unwrap_or_default();
                if !KEY_USAGES.contains(&u) {
                    causes.push(field_not_supported(
                        &format!("spec.usages[{i}]"),
                        u,
                        KEY_USAGES,
                    ));
                }
            }
        }
    }
    if let Some(secs) = spec.get("expirationSeconds").and_then(Value::as_i64) {
        if secs < MIN_EXPIRATION_SECONDS {
            causes.push(field_invalid(
                "spec.expirationSeconds",
                &secs.to_string(),
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    causes.extend(validate_decisions(obj));
    causes
}

/// What may change between two stored versions: a decision, once made,
/// stays.
pub(super) fn validate_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for kind in DECISIONS {
        let (before, after) = (indices(old, kind).len(), indices(new, kind).len());
        if after < before {
            causes.push(field_forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    causes
}

/// At most one decision, and only a true one.
fn validate_decisions(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let has = |kind| !indices(obj, kind).is_empty();
    if has(APPROVED) && has(DENIED) {
        causes.push(field_invalid(
            "status.conditions",
            APPROVED,
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    for (i, c) in conditions(obj).iter().enumerate() {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or_default();
        let path = format!("status.conditions[{i}]");
        if kind.is_empty() {
            causes.push(field_required(&format!("{path}.type"), ""));
            continue;
        }
        if DECISIONS.contains(&kind) {
            if indices(obj, kind).len() > 1 {
                causes.push(crate::status::field_duplicate(
                    &format!("{path}.type"),
                    kind,
                ));
            }
            let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
            if status != "True" {
                causes.push(field_not_supported(
                    &format!("{path}.status"),
                    status,
                    &["True"],
                ));
            }
        }
    }
    causes
}

fn validate_signer(signer: &str) -> Vec<StatusCause> {
    let path = "spec.signerName";
    if signer == LEGACY_UNKNOWN {
        return vec![field_invalid(
            path,
            signer,
            "the legacy signerName is not allowed via this API version",
        )];
    }
    let Some((domain, rest)) = signer.split_once('/') else {
        return vec![field_invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut causes = Vec::new();
    if !domain.contains('.') || !crate::validation::is_dns1123_subdomain(domain).is_empty() {
        causes.push(field_invalid(
            path,
            signer,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if rest.is_empty() {
        causes.push(field_invalid(path, signer, "the path may not be empty"));
    }
    causes
}

fn is_pem_request(encoded: &str) -> bool {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    text.contains("-----BEGIN CERTIFICATE REQUEST-----")
        && text.contains("-----END CERTIFICATE REQUEST-----")
}
