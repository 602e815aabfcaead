//! `meta.k8s.io` Table and PartialObjectMetadata renderings: what kubectl
//! prints and what metadata-only clients read.
//!
//! Each kind's columns are data here ([`columns`]) and its cells a
//! function of the object and the current time ([`row`]); which printer a
//! kind uses is data on its catalog entry (`ResourceInfo::printer`), so a
//! new kind plugs in by naming one. Like kube-apiserver, the server always
//! fills every column, the wide (priority 1) ones included; kubectl hides
//! those unless asked for `-o wide`.

mod cluster;
mod custom;
mod extensions;
pub mod format;
mod kinds;
mod pod;
mod rbac;
mod workloads;

pub use custom::{ColumnSpec, CustomColumns};

use crate::catalog::{Printer, ResourceInfo};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// One column of a Table (built-in kinds' are constants; a kind built at
/// runtime owns its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: Cow<'static, str>,
    /// An OpenAPI type: string, integer, number, boolean, date.
    pub kind: Cow<'static, str>,
    pub format: Cow<'static, str>,
    pub description: Cow<'static, str>,
    /// 0: always shown; 1: shown by `kubectl get -o wide`.
    pub priority: u8,
}

impl Column {
    const NAME_DESCRIPTION: &'static str =
        "The object's name, unique among its kind in its namespace.";

    pub const fn new(
        name: &'static str,
        kind: &'static str,
        description: &'static str,
        priority: u8,
    ) -> Self {
        Self {
            name: Cow::Borrowed(name),
            kind: Cow::Borrowed(kind),
            format: Cow::Borrowed(""),
            description: Cow::Borrowed(description),
            priority,
        }
    }

    pub const fn name() -> Self {
        Self {
            name: Cow::Borrowed("Name"),
            kind: Cow::Borrowed("string"),
            format: Cow::Borrowed("name"),
            description: Cow::Borrowed(Self::NAME_DESCRIPTION),
            priority: 0,
        }
    }

    /// The same column, shown only by `kubectl get -o wide`.
    pub const fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    pub const fn age() -> Self {
        Self::new("Age", "string", "How long ago the object was created.", 0)
    }

    fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.kind, "format": self.format, "description": self.description, "priority": self.priority})
    }
}

/// The cells of one object, and the row's conditions (a finished pod is
/// marked Completed).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub cells: Vec<Value>,
    pub conditions: Option<Value>,
}

/// The columns a printer fills.
pub fn columns(printer: &Printer) -> &[Column] {
    match printer {
        Printer::Columns(custom) => &custom.columns,
        Printer::Default => kinds::DEFAULT,
        Printer::Pod => pod::COLUMNS,
        Printer::Service => kinds::SERVICE,
        Printer::Node => kinds::NODE,
        Printer::Namespace => kinds::NAMESPACE,
        Printer::ConfigMap => kinds::CONFIG_MAP,
        Printer::Secret => kinds::SECRET,
        Printer::Event => kinds::EVENT,
        Printer::Lease => kinds::LEASE,
        Printer::ComponentStatus => kinds::COMPONENT_STATUS,
        Printer::ServiceAccount => kinds::SERVICE_ACCOUNT,
        Printer::Endpoints => kinds::ENDPOINTS,
        Printer::Deployment => kinds::DEPLOYMENT,
        Printer::ReplicaSet => workloads::REPLICA_SET,
        Printer::StatefulSet => workloads::STATEFUL_SET,
        Printer::DaemonSet => workloads::DAEMON_SET,
        Printer::Job => workloads::JOB,
        Printer::CronJob => workloads::CRON_JOB,
        Printer::ControllerRevision => workloads::CONTROLLER_REVISION,
        Printer::PersistentVolumeClaim => cluster::PERSISTENT_VOLUME_CLAIM,
        Printer::PersistentVolume => cluster::PERSISTENT_VOLUME,
        Printer::StorageClass => cluster::STORAGE_CLASS,
        Printer::CsiDriver => cluster::CSI_DRIVER,
        Printer::CsiNode => cluster::CSI_NODE,
        Printer::CsiStorageCapacity => cluster::CSI_STORAGE_CAPACITY,
        Printer::VolumeAttachment => cluster::VOLUME_ATTACHMENT,
        Printer::VolumeAttributesClass => cluster::VOLUME_ATTRIBUTES_CLASS_COLUMNS,
        Printer::Ingress => cluster::INGRESS,
        Printer::IngressClass => cluster::INGRESS_CLASS,
        Printer::NetworkPolicy => cluster::NETWORK_POLICY,
        Printer::EndpointSlice => cluster::ENDPOINT_SLICE,
        Printer::PodDisruptionBudget => cluster::POD_DISRUPTION_BUDGET,
        Printer::PriorityClass => cluster::PRIORITY_CLASS,
        Printer::RuntimeClass => cluster::RUNTIME_CLASS,
        Printer::LimitRange => cluster::LIMIT_RANGE,
        Printer::ResourceQuota => cluster::RESOURCE_QUOTA,
        Printer::PodTemplate => kinds::POD_TEMPLATE,
        Printer::Role => rbac::ROLE,
        Printer::RoleBinding => rbac::ROLE_BINDING,
        Printer::HorizontalPodAutoscaler => extensions::HORIZONTAL_POD_AUTOSCALER,
        Printer::CertificateSigningRequest => extensions::CERTIFICATE_SIGNING_REQUEST,
        Printer::WebhookConfiguration => extensions::WEBHOOK_CONFIGURATION,
        Printer::ValidatingAdmissionPolicy => extensions::VALIDATING_ADMISSION_POLICY,
        Printer::ValidatingAdmissionPolicyBinding => {
            extensions::VALIDATING_ADMISSION_POLICY_BINDING
        }
        Printer::CustomResourceDefinition => extensions::CUSTOM_RESOURCE_DEFINITION,
        Printer::ApiService => extensions::API_SERVICE,
        Printer::FlowSchema => extensions::FLOW_SCHEMA,
        Printer::PriorityLevelConfiguration => extensions::PRIORITY_LEVEL_CONFIGURATION,
        Printer::IpAddress => extensions::IP_ADDRESS,
        Printer::ServiceCidr => extensions::SERVICE_CIDR,
        Printer::ResourceClaim => extensions::RESOURCE_CLAIM,
        Printer::ResourceSlice => extensions::RESOURCE_SLICE,
    }
}

/// One object's row.
pub fn row(printer: &Printer, obj: &Value, now: DateTime<Utc>) -> Row {
    match printer {
        Printer::Columns(custom) => custom.row(obj, now),
        Printer::Default => kinds::default_row(obj, now),
        Printer::Pod => pod::row(obj, now),
        Printer::Service => kinds::service_row(obj, now),
        Printer::Node => kinds::node_row(obj, now),
        Printer::Namespace => kinds::namespace_row(obj, now),
        Printer::ConfigMap => kinds::config_map_row(obj, now),
        Printer::Secret => kinds::secret_row(obj, now),
        Printer::Event => kinds::event_row(obj, now),
        Printer::Lease => kinds::lease_row(obj, now),
        Printer::ComponentStatus => kinds::component_status_row(obj),
        Printer::ServiceAccount => kinds::service_account_row(obj, now),
        Printer::Endpoints => kinds::endpoints_row(obj, now),
        Printer::Deployment => kinds::deployment_row(obj, now),
        Printer::ReplicaSet => workloads::replica_set_row(obj, now),
        Printer::StatefulSet => workloads::stateful_set_row(obj, now),
        Printer::DaemonSet => workloads::daemon_set_row(obj, now),
        Printer::Job => workloads::job_row(obj, now),
        Printer::CronJob => workloads::cron_job_row(obj, now),
        Printer::ControllerRevision => workloads::controller_revision_row(obj, now),
        Printer::PersistentVolumeClaim => cluster::persistent_volume_claim_row(obj, now),
        Printer::PersistentVolume => cluster::persistent_volume_row(obj, now),
        Printer::StorageClass => cluster::storage_class_row(obj, now),
        Printer::CsiDriver => cluster::csi_driver_row(obj, now),
        Printer::CsiNode => cluster::csi_node_row(obj, now),
        Printer::CsiStorageCapacity => cluster::csi_storage_capacity_row(obj),
        Printer::VolumeAttachment => cluster::volume_attachment_row(obj, now),
        Printer::VolumeAttributesClass => cluster::volume_attributes_class_row(obj, now),
        Printer::Ingress => cluster::ingress_row(obj, now),
        Printer::IngressClass => cluster::ingress_class_row(obj, now),
        Printer::NetworkPolicy => cluster::network_policy_row(obj, now),
        Printer::EndpointSlice => cluster::endpoint_slice_row(obj, now),
        Printer::PodDisruptionBudget => cluster::pod_disruption_budget_row(obj, now),
        Printer::PriorityClass => cluster::priority_class_row(obj, now),
        Printer::RuntimeClass => cluster::runtime_class_row(obj, now),
        Printer::LimitRange => cluster::limit_range_row(obj),
        Printer::ResourceQuota => cluster::resource_quota_row(obj, now),
        Printer::PodTemplate => kinds::pod_template_row(obj),
        Printer::Role => rbac::role_row(obj),
        Printer::RoleBinding => rbac::role_binding_row(obj, now),
        Printer::HorizontalPodAutoscaler => extensions::horizontal_pod_autoscaler_row(obj, now),
        Printer::CertificateSigningRequest => extensions::certificate_signing_request_row(obj, now),
        Printer::WebhookConfiguration => extensions::webhook_configuration_row(obj, now),
        Printer::ValidatingAdmissionPolicy => extensions::validating_admission_policy_row(obj, now),
        Printer::ValidatingAdmissionPolicyBinding => {
            extensions::validating_admission_policy_binding_row(obj, now)
        }
        Printer::CustomResourceDefinition => extensions::custom_resource_definition_row(obj),
        Printer::ApiService => extensions::api_service_row(obj, now),
        Printer::FlowSchema => extensions::flow_schema_row(obj, now),
        Printer::PriorityLevelConfiguration => {
            extensions::priority_level_configuration_row(obj, now)
        }
        Printer::IpAddress => extensions::ip_address_row(obj),
        Printer::ServiceCidr => extensions::service_cidr_row(obj, now),
        Printer::ResourceClaim => extensions::resource_claim_row(obj, now),
        Printer::ResourceSlice => extensions::resource_slice_row(obj, now),
    }
}

/// Which `meta.k8s.io` version a client asked the rendering in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaVersion {
    V1,
    V1beta1,
}

impl MetaVersion {
    pub fn parse(v: &str) -> Option<Self> {
        match v {
            "v1" => Some(Self::V1),
            "v1beta1" => Some(Self::V1beta1),
            _ => None,
        }
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "meta.k8s.io/v1",
            Self::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// `includeObject`: what each row carries besides its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    None,
    /// The object's metadata as PartialObjectMetadata (kube's default).
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(v: &str) -> Option<Self> {
        match v {
            "" | "Metadata" => Some(Self::Metadata),
            "None" => Some(Self::None),
            "Object" => Some(Self::Object),
            _ => None,
        }
    }
}

/// How to render a Table.
#[derive(Debug, Clone, Copy)]
pub struct TableOptions {
    pub version: MetaVersion,
    pub include: IncludeObject,
    /// Column definitions are sent (a watch sends them with its first
    /// event only).
    pub headers: bool,
}

/// List metadata of a Table: resourceVersion, continue token, remaining count.
#[derive(Debug, Clone, Default)]
pub struct TableMeta {
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// A Table of `objects` as `info`'s printer renders them.
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    opts: &TableOptions,
    list: &TableMeta,
    now: DateTime<Utc>,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let r = row(&info.printer, o, now);
            let mut out = Map::new();
            out.insert("cells".into(), Value::Array(r.cells));
            if let Some(c) = r.conditions {
                out.insert("conditions".into(), c);
            }
            let object = match opts.include {
                IncludeObject::None => Value::Null,
                IncludeObject::Metadata => partial_object(o, opts.version),
                IncludeObject::Object => o.clone(),
            };
            out.insert("object".into(), object);
            Value::Object(out)
        })
        .collect();
    let columns = if opts.headers {
        Value::Array(columns(&info.printer).iter().map(Column::to_json).collect())
    } else {
        Value::Null
    };
    json!({
        "kind": "Table",
        "apiVersion": opts.version.api_version(),
        "metadata": list_metadata(list),
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// An object reduced to its metadata (PartialObjectMetadata).
pub fn partial_object(obj: &Value, version: MetaVersion) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version.api_version(),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A list reduced to its items' metadata (PartialObjectMetadataList).
pub fn partial_list(objects: &[Value], version: MetaVersion, list: &TableMeta) -> Value {
    let items: Vec<Value> = objects.iter().map(|o| partial_object(o, version)).collect();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": version.api_version(),
        "metadata": list_metadata(list),
        "items": items,
    })
}

fn list_metadata(list: &TableMeta) -> Value {
    let mut md = Map::new();
    if !list.resource_version.is_empty() {
        md.insert("resourceVersion".into(), json!(list.resource_version));
    }
    if let Some(c) = &list.continue_token {
        md.insert("continue".into(), json!(c));
    }
    if let Some(r) = list.remaining {
        md.insert("remainingItemCount".into(), json!(r));
    }
    Value::Object(md)
}

#[cfg(test)]
mod tests;
