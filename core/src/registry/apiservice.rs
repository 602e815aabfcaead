//! APIService validation as kube-aggregator's strategy does it: the name
//! is `<version>.<group>`, priorities in range, and a local APIService (no
//! `spec.service`) carries no TLS settings while a service-backed one
//! names its Service and trusts it one way only.

use crate::status::{field_invalid, field_invalid_raw, field_required, StatusCause};
use crate::validation::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::Value;

/// Fills `spec.service.port` in (443, as kube defaults it).
pub fn default(obj: &mut Value) {
    if let Some(svc) = obj
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
    {
        crate::defaults::util::set_in(svc, "port", 443);
    }
}

pub fn validate(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let text = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (group, version) = (text("/group"), text("/version"));
    let name = crate::meta::name(obj);
    let required = format!("{version}.{group}");
    if !name.is_empty() && name != required {
        out.push(field_invalid(
            "metadata.name",
            name,
            &format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        out.push(field_required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for e in is_dns1123_subdomain(group) {
            out.push(field_invalid("spec.group", group, &e));
        }
    }
    for e in is_dns1035_label(version) {
        out.push(field_invalid("spec.version", version, &e));
    }
    let int = |p: &str| spec.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let gp = int("/groupPriorityMinimum");
    if !(1..=20000).contains(&gp) {
        out.push(field_invalid_raw(
            "spec.groupPriorityMinimum",
            &gp.to_string(),
            "must be positive and less than 20000",
        ));
    }
    let vp = int("/versionPriority");
    if !(1..=1000).contains(&vp) {
        out.push(field_invalid_raw(
            "spec.versionPriority",
            &vp.to_string(),
            "must be positive and less than 1000",
        ));
    }
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
    let ca_bundle = text("/caBundle");
    if !ca_bundle.is_empty() && decode_ca_bundle(ca_bundle).is_none() {
        out.push(field_invalid(
            "spec.caBundle",
            "<bytes>",
            "must be base64-encoded bytes",
        ));
    }
    match spec.get("service").filter(|s| !s.is_null()) {
        None => {
            if !ca_bundle.is_empty() {
                let bytes = base64_len(ca_bundle);
                out.push(field_invalid(
                    "spec.caBundle",
                    &format!("{bytes} bytes"),
                    "local APIServices may not have a caBundle",
                ));
            }
            if insecure {
                out.push(field_invalid_raw(
                    "spec.insecureSkipTLSVerify",
                    "true",
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
        }
        Some(svc) => {
            for field in ["namespace", "name"] {
                if svc
                    .get(field)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    out.push(field_required(&format!("spec.service.{field}"), ""));
                }
            }
            if let Some(port) = svc.get("port").and_then(Value::as_i64) {
                if !(1..=65535).contains(&port) {
                    out.push(field_invalid_raw(
                        "spec.service.port",
                        &port.to_string(),
                        "port is not valid: must be between 1 and 65535, inclusive",
                    ));
                }
            }
            if insecure && !ca_bundle.is_empty() {
                out.push(field_invalid_raw(
                    "spec.insecureSkipTLSVerify",
                    "true",
                    "may not be true if caBundle is present",
                ));
            }
        }
    }
    for (i, c) in crate::meta::array_at(obj, "/status/conditions")
        .iter()
        .enumerate()
    {
        let status = c.get("status").and_then(Value::as_str).unwrap_or("");
        if !matches!(status, "True" | "False" | "Unknown") {
            out.push(crate::status::field_not_supported(
                &format!("status.conditions[{i}].status"),
                status,
                &["True", "False", "Unknown"],
            ));
        }
    }
    out
}

/// The bytes of a `caBundle` as Go's JSON decoder reads them (line
/// breaks skipped: a bundle wrapped at 76 columns works in kube).
pub fn decode_ca_bundle(b64: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let text: String = b64.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

fn base64_len(b64: &str) -> usize {
    decode_ca_bundle(b64).map_or(0, |b| b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(obj: &Value) -> Vec<String> {
        validate(obj).into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn kube_rules() {
        let ok = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {
            "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
            "versionPriority": 100, "insecureSkipTLSVerify": true,
            "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}}});
        assert!(fields(&ok).is_empty(), "{:?}", validate(&ok));
        let local = json!({"metadata": {"name": "v1."}, "spec": {"version": "v1",
            "groupPriorityMinimum": 18000, "versionPriority": 1}});
        assert!(fields(&local).is_empty());
        let bad = json!({"metadata": {"name": "v1.wrong"}, "spec": {
            "group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 0,
            "versionPriority": 1001, "caBundle": "AAAA", "insecureSkipTLSVerify": true}});
        assert_eq!(
            fields(&bad),
            [
                "metadata.name",
                "spec.groupPriorityMinimum",
                "spec.versionPriority",
                "spec.caBundle",
                "spec.insecureSkipTLSVerify"
            ]
        );
        let both = json!({"metadata": {"name": "v1.x.io"}, "spec": {"group": "x.io",
            "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1, "caBundle": "AAAA",
            "insecureSkipTLSVerify": true, "service": {"namespace": "", "name": "s"}}});
        assert_eq!(
            fields(&both),
            ["spec.service.namespace", "spec.insecureSkipTLSVerify"]
        );
        let wrapped = json!({"metadata": {"name": "v1.x.io"}, "spec": {"group": "x.io",
            "version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
            "caBundle": "AAAA\nAAAA", "service": {"namespace": "n", "name": "s"}}});
        assert!(
            fields(&wrapped).is_empty(),
            "line breaks are skipped, as Go skips them"
        );
        let mut garbled = wrapped.clone();
        garbled["spec"]["caBundle"] = json!("%%%");
        assert_eq!(fields(&garbled), ["spec.caBundle"]);
        let mut svc = json!({"spec": {"service": {"name": "s"}}});
        default(&mut svc);
        assert_eq!(svc["spec"]["service"]["port"], 443);
    }
}
