//! Schemas of the built-in kinds, generated from k8s-openapi's `JsonSchema`
//! impls (OpenAPI v3 flavour) and completed with the merge facts.

use super::facts;
use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::Value;
use std::collections::BTreeMap;

/// A built-in kind: (group, version, kind) and its definition name.
pub struct BuiltinKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub definition: String,
}

/// Adds the schema of `T` to the generator and records its kind.
fn add<T: schemars::JsonSchema>(
    gen: &mut SchemaGenerator,
    kinds: &mut Vec<BuiltinKind>,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
) {
    gen.subschema_for::<T>();
    kinds.push(BuiltinKind {
        group,
        version,
        kind,
        definition: T::schema_name().into_owned(),
    });
}

/// Every built-in kind kubeshard knows a schema for, and the definitions
/// they reference (facts applied).
pub fn definitions() -> (BTreeMap<String, Value>, Vec<BuiltinKind>) {
    let mut gen = SchemaSettings::openapi3()
        .with(|s| s.meta_schema = None)
        .into_generator();
    let mut kinds = Vec::new();
    let k = &mut kinds;
    let g = &mut gen;
    add::<api::core::v1::Namespace>(g, k, "", "v1", "Namespace");
    add::<api::core::v1::ConfigMap>(g, k, "", "v1", "ConfigMap");
    add::<api::core::v1::Secret>(g, k, "", "v1", "Secret");
    add::<api::core::v1::ServiceAccount>(g, k, "", "v1", "ServiceAccount");
    add::<api::core::v1::Pod>(g, k, "", "v1", "Pod");
    add::<api::core::v1::PodTemplate>(g, k, "", "v1", "PodTemplate");
    add::<api::core::v1::Service>(g, k, "", "v1", "Service");
    add::<api::core::v1::Endpoints>(g, k, "", "v1", "Endpoints");
    add::<api::core::v1::Event>(g, k, "", "v1", "Event");
    add::<api::core::v1::Node>(g, k, "", "v1", "Node");
    add::<api::core::v1::Binding>(g, k, "", "v1", "Binding");
    add::<api::core::v1::PersistentVolumeClaim>(g, k, "", "v1", "PersistentVolumeClaim");
    add::<api::core::v1::PersistentVolume>(g, k, "", "v1", "PersistentVolume");
    add::<api::core::v1::ReplicationController>(g, k, "", "v1", "ReplicationController");
    add::<api::core::v1::LimitRange>(g, k, "", "v1", "LimitRange");
    add::<api::core::v1::ResourceQuota>(g, k, "", "v1", "ResourceQuota");
    add::<api::coordination::v1::Lease>(g, k, "coordination.k8s.io", "v1", "Lease");
    add::<api::apps::v1::Deployment>(g, k, "apps", "v1", "Deployment");
    add::<api::apps::v1::ReplicaSet>(g, k, "apps", "v1", "ReplicaSet");
    add::<api::apps::v1::StatefulSet>(g, k, "apps", "v1", "StatefulSet");
    add::<api::apps::v1::DaemonSet>(g, k, "apps", "v1", "DaemonSet");
    add::<api::apps::v1::ControllerRevision>(g, k, "apps", "v1", "ControllerRevision");
    add::<api::batch::v1::Job>(g, k, "batch", "v1", "Job");
    add::<api::batch::v1::CronJob>(g, k, "batch", "v1", "CronJob");
    add::<api::autoscaling::v1::Scale>(g, k, "autoscaling", "v1", "Scale");
    add::<api::rbac::v1::Role>(g, k, "rbac.authorization.k8s.io", "v1", "Role");
    add::<api::rbac::v1::ClusterRole>(g, k, "rbac.authorization.k8s.io", "v1", "ClusterRole");
    add::<api::rbac::v1::RoleBinding>(g, k, "rbac.authorization.k8s.io", "v1", "RoleBinding");
    add::<api::rbac::v1::ClusterRoleBinding>(
        g,
        k,
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
    );
    add::<api::networking::v1::Ingress>(g, k, "networking.k8s.io", "v1", "Ingress");
    add::<api::networking::v1::NetworkPolicy>(g, k, "networking.k8s.io", "v1", "NetworkPolicy");
    add::<api::policy::v1::PodDisruptionBudget>(g, k, "policy", "v1", "PodDisruptionBudget");
    add::<api::discovery::v1::EndpointSlice>(g, k, "discovery.k8s.io", "v1", "EndpointSlice");
    add::<api::storage::v1::StorageClass>(g, k, "storage.k8s.io", "v1", "StorageClass");
    add::<api::storage::v1::CSIDriver>(g, k, "storage.k8s.io", "v1", "CSIDriver");
    add::<api::storage::v1::CSINode>(g, k, "storage.k8s.io", "v1", "CSINode");
    add::<api::storage::v1::CSIStorageCapacity>(g, k, "storage.k8s.io", "v1", "CSIStorageCapacity");
    add::<api::storage::v1::VolumeAttachment>(g, k, "storage.k8s.io", "v1", "VolumeAttachment");
    add::<api::storage::v1::VolumeAttributesClass>(
        g,
        k,
        "storage.k8s.io",
        "v1",
        "VolumeAttributesClass",
    );
    add::<api::networking::v1::IngressClass>(g, k, "networking.k8s.io", "v1", "IngressClass");
    add::<api::scheduling::v1::PriorityClass>(g, k, "scheduling.k8s.io", "v1", "PriorityClass");
    add::<api::node::v1::RuntimeClass>(g, k, "node.k8s.io", "v1", "RuntimeClass");
    add::<api::networking::v1::IPAddress>(g, k, "networking.k8s.io", "v1", "IPAddress");
    add::<api::networking::v1::ServiceCIDR>(g, k, "networking.k8s.io", "v1", "ServiceCIDR");
    add::<api::events::v1::Event>(g, k, "events.k8s.io", "v1", "Event");
    add::<api::autoscaling::v1::HorizontalPodAutoscaler>(
        g,
        k,
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
    );
    add::<api::autoscaling::v2::HorizontalPodAutoscaler>(
        g,
        k,
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
    );
    let certificates = "certificates.k8s.io";
    add::<api::certificates::v1::CertificateSigningRequest>(
        g,
        k,
        certificates,
        "v1",
        "CertificateSigningRequest",
    );
    let admission = "admissionregistration.k8s.io";
    add::<api::admissionregistration::v1::MutatingWebhookConfiguration>(
        g,
        k,
        admission,
        "v1",
        "MutatingWebhookConfiguration",
    );
    add::<api::admissionregistration::v1::ValidatingWebhookConfiguration>(
        g,
        k,
        admission,
        "v1",
        "ValidatingWebhookConfiguration",
    );
    add::<api::admissionregistration::v1beta1::MutatingAdmissionPolicy>(
        g,
        k,
        "admissionregistration.k8s.io",
        "v1beta1",
        "MutatingAdmissionPolicy",
    );
    add::<api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding>(
        g,
        k,
        "admissionregistration.k8s.io",
        "v1beta1",
        "MutatingAdmissionPolicyBinding",
    );
    add::<api::admissionregistration::v1::ValidatingAdmissionPolicy>(
        g,
        k,
        admission,
        "v1",
        "ValidatingAdmissionPolicy",
    );
    add::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(
        g,
        k,
        admission,
        "v1",
        "ValidatingAdmissionPolicyBinding",
    );
    add::<CustomResourceDefinition>(
        g,
        k,
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    );
    add::<APIService>(g, k, "apiregistration.k8s.io", "v1", "APIService");
    let flowcontrol = "flowcontrol.apiserver.k8s.io";
    add::<api::flowcontrol::v1::FlowSchema>(g, k, flowcontrol, "v1", "FlowSchema");
    add::<api::flowcontrol::v1::PriorityLevelConfiguration>(
        g,
        k,
        flowcontrol,
        "v1",
        "PriorityLevelConfiguration",
    );
    let dra = "resource.k8s.io";
    add::<api::resource::v1::DeviceClass>(g, k, dra, "v1", "DeviceClass");
    add::<api::resource::v1::ResourceClaim>(g, k, dra, "v1", "ResourceClaim");
    add::<api::resource::v1::ResourceClaimTemplate>(g, k, dra, "v1", "ResourceClaimTemplate");
    add::<api::resource::v1::ResourceSlice>(g, k, dra, "v1", "ResourceSlice");
    // Kinds every group version serves (request and response envelopes).
    gen.subschema_for::<metav1::Status>();
    gen.subschema_for::<metav1::DeleteOptions>();
    gen.subschema_for::<metav1::ListMeta>();
    gen.subschema_for::<metav1::Patch>();
    let mut defs: BTreeMap<String, Value> = gen.take_definitions(true).into_iter().collect();
    for k in &kinds {
        // k8s-openapi marks metadata required on every kind; kube does not.
        if let Some(Value::Array(req)) = defs
            .get_mut(&k.definition)
            .and_then(|d| d.get_mut("required"))
        {
            req.retain(|r| r != "metadata");
        }
        if let Some(Value::Object(d)) = defs.get_mut(&k.definition) {
            if d.get("required")
                .is_some_and(|r| r.as_array().is_some_and(Vec::is_empty))
            {
                d.remove("required");
            }
        }
    }
    facts::overlay(&mut defs);
    (defs, kinds)
}
