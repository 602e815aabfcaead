//! Validation every stored object goes through: metadata rules shared by
//! all kinds, then per-kind checks.

use crate::catalog::{KindHooks, NameRule, ResourceInfo};
use crate::meta;
use crate::status::{field_invalid, field_required, StatusCause};
use crate::validation;
use serde_json::Value;

/// All problems found, as kube's field causes; empty means valid.
pub fn validate_object(info: &ResourceInfo, obj: &Value) -> Vec<StatusCause> {
    let mut causes = validate_common(info, obj);
    match info.strategy.kind_hooks {
        KindHooks::CustomResourceDefinition => {
            causes.extend(crate::crd::definition::validate_create(obj).causes)
        }
        _ => {
            if let Some(rules) = &info.custom {
                causes.extend(rules.validate(obj, None));
                causes.extend(crate::crd::scale::validate(info.scale.as_ref(), obj, None));
            }
        }
    }
    causes.extend(webhook_configuration(info, obj, None));
    causes
}

/// An admission configuration's own rules (webhook configurations,
/// mutating policies; `old` on update).
fn webhook_configuration(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<StatusCause> {
    match (info.group.as_str(), info.kind.as_str()) {
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            super::webhook_configuration::validate(obj, old, true)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            super::webhook_configuration::validate(obj, old, false)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            super::admission_policy::validate_policy(obj, old, false)
        }
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy") => {
            super::admission_policy::validate_policy(obj, old, true)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            super::admission_policy::validate_binding(obj, false)
        }
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding") => {
            super::admission_policy::validate_binding(obj, true)
        }
        ("apiregistration.k8s.io", "APIService") => super::apiservice::validate(obj),
        _ => Vec::new(),
    }
}

/// What every write of the kind checks, create or update.
fn validate_common(info: &ResourceInfo, obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let md = meta::metadata(obj);
    let name = meta::name(obj);
    if name.is_empty() {
        causes.push(field_required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        causes.extend(validation::validate_object_meta_name(
            name,
            to_rule(info.strategy.name_rule),
        ));
    }
    if info.namespaced {
        let ns = meta::namespace(obj);
        if ns.is_empty() {
            causes.push(field_required("metadata.namespace", ""));
        }
    }
    if let Some(labels) = md.and_then(|m| meta::member(m, "labels")) {
        match labels.as_object() {
            Some(map) => causes.extend(validation::validate_labels(map, "metadata.labels")),
            None if labels.is_null() => {}
            None => causes.push(field_invalid(
                "metadata.labels",
                &labels.to_string(),
                "must be an object",
            )),
        }
    }
    if let Some(ann) = md.and_then(|m| meta::member(m, "annotations")) {
        match ann.as_object() {
            Some(map) => causes.extend(validation::validate_annotations(
                map,
                "metadata.annotations",
            )),
            None if ann.is_null() => {}
            None => causes.push(field_invalid(
                "metadata.annotations",
                &ann.to_string(),
                "must be an object",
            )),
        }
    }
    causes.extend(super::lifecycle::validate_lifecycle_metadata(obj));
    causes.extend(super::workloads::validate(&info.group, &info.kind, obj));
    causes.extend(super::podspec::validate(&info.group, &info.kind, obj));
    if info.strategy.kind_hooks == KindHooks::Secret {
        causes.extend(validate_secret(obj));
    }
    if info.strategy.kind_hooks == KindHooks::Job {
        causes.extend(validate_job_restart_policy(obj));
    }
    if info.strategy.kind_hooks == KindHooks::CertificateSigningRequest {
        causes.extend(super::certificates::validate(obj));
    }
    if info.strategy.kind_hooks == KindHooks::Rbac {
        if let Some(kind) = crate::rbac::RbacKind::from_plural(&info.plural) {
            causes.extend(crate::rbac::validation::validate(kind, obj));
        }
    }
    causes
}

/// A Job's pods end: they restart on failure or never (pod defaulting
/// fills in `Always`, so a template that says nothing is refused too, as
/// kube refuses it).
fn validate_job_restart_policy(obj: &Value) -> Vec<StatusCause> {
    const ALLOWED: &[&str] = &["OnFailure", "Never"];
    let path = "spec.template.spec.restartPolicy";
    match obj
        .pointer("/spec/template/spec/restartPolicy")
        .and_then(Value::as_str)
    {
        Some(p) if ALLOWED.contains(&p) => vec![],
        Some(p) => vec![crate::status::field_not_supported(path, p, ALLOWED)],
        None => vec![field_required(
            path,
            "valid values: \"OnFailure\", \"Never\"",
        )],
    }
}

/// Validation of an update: the object's own rules plus what may not
/// change on the way from `old` (no new finalizers while deleting).
pub fn validate_update(info: &ResourceInfo, new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = validate_common(info, new);
    match info.strategy.kind_hooks {
        KindHooks::CustomResourceDefinition => {
            causes.extend(crate::crd::definition::validate_update(new, old).causes)
        }
        _ => {
            if let Some(rules) = &info.custom {
                causes.extend(rules.validate(new, Some(old)));
                causes.extend(crate::crd::scale::validate(
                    info.scale.as_ref(),
                    new,
                    Some(old),
                ));
            }
        }
    }
    causes.extend(webhook_configuration(info, new, Some(old)));
    causes.extend(super::lifecycle::validate_lifecycle_update(new, old));
    if info.strategy.kind_hooks == KindHooks::CertificateSigningRequest {
        causes.extend(super::certificates::validate_update(new, old));
    }
    if info.strategy.kind_hooks == KindHooks::Service {
        causes.extend(super::service::validate_update(new, old));
    }
    if (info.group.as_str(), info.kind.as_str()) == ("", "PersistentVolumeClaim") {
        causes.extend(super::volumes::validate_claim_update(new, old));
    }
    causes.extend(super::workloads::validate_update(
        &info.group,
        &info.kind,
        new,
        old,
    ));
    causes
}

pub(crate) fn to_rule(rule: NameRule) -> validation::NameRule {
    match rule {
        NameRule::Dns1123Subdomain => validation::NameRule::Dns1123Subdomain,
        NameRule::Dns1123Label => validation::NameRule::Dns1123Label,
        NameRule::PathSegment => validation::NameRule::PathSegment,
        NameRule::IpAddress => validation::NameRule::IpAddress,
    }
}

fn validate_secret(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if let Some(data) = meta::field(obj, "data").and_then(Value::as_object) {
        for (k, v) in data {
            let ok = v.as_str().map(base64_ok).unwrap_or(v.is_null());
            if !ok {
                causes.push(field_invalid(
                    &format!("data[{k}]"),
                    "<secret contents redacted>",
                    "must be a base64-encoded string",
                ));
            }
        }
    }
    causes
}

fn base64_ok(s: &str) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
}
