//! Defaulting of the built-in kinds: the values kube-apiserver fills in
//! when a client leaves them out (its `SetDefaults_*` functions), applied
//! to every object written through create, update and patch, so what is
//! stored and returned matches what kube would store and return.

mod admission;
mod apps;
mod cluster;
mod pod;
mod rbac;
mod service;
pub(crate) mod util;

#[cfg(test)]
mod tests;

use serde_json::Value;

/// Fills in defaults for an object of `group`/`kind` (unknown kinds are
/// left alone: a CRD's defaults come from its schema).
pub fn apply(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Pod") => pod::pod(obj),
        ("", "PodTemplate") => pod::template(obj.get_mut("template")),
        ("", "ReplicationController") => apps::replication_controller(obj),
        ("", "Service") => service::service(obj),
        ("", "Endpoints") => service::endpoints(obj),
        ("", "Node") => service::node(obj),
        ("", "Secret") => util::set(obj, "type", "Opaque"),
        ("", "Namespace") => namespace(obj),
        ("", "LimitRange") => cluster::limit_range(obj),
        ("apps", "Deployment") => apps::deployment(obj),
        ("apps", "ReplicaSet") => apps::replica_set(obj),
        ("apps", "StatefulSet") => apps::stateful_set(obj),
        ("apps", "DaemonSet") => apps::daemon_set(obj),
        ("batch", "Job") => apps::job(obj.get_mut("spec")),
        ("batch", "CronJob") => apps::cron_job(obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => rbac::binding(obj),
        ("", "PersistentVolumeClaim") => cluster::persistent_volume_claim(obj),
        ("", "PersistentVolume") => cluster::persistent_volume(obj),
        ("storage.k8s.io", "StorageClass") => cluster::storage_class(obj),
        ("storage.k8s.io", "CSIDriver") => cluster::csi_driver(obj),
        ("scheduling.k8s.io", "PriorityClass") => cluster::priority_class(obj),
        ("networking.k8s.io", "NetworkPolicy") => cluster::network_policy(obj),
        ("discovery.k8s.io", "EndpointSlice") => cluster::endpoint_slice(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => cluster::horizontal_pod_autoscaler(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crate::crd::set_defaults(obj),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            admission::webhook_configuration(obj, false)
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            admission::webhook_configuration(obj, true)
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy",
        ) => admission::admission_policy(obj),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding",
        ) => admission::admission_policy_binding(obj),
        ("resource.k8s.io", "ResourceClaim") => admission::resource_claim_spec(obj.get_mut("spec")),
        ("resource.k8s.io", "ResourceClaimTemplate") => {
            admission::resource_claim_spec(obj.pointer_mut("/spec/spec"))
        }
        ("apiregistration.k8s.io", "APIService") => crate::registry::apiservice::default(obj),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => cluster::flow_schema(obj),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            cluster::priority_level_configuration(obj)
        }
        _ => {}
    }
}

/// Every named namespace carries its own name as the label
/// `kubernetes.io/metadata.name` (set on every write, so it cannot be
/// changed or removed), which lets namespace selectors pick namespaces by
/// name.
fn namespace(obj: &mut Value) {
    let Some(name) = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
    else {
        return;
    };
    let Some(md) = util::child(obj, "metadata") else {
        return;
    };
    if let Some(labels) = util::child(md, "labels").and_then(Value::as_object_mut) {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
}
