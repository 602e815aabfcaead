//! The built-in kinds kubeshard serves, described with the same data a CRD
//! will use. Facts (short names, categories, field labels, per-kind rules)
//! follow kube-apiserver v1.34.

mod extensions;
mod networking;
mod policy;
mod resource;
mod storage;
mod workloads;

use super::{
    field_path, KindHooks, NameRule, Printer, ResourceInfo, ScaleSelector, ScaleSpec,
    SelectableField, StatusMetadata,
};

/// Every verb a fully served resource supports.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// A builder so each entry below reads as the facts that differ.
pub(super) struct Entry {
    info: ResourceInfo,
}

pub(super) fn entry(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
) -> Entry {
    Entry {
        info: ResourceInfo::new(group, version, kind, plural, namespaced),
    }
}

impl Entry {
    pub(super) fn short(mut self, names: &[&str]) -> Self {
        self.info.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }
    pub(super) fn categories(mut self, c: &[&str]) -> Self {
        self.info.categories = c.iter().map(|s| s.to_string()).collect();
        self
    }
    pub(super) fn status(mut self) -> Self {
        self.info.subresources.push("status".into());
        self
    }
    pub(super) fn fields(mut self, f: &[(&str, &[&str])]) -> Self {
        self.info.selectable_fields.clear();
        for (label, path) in f {
            self.push_field(label, path);
        }
        self
    }
    /// Fields whose labels are built, not written out.
    pub(super) fn built_fields(mut self, f: &[(String, Vec<&str>)]) -> Self {
        for (label, path) in f {
            self.push_field(label, path);
        }
        self
    }
    fn push_field(&mut self, label: &str, path: &[&str]) {
        self.info.selectable_fields.push(SelectableField {
            label: label.into(),
            path: field_path(path),
            absent: "".into(),
            stored_label: label.into(),
        });
    }
    /// Boolean fields among the selectable ones: unset selects as false.
    pub(super) fn booleans(mut self, labels: &[&str]) -> Self {
        for f in &mut self.info.selectable_fields {
            if labels.contains(&&*f.label) {
                f.absent = "false".into();
            }
        }
        self
    }
    /// Served here, stored as `group`/`version` (whose entry has the same
    /// plural), converted on every write and read.
    pub(super) fn stored_as(mut self, group: &str, version: &str) -> Self {
        self.info.storage_group = group.into();
        self.info.storage_version = version.into();
        self.info.storage_key = crate::keys::KeyLayout::default().builtin(group, &self.info.plural);
        self
    }
    /// Field labels of a version that names its fields differently from
    /// the storage version: (served label, stored label).
    pub(super) fn field_conversions(mut self, pairs: &[(&str, &str)]) -> Self {
        for f in &mut self.info.selectable_fields {
            if let Some((_, stored)) = pairs.iter().find(|(served, _)| *served == &*f.label) {
                f.stored_label = (*stored).into();
            }
        }
        self
    }
    pub(super) fn name_rule(mut self, r: NameRule) -> Self {
        self.info.strategy.name_rule = r;
        self
    }
    pub(super) fn generation(mut self) -> Self {
        self.info.strategy.tracks_generation = true;
        self
    }
    pub(super) fn create_on_update(mut self) -> Self {
        self.info.strategy.allow_create_on_update = true;
        self
    }
    /// An update must name the resourceVersion it replaces.
    pub(super) fn conditional_updates(mut self) -> Self {
        self.info.strategy.allow_unconditional_update = false;
        self
    }
    pub(super) fn keep_status_on_create(mut self) -> Self {
        self.info.strategy.keep_status_on_create = true;
        self
    }
    pub(super) fn initial_status(mut self, json: &str) -> Self {
        self.info.strategy.initial_status =
            Some(serde_json::from_str(json).expect("built-in initial status is JSON"));
        self
    }
    pub(super) fn status_metadata(mut self, m: StatusMetadata) -> Self {
        self.info.strategy.status_metadata = m;
        self
    }
    pub(super) fn returns_deleted(mut self) -> Self {
        self.info.strategy.return_deleted_object = true;
        self
    }
    pub(super) fn hooks(mut self, h: KindHooks) -> Self {
        self.info.strategy.kind_hooks = h;
        self
    }
    pub(super) fn printer(mut self, p: Printer) -> Self {
        self.info.printer = p;
        self
    }
    pub(super) fn scale(mut self, spec: ScaleSpec) -> Self {
        self.info.subresources.push("scale".into());
        self.info.scale = Some(spec);
        self
    }
    pub(super) fn subresource(mut self, name: &str) -> Self {
        self.info.subresources.push(name.into());
        self
    }
    pub(super) fn verbs(mut self, v: &[&str]) -> Self {
        self.info.verbs = v.iter().map(|s| s.to_string()).collect();
        self
    }
}

/// Every built-in resource, in no particular order.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    vec![
        entry("", "v1", "Namespace", "namespaces", false)
            .short(&["ns"])
            .status()
            .subresource("finalize")
            .printer(Printer::Namespace)
            .fields(&[("status.phase", &["status", "phase"])])
            .name_rule(NameRule::Dns1123Label)
            .keep_status_on_create()
            .returns_deleted()
            .hooks(KindHooks::Namespace)
            .verbs(&[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]),
        entry("", "v1", "ConfigMap", "configmaps", true)
            .short(&["cm"])
            .printer(Printer::ConfigMap),
        entry("", "v1", "Secret", "secrets", true)
            .fields(&[("type", &["type"])])
            .hooks(KindHooks::Secret)
            .printer(Printer::Secret),
        entry("", "v1", "ServiceAccount", "serviceaccounts", true)
            .short(&["sa"])
            .subresource("token")
            .returns_deleted()
            .printer(Printer::ServiceAccount),
        entry("", "v1", "Pod", "pods", true)
            .short(&["po"])
            .categories(&["all"])
            .status()
            .subresource("binding")
            .subresource("eviction")
            .subresource("ephemeralcontainers")
            .subresource("resize")
            .subresource("log")
            .subresource("exec")
            .subresource("attach")
            .subresource("portforward")
            .subresource("proxy")
            .generation()
            .returns_deleted()
            .hooks(KindHooks::Pod)
            .printer(Printer::Pod)
            .fields(&[
                ("spec.nodeName", &["spec", "nodeName"]),
                ("spec.restartPolicy", &["spec", "restartPolicy"]),
                ("spec.schedulerName", &["spec", "schedulerName"]),
                ("spec.serviceAccountName", &["spec", "serviceAccountName"]),
                ("spec.hostNetwork", &["spec", "hostNetwork"]),
                ("status.phase", &["status", "phase"]),
                ("status.podIP", &["status", "podIP"]),
                ("status.nominatedNodeName", &["status", "nominatedNodeName"]),
            ])
            .booleans(&["spec.hostNetwork"]),
        // The legacy way to bind a pod: create-only, the pod named by the
        // Binding (handled as the pod's `binding` subresource).
        entry("", "v1", "Binding", "bindings", true).verbs(&["create"]),
        // Not stored: the server asks the components when it is read.
        entry("", "v1", "ComponentStatus", "componentstatuses", false)
            .short(&["cs"])
            .verbs(&["get", "list"])
            .printer(Printer::ComponentStatus),
        entry("", "v1", "PodTemplate", "podtemplates", true)
            .generation()
            .printer(Printer::PodTemplate),
        entry("", "v1", "Service", "services", true)
            .short(&["svc"])
            .categories(&["all"])
            .status()
            .subresource("proxy")
            .name_rule(NameRule::Dns1123Label)
            .returns_deleted()
            .hooks(KindHooks::Service)
            .create_on_update()
            .initial_status(r#"{"loadBalancer":{}}"#)
            .printer(Printer::Service)
            .fields(&[
                ("spec.clusterIP", &["spec", "clusterIP"]),
                ("spec.type", &["spec", "type"]),
            ])
            .verbs(&[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]),
        entry("", "v1", "Endpoints", "endpoints", true)
            .short(&["ep"])
            .create_on_update()
            .printer(Printer::Endpoints),
        entry("", "v1", "Event", "events", true)
            .short(&["ev"])
            .create_on_update()
            .printer(Printer::Event)
            .built_fields(&event_fields("involvedObject", "reportingComponent"))
            .built_fields(&[("source".into(), vec!["source", "component"])]),
        // The newer Event API: core's Events under other field names.
        entry("events.k8s.io", "v1", "Event", "events", true)
            .short(&["ev"])
            .create_on_update()
            .printer(Printer::Event)
            .stored_as("", "v1")
            .built_fields(&event_fields("regarding", "reportingController"))
            .field_conversions(&EVENT_FIELD_CONVERSIONS),
        entry("", "v1", "Node", "nodes", false)
            .short(&["no"])
            .status()
            .subresource("proxy")
            .printer(Printer::Node)
            .keep_status_on_create()
            .fields(&[("spec.unschedulable", &["spec", "unschedulable"])])
            .booleans(&["spec.unschedulable"]),
        entry("coordination.k8s.io", "v1", "Lease", "leases", true)
            .create_on_update()
            .conditional_updates()
            .printer(Printer::Lease),
        entry("apps", "v1", "Deployment", "deployments", true)
            .short(&["deploy"])
            .categories(&["all"])
            .status()
            .generation()
            .initial_status("{}")
            .status_metadata(StatusMetadata::StoredLabels)
            .printer(Printer::Deployment)
            .scale(ScaleSpec {
                spec_replicas: field_path(&["spec", "replicas"]),
                status_replicas: field_path(&["status", "replicas"]),
                selector: ScaleSelector::LabelSelector(field_path(&["spec", "selector"])),
            }),
    ]
    .into_iter()
    .chain(workloads::resources())
    .chain(storage::resources())
    .chain(networking::resources())
    .chain(policy::resources())
    .chain(security_resources())
    .chain(extensions::resources())
    .chain(resource::resources())
    .map(|e| e.info)
    .collect()
}

/// The kinds served only when a feature asks for them: the mutating
/// admission policy kinds (`--feature-gates` and `--runtime-config`).
pub fn gated_admission_resources() -> Vec<ResourceInfo> {
    extensions::mutating_admission_policies()
        .into_iter()
        .map(|e| e.info)
        .collect()
}

/// An Event's selectable fields, under the names one version gives the
/// object it is about and the component that reported it; the paths are
/// the stored (core) ones.
fn event_fields(regarding: &str, reporter: &str) -> Vec<(String, Vec<&'static str>)> {
    let about = [
        "kind",
        "namespace",
        "name",
        "uid",
        "apiVersion",
        "resourceVersion",
        "fieldPath",
    ];
    about
        .iter()
        .map(|f| (format!("{regarding}.{f}"), vec!["involvedObject", *f]))
        .chain([
            ("reason".to_string(), vec!["reason"]),
            (reporter.to_string(), vec!["reportingComponent"]),
            ("type".to_string(), vec!["type"]),
        ])
        .collect()
}

/// events.k8s.io's field labels and the core ones they select.
const EVENT_FIELD_CONVERSIONS: [(&str, &str); 8] = [
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
];

/// RBAC kinds, certificate signing requests, and the review kinds of the
/// authentication and authorization groups: create-only, answered without
/// being stored.
fn security_resources() -> Vec<Entry> {
    let rbac = |kind: &str, plural: &str, namespaced: bool| {
        let printer = if kind.ends_with("Binding") {
            Printer::RoleBinding
        } else {
            Printer::Role
        };
        entry("rbac.authorization.k8s.io", "v1", kind, plural, namespaced)
            .name_rule(NameRule::PathSegment)
            .hooks(KindHooks::Rbac)
            .create_on_update()
            .printer(printer)
    };
    let review = |group: &str, kind: &str, plural: &str, namespaced: bool| {
        entry(group, "v1", kind, plural, namespaced).verbs(&["create"])
    };
    let (authn, authz) = ("authentication.k8s.io", "authorization.k8s.io");
    vec![
        rbac("Role", "roles", true),
        rbac("ClusterRole", "clusterroles", false),
        rbac("RoleBinding", "rolebindings", true),
        rbac("ClusterRoleBinding", "clusterrolebindings", false),
        // A request for a certificate: its requester is stamped on create,
        // `/approval` decides it and `/status` carries the certificate.
        entry(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            false,
        )
        .short(&["csr"])
        .status()
        .subresource("approval")
        .initial_status("{}")
        .hooks(KindHooks::CertificateSigningRequest)
        .printer(Printer::CertificateSigningRequest)
        .fields(&[("spec.signerName", &["spec", "signerName"])]),
        review(authn, "TokenReview", "tokenreviews", false),
        review(authn, "SelfSubjectReview", "selfsubjectreviews", false),
        review(authz, "SubjectAccessReview", "subjectaccessreviews", false),
        review(
            authz,
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        ),
        review(
            authz,
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
        ),
        review(
            authz,
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
        ),
    ]
}
