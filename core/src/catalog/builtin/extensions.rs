//! The kinds that extend or govern the server itself: admission webhook
//! and policy configurations, CustomResourceDefinitions, APIServices and
//! API priority-and-fairness objects. Here they are stored and served;
//! what they do to other requests is the admission, CRD, aggregation and
//! flow-control layers' business.

use super::{entry, Entry};
use crate::catalog::{KindHooks, Printer};

/// kube's category for these kinds (`kubectl get api-extensions`).
const API_EXTENSIONS: &[&str] = &["api-extensions"];

pub(super) fn resources() -> Vec<Entry> {
    let admission = |kind: &str, plural: &str| {
        entry("admissionregistration.k8s.io", "v1", kind, plural, false)
            .categories(API_EXTENSIONS)
            .generation()
    };
    let flowcontrol = |kind: &str, plural: &str| {
        entry("flowcontrol.apiserver.k8s.io", "v1", kind, plural, false)
            .status()
            .generation()
            .initial_status("{}")
    };
    vec![
        admission(
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        )
        .printer(Printer::WebhookConfiguration),
        admission(
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        )
        .printer(Printer::WebhookConfiguration),
        admission("ValidatingAdmissionPolicy", "validatingadmissionpolicies")
            .status()
            .initial_status("{}")
            .printer(Printer::ValidatingAdmissionPolicy),
        admission(
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        )
        .printer(Printer::ValidatingAdmissionPolicyBinding),
        entry(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        )
        .short(&["crd", "crds"])
        .hooks(KindHooks::CustomResourceDefinition)
        .conditional_updates()
        .categories(API_EXTENSIONS)
        .status()
        .generation()
        .initial_status(r#"{"acceptedNames": {"plural": "", "kind": ""}}"#)
        .printer(Printer::CustomResourceDefinition),
        entry(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            "apiservices",
            false,
        )
        // `v1.` names the core group's.
        .name_rule(super::NameRule::PathSegment)
        .categories(API_EXTENSIONS)
        .status()
        .initial_status("{}")
        .printer(Printer::ApiService),
        flowcontrol("FlowSchema", "flowschemas").printer(Printer::FlowSchema),
        flowcontrol("PriorityLevelConfiguration", "prioritylevelconfigurations")
            .printer(Printer::PriorityLevelConfiguration),
    ]
}

/// MutatingAdmissionPolicy and its bindings (kube 1.34: beta, served at
/// v1beta1 only when its feature gate and that version are on).
pub(super) fn mutating_admission_policies() -> Vec<Entry> {
    let entry = |kind: &str, plural: &str| {
        entry(
            "admissionregistration.k8s.io",
            "v1beta1",
            kind,
            plural,
            false,
        )
        .categories(API_EXTENSIONS)
        .generation()
    };
    vec![
        entry("MutatingAdmissionPolicy", "mutatingadmissionpolicies"),
        entry(
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
        ),
    ]
}
