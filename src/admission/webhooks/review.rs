//! AdmissionReview: the request a webhook is sent (v1 or v1beta1, the
//! same fields) and how its answer is checked, as kube checks it.

use crate::admission::Attributes;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use serde_json::{json, Map, Value};

/// The `request` of an AdmissionReview, without its objects (the match
/// conditions' `request` variable is the same value).
/// `at` is the resource (version) the receiver matched.
pub fn request(a: &Attributes<'_>, at: &ResourceInfo, object: Option<&Value>) -> Value {
    let own = a.resource;
    // A subresource write whose body is an object of its own (an
    // Eviction, a TokenRequest) is of that kind; otherwise the kind is
    // the resource's.
    let kind = |info: &ResourceInfo| match object {
        Some(o) if !a.subresource.is_empty() && meta::str_at(o, "/kind") != info.kind => {
            let (group, version) = match meta::str_at(o, "/apiVersion").split_once('/') {
                Some((g, v)) => (g.to_string(), v.to_string()),
                None => (String::new(), meta::str_at(o, "/apiVersion").to_string()),
            };
            json!({"group": group, "version": version, "kind": meta::str_at(o, "/kind")})
        }
        _ => json!({"group": info.group, "version": info.version, "kind": info.kind}),
    };
    let resource = |info: &kubeshard_core::catalog::ResourceInfo| json!({"group": info.group, "version": info.version, "resource": info.plural});
    let mut r = Map::new();
    r.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    r.insert("kind".into(), kind(at));
    r.insert("resource".into(), resource(at));
    if !a.subresource.is_empty() {
        r.insert("subResource".into(), json!(a.subresource));
        r.insert("requestSubResource".into(), json!(a.subresource));
    }
    r.insert("requestKind".into(), kind(own));
    r.insert("requestResource".into(), resource(own));
    if !a.name.is_empty() {
        r.insert("name".into(), json!(a.name));
    }
    if !a.namespace.is_empty() {
        r.insert("namespace".into(), json!(a.namespace));
    }
    r.insert("operation".into(), json!(a.operation.as_str()));
    r.insert("userInfo".into(), a.user.to_json());
    r.insert("dryRun".into(), json!(a.dry_run));
    r.insert("options".into(), a.options.to_value(a.dry_run));
    Value::Object(r)
}

/// The whole review for `version`, objects included.
pub fn review(
    version: &str,
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let mut request = request.clone();
    request["object"] = object.cloned().unwrap_or(Value::Null);
    request["oldObject"] = old.cloned().unwrap_or(Value::Null);
    json!({
        "apiVersion": format!("admission.k8s.io/{version}"),
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// A webhook's answer, checked.
#[derive(Debug, Default)]
pub struct Answer {
    pub allowed: bool,
    /// The refusal's Status, as the webhook gave it.
    pub result: Option<Value>,
    /// A JSONPatch (decoded from base64), mutating webhooks only.
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// Reads the webhook's answer as kube does for `version`, for the
/// request `uid`; the error is kube's wording.
pub fn answer(body: &[u8], version: &str, uid: &str, mutating: bool) -> Result<Answer, String> {
    use base64::Engine;
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let Some(r) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let patch = match r.get("patch") {
        Some(Value::String(p)) if !p.is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
        _ => None,
    };
    let patch_type = r.get("patchType").and_then(Value::as_str);
    if version == "v1" {
        if meta::str_at(r, "/uid") != uid {
            return Err(format!(
                "expected response.uid={uid:?}, got {:?}",
                meta::str_at(r, "/uid")
            ));
        }
        let got = format!(
            "{}, Kind={}",
            meta::str_at(&review, "/apiVersion"),
            meta::str_at(&review, "/kind")
        );
        if got != "admission.k8s.io/v1, Kind=AdmissionReview" {
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
            ));
        }
        if mutating {
            match (&patch, patch_type) {
                (Some(_), None) => {
                    return Err("webhook returned response.patch but not response.patchType".into())
                }
                (None, Some(_)) => {
                    return Err("webhook returned response.patchType but not response.patch".into())
                }
                (_, Some("")) => {
                    return Err("webhook returned invalid response.patchType of \"\"".into())
                }
                (Some(_), Some(t)) if t != "JSONPatch" => {
                    return Err(format!("unsupported patch type {t:?}"))
                }
                _ => {}
            }
        } else if patch.is_some() {
            return Err("validating webhook may not return response.patch".into());
        } else if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    Ok(Answer {
        allowed: r.get("allowed").and_then(Value::as_bool) == Some(true),
        result: r.get("status").filter(|s| s.is_object()).cloned(),
        patch: if mutating { patch } else { None },
        warnings: meta::array_at(r, "/warnings")
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        audit_annotations: r
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn answers_are_checked_as_kube_checks_them() {
        let ok = |r: Value| {
            body(
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r}),
            )
        };
        let a = answer(
            &ok(json!({"uid": "u", "allowed": true, "warnings": ["w"],
            "auditAnnotations": {"k": "v"}})),
            "v1",
            "u",
            false,
        )
        .unwrap();
        assert!(a.allowed);
        assert_eq!(a.warnings, ["w"]);
        assert_eq!(a.audit_annotations, [("k".to_string(), "v".to_string())]);
        let e = answer(&ok(json!({"uid": "x", "allowed": true})), "v1", "u", false).unwrap_err();
        assert_eq!(e, "expected response.uid=\"u\", got \"x\"");
        let e = answer(&body(json!({"kind": "AdmissionReview"})), "v1", "u", false).unwrap_err();
        assert_eq!(e, "webhook response was absent");
        let e = answer(
            &body(
                json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                "response": {"uid": "u", "allowed": true}}),
            ),
            "v1",
            "u",
            false,
        )
        .unwrap_err();
        assert!(
            e.contains("got admission.k8s.io/v1beta1, Kind=AdmissionReview"),
            "{e}"
        );
        // "[]" in base64.
        let patched = ok(json!({"uid": "u", "allowed": true, "patch": "W10="}));
        assert!(answer(&patched, "v1", "u", true)
            .unwrap_err()
            .contains("but not response.patchType"));
        assert!(answer(&patched, "v1", "u", false)
            .unwrap_err()
            .contains("validating webhook may not return response.patch"));
        let typed =
            ok(json!({"uid": "u", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"}));
        assert_eq!(
            answer(&typed, "v1", "u", true).unwrap().patch.unwrap(),
            b"[]"
        );
        // v1beta1 answers were never checked so strictly.
        let beta = body(json!({"response": {"allowed": false, "patch": "W10=",
            "status": {"message": "no"}}}));
        let a = answer(&beta, "v1beta1", "u", true).unwrap();
        assert!(!a.allowed);
        assert_eq!(a.result.unwrap()["message"], "no");
    }
}
