//! The resource catalog: every served resource described as data.
//!
//! One generic code path serves every entry, so adding a kind (and, later, a
//! CRD at runtime) means adding an entry here, never a new handler. Readers
//! on the request path go through [`CatalogReader`], which keeps an
//! executor-local snapshot and only touches the shared lock when the catalog
//! generation changes (CRD registration), so the hot path takes no lock.

mod builtin;

use parking_lot::RwLock;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use builtin::{builtin_resources, gated_admission_resources, ALL_VERBS};

/// How `metadata.name` is validated for a kind (kube's per-kind name rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Dns1123Subdomain,
    Dns1123Label,
    PathSegment,
    IpAddress,
}

/// Per-kind behaviour that the generic registry consults. Kept as data so a
/// CRD can describe itself the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    pub name_rule: NameRule,
    /// Bumps `metadata.generation` when the spec changes (deployments, pods, CRs).
    pub tracks_generation: bool,
    /// PUT without `metadata.resourceVersion` is allowed (last write wins).
    pub allow_unconditional_update: bool,
    /// PUT on a missing object creates it (endpoints, leases do in kube).
    pub allow_create_on_update: bool,
    /// Status written on create is kept (nodes) instead of being reset.
    pub keep_status_on_create: bool,
    /// The status a new object starts with when its status is reset on
    /// create: kube's typed objects print their empty status struct
    /// (`status: {}` for a deployment, `loadBalancer: {}` for a service).
    pub initial_status: Option<serde_json::Value>,
    /// DELETE answers with the deleted object rather than a Success Status.
    pub return_deleted_object: bool,
    /// Extra per-kind hooks that cannot be expressed as flags.
    pub kind_hooks: KindHooks,
    /// What happens to dependents when a delete names no propagation policy.
    pub gc_policy: GcPolicy,
    /// Which metadata a write through the status subresource keeps.
    pub status_metadata: StatusMetadata,
}

/// The metadata a status write stores. kube's status strategies mostly
/// reset only the spec, so labels and annotations written through
/// `/status` stay; a few kinds restore some of it from the stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMetadata {
    /// The written metadata (server-owned fields aside).
    Written,
    /// The written metadata, but the stored labels (deployments).
    StoredLabels,
}

/// The default propagation of a deletion to dependents (kube's
/// `DefaultGarbageCollectionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are collected in the background (most kinds).
    DeleteDependents,
    /// Dependents keep living; the `orphan` finalizer is added on delete
    /// (batch/v1 Jobs and the old extensions/v1beta1 kinds in kube).
    OrphanDependents,
    /// The kind never takes the garbage collector's finalizers.
    Unsupported,
}

/// How a kind renders as a `meta.k8s.io` Table. Built-in kinds name their
/// printer; a kind built at runtime lists its columns, read from the
/// object by JSONPath; everything else gets the name-and-age default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Printer {
    Default,
    /// Columns given as data (a CRD's additionalPrinterColumns).
    Columns(Arc<crate::table::CustomColumns>),
    Pod,
    ComponentStatus,
    Service,
    Node,
    Namespace,
    ConfigMap,
    Secret,
    Event,
    Lease,
    ServiceAccount,
    Endpoints,
    Deployment,
    /// ReplicaSets and ReplicationControllers.
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    ControllerRevision,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CsiDriver,
    CsiNode,
    CsiStorageCapacity,
    VolumeAttachment,
    VolumeAttributesClass,
    Ingress,
    IngressClass,
    NetworkPolicy,
    EndpointSlice,
    PodDisruptionBudget,
    PriorityClass,
    RuntimeClass,
    LimitRange,
    ResourceQuota,
    PodTemplate,
    HorizontalPodAutoscaler,
    CertificateSigningRequest,
    /// Mutating and validating webhook configurations.
    WebhookConfiguration,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    CustomResourceDefinition,
    ApiService,
    FlowSchema,
    PriorityLevelConfiguration,
    IpAddress,
    ServiceCidr,
    ResourceClaim,
    ResourceSlice,
    /// Roles and ClusterRoles.
    Role,
    /// RoleBindings and ClusterRoleBindings.
    RoleBinding,
}

/// Where a kind keeps what its `scale` subresource (autoscaling/v1 Scale)
/// reads and writes: dotted paths into the object, as a CRD's
/// `subresources.scale` describes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSpec {
    pub spec_replicas: FieldPath,
    pub status_replicas: FieldPath,
    pub selector: ScaleSelector,
}

/// A path into an object, one key per level (`["spec", "replicas"]`).
/// Owned by its catalog entry, so a kind built at runtime (a CRD) carries
/// its own and dropping the entry frees it.
pub type FieldPath = Box<[Box<str>]>;

/// A [`FieldPath`] from its keys.
pub fn field_path(keys: &[&str]) -> FieldPath {
    keys.iter().map(|k| Box::from(*k)).collect()
}

/// Where the label selector shown in `Scale.status.selector` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScaleSelector {
    /// A structured `metav1.LabelSelector` (built-in workloads), rendered
    /// as a selector string.
    LabelSelector(FieldPath),
    /// A field that already holds the selector string (CRDs' labelSelectorPath).
    String(FieldPath),
    /// A plain `map[string]string` of labels (ReplicationControllers).
    LabelMap(FieldPath),
}

/// Named hooks for built-in kinds whose behaviour is code, not data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindHooks {
    None,
    Pod,
    Namespace,
    Service,
    Secret,
    /// Roles, ClusterRoles and their bindings (validated by `rbac`).
    Rbac,
    /// Jobs: the server picks their selector and pod labels.
    Job,
    /// CertificateSigningRequests: requester stamped, spec immutable,
    /// decisions only through `/approval`.
    CertificateSigningRequest,
    /// CustomResourceDefinitions: validated as kube's apiextensions
    /// server does, stored versions recorded, instances cleaned up before
    /// the CRD goes.
    CustomResourceDefinition,
}

/// One selectable field: its label as clients write it and where it lives in
/// the object (a dotted JSON path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectableField {
    pub label: Box<str>,
    pub path: FieldPath,
    /// The value an object without the field selects as: kube renders a
    /// boolean field of its typed struct, so an unset one is "false".
    pub absent: Box<str>,
    /// The label stored objects carry the value under: the label of the
    /// storage version's field (kube's field label conversion, as
    /// events.k8s.io's `regarding.kind` selects core's
    /// `involvedObject.kind`). Equal to `label` for a storage version.
    pub stored_label: Box<str>,
}

/// A served resource (one group/version/resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Subresources beyond the main resource, e.g. "status".
    pub subresources: Vec<String>,
    pub verbs: Vec<String>,
    pub selectable_fields: Vec<SelectableField>,
    pub strategy: Strategy,
    /// Table columns kubectl prints for this kind.
    pub printer: Printer,
    /// Present when the kind serves the `scale` subresource.
    pub scale: Option<ScaleSpec>,
    /// Where this kind's objects are stored (see [`crate::keys::KeyLayout`]):
    /// version-free, so every served version shares one store.
    pub storage_key: Arc<str>,
    /// The group and version objects are stored at, which may differ from
    /// the ones served here (kube's storage version; a CRD's `storage:
    /// true` version; events.k8s.io's Events are stored as core Events).
    /// Every write is converted to it and every read from it.
    pub storage_group: String,
    pub storage_version: String,
    /// Where this kind's schema comes from: validation, pruning,
    /// defaulting, field ownership and OpenAPI all read it through
    /// [`ResourceInfo::schema`].
    pub schema_source: SchemaSource,
    /// A custom resource's own rules (its CRD version's structural schema,
    /// CEL rules, defaults); None for built-in kinds.
    pub custom: Option<Arc<crate::crd::CustomRules>>,
}

/// Where a kind's schema lives.
#[derive(Clone, Default)]
pub enum SchemaSource {
    /// The built-in registry (k8s-openapi's kinds with kube's merge facts).
    #[default]
    Builtin,
    /// A registry of the kind's own, built when the kind was (a CRD's
    /// structural schema); dropped with its last catalog entry.
    Own(Arc<crate::schema::SchemaRegistry>),
}

impl PartialEq for SchemaSource {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SchemaSource::Builtin, SchemaSource::Builtin) => true,
            (SchemaSource::Own(a), SchemaSource::Own(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for SchemaSource {}

impl std::fmt::Debug for SchemaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaSource::Builtin => f.write_str("Builtin"),
            SchemaSource::Own(r) => write!(f, "Own(#{})", r.uid()),
        }
    }
}

impl ResourceInfo {
    /// A fully served kind with kube's default strategy: every verb, no
    /// subresources, the name-and-age printer, stored where kube stores it.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        ResourceInfo {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: vec![],
            categories: vec![],
            namespaced,
            subresources: vec![],
            verbs: ALL_VERBS.iter().map(|v| v.to_string()).collect(),
            selectable_fields: vec![],
            strategy: Strategy {
                name_rule: NameRule::Dns1123Subdomain,
                tracks_generation: false,
                allow_unconditional_update: true,
                allow_create_on_update: false,
                keep_status_on_create: false,
                initial_status: None,
                return_deleted_object: false,
                kind_hooks: KindHooks::None,
                gc_policy: GcPolicy::DeleteDependents,
                status_metadata: StatusMetadata::Written,
            },
            printer: Printer::Default,
            scale: None,
            storage_key: crate::keys::KeyLayout::default().builtin(group, plural),
            storage_group: group.to_string(),
            storage_version: version.to_string(),
            schema_source: SchemaSource::Builtin,
            custom: None,
        }
    }

    /// `v1` for the core group, `apps/v1` otherwise: the apiVersion of objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group-qualified resource name kube uses in messages
    /// (`configmaps`, `deployments.apps`).
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The registry this kind's schema lives in.
    pub fn schema_registry(&self) -> &crate::schema::SchemaRegistry {
        match &self.schema_source {
            SchemaSource::Builtin => crate::schema::builtin(),
            SchemaSource::Own(r) => r,
        }
    }

    /// The schema of this kind at its served version, if there is one.
    pub fn schema(&self) -> Option<crate::schema::Schema<'_>> {
        self.schema_registry()
            .kind(&self.group, &self.version, &self.kind)
    }

    /// Objects are stored in the form served here: no conversion on the
    /// way in or out.
    pub fn is_storage_version(&self) -> bool {
        self.group == self.storage_group && self.version == self.storage_version
    }

    /// Objects are served exactly as stored, whatever their revision: no
    /// conversion, and no schema defaults to fill on read.
    pub fn reads_as_stored(&self) -> bool {
        self.is_storage_version() && self.custom.as_ref().is_none_or(|c| c.defaults_from == 0)
    }

    /// The object stored at `revision` is served exactly as stored.
    pub fn reads_as_stored_at(&self, revision: u64) -> bool {
        self.is_storage_version()
            && self
                .custom
                .as_ref()
                .is_none_or(|c| c.read_as_stored(revision))
    }

    /// The label stored objects carry a selectable field under.
    pub fn stored_field_label<'a>(&'a self, label: &'a str) -> &'a str {
        self.selectable_fields
            .iter()
            .find(|f| &*f.label == label)
            .map_or(label, |f| &f.stored_label)
    }

    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.iter().any(|s| s == sub)
    }

    pub fn has_status(&self) -> bool {
        self.has_subresource("status")
    }

    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Field labels this kind accepts in field selectors.
    pub fn field_labels(&self) -> impl Iterator<Item = &str> {
        let base: &[&str] = if self.namespaced {
            &["metadata.name", "metadata.namespace"]
        } else {
            &["metadata.name"]
        };
        base.iter()
            .copied()
            .chain(self.selectable_fields.iter().map(|f| &*f.label))
    }

    pub fn supports_field(&self, label: &str) -> bool {
        self.field_labels().any(|l| l == label)
    }
}

/// kube's version-aware order: `v2 > v1 > v1beta2 > v1beta1 > v1alpha1`,
/// then versions that do not look like kube's, by name.
pub fn version_rank(v: &str) -> (u8, Reverse<u64>, Reverse<u64>, String) {
    let parsed = v.strip_prefix('v').and_then(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let major = rest[..digits].parse::<u64>().ok()?;
        let (class, minor) = match &rest[digits..] {
            "" => return Some((0, major, 0)),
            s if s.starts_with("beta") => (1, &s[4..]),
            s if s.starts_with("alpha") => (2, &s[5..]),
            _ => return None,
        };
        Some((class, major, minor.parse::<u64>().ok()?))
    });
    let (class, major, minor) = parsed.unwrap_or((3, 0, 0));
    (class, Reverse(major), Reverse(minor), v.to_string())
}

/// Shared, rarely-changing catalog. Writers (CRD registration) bump the
/// generation; readers cache a snapshot per executor.
#[derive(Default)]
pub struct Catalog {
    inner: RwLock<Arc<CatalogSnapshot>>,
    generation: AtomicU64,
}

/// An immutable view of the catalog, indexed for request routing.
#[derive(Debug, Default)]
pub struct CatalogSnapshot {
    /// (group, version, plural) → resource, ordered for discovery.
    by_gvr: BTreeMap<Gvr, Arc<ResourceInfo>>,
    /// The same, hashed, for the per-request lookup (no allocation).
    index: hashbrown::HashMap<Gvr, Arc<ResourceInfo>>,
    /// Group names, core first then sorted (discovery asks per request;
    /// with a thousand CRDs a scan per group was quadratic).
    groups: Vec<String>,
}

type Gvr = (String, String, String);

/// A borrowed (group, version, plural) that hashes and compares like the
/// owned key, so lookups need not build Strings.
#[derive(Hash)]
struct GvrRef<'a>(&'a str, &'a str, &'a str);

impl hashbrown::Equivalent<Gvr> for GvrRef<'_> {
    fn equivalent(&self, key: &Gvr) -> bool {
        self.0 == key.0 && self.1 == key.1 && self.2 == key.2
    }
}

impl CatalogSnapshot {
    fn new(by_gvr: BTreeMap<Gvr, Arc<ResourceInfo>>) -> Self {
        let index = by_gvr.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut groups: Vec<String> = Vec::new();
        for (g, _, _) in by_gvr.keys() {
            if groups.last() != Some(g) {
                groups.push(g.clone());
            }
        }
        Self {
            by_gvr,
            index,
            groups,
        }
    }

    /// The entries of one group (ordered by version and plural).
    fn in_group(&self, group: &str) -> impl Iterator<Item = &Arc<ResourceInfo>> + '_ {
        let group = group.to_string();
        self.by_gvr
            .range((group.clone(), String::new(), String::new())..)
            .take_while(move |((g, _, _), _)| *g == group)
            .map(|(_, r)| r)
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        self.index.get(&GvrRef(group, version, plural))
    }

    /// Every resource, ordered by group, version and plural.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.by_gvr.values()
    }

    /// Group names in the order discovery lists them: core first, then the
    /// rest as registered-order-independent, sorted.
    pub fn groups(&self) -> Vec<String> {
        self.groups.clone()
    }

    /// Versions served for a group, preferred first.
    pub fn versions(&self, group: &str) -> Vec<String> {
        let mut versions: Vec<String> = Vec::new();
        for r in self.in_group(group) {
            if versions.last() != Some(&r.version) {
                versions.push(r.version.clone());
            }
        }
        versions
    }

    /// Resources of one group version.
    pub fn group_version(&self, group: &str, version: &str) -> Vec<&Arc<ResourceInfo>> {
        self.in_group(group)
            .filter(|r| r.version == version)
            .collect()
    }

    /// The served resource of a group and kind (any version: they share a
    /// store), as owner references and Events name objects.
    pub fn lookup_kind(&self, group: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        self.storage_versions()
            .find(|r| r.group == group && r.kind == kind)
    }

    /// A resource by its storage key (what events and stored objects carry).
    pub fn by_storage_key(&self, key: &str) -> Option<&Arc<ResourceInfo>> {
        self.storage_versions().find(|r| *r.storage_key == *key)
    }

    /// The entry objects of `info` are stored through: itself, or the
    /// storage version it converts to.
    pub fn storage_for<'a>(&'a self, info: &'a Arc<ResourceInfo>) -> Option<&'a Arc<ResourceInfo>> {
        if info.is_storage_version() {
            return Some(info);
        }
        self.lookup(&info.storage_group, &info.storage_version, &info.plural)
    }

    /// The entries at their storage version: one per store, the ones the
    /// server's own readers and writers use.
    fn storage_versions(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.by_gvr.values().filter(|r| r.is_storage_version())
    }

    /// One entry per stored resource (its storage version), for
    /// controllers that watch everything.
    pub fn stored_resources(&self) -> Vec<Arc<ResourceInfo>> {
        self.storage_versions().cloned().collect()
    }

    /// One entry per stored namespaced resource (its storage version), for
    /// cascading namespace deletion.
    pub fn namespaced_resources(&self) -> Vec<Arc<ResourceInfo>> {
        self.storage_versions()
            .filter(|r| r.namespaced)
            .cloned()
            .collect()
    }
}

impl Catalog {
    /// A catalog holding the built-in kinds, at kube's default key layout.
    pub fn with_builtins() -> Arc<Self> {
        Self::with_builtins_in(&crate::keys::KeyLayout::default())
    }

    /// A catalog holding the built-in kinds, stored under `layout`.
    pub fn with_builtins_in(layout: &crate::keys::KeyLayout) -> Arc<Self> {
        let catalog = Arc::new(Self::default());
        for mut r in builtin_resources() {
            r.storage_key = layout.builtin(&r.storage_group, &r.plural);
            catalog.register(r);
        }
        catalog
    }

    /// Serves the kinds behind the mutating admission policy feature.
    pub fn add_gated_admission_kinds(&self, layout: &crate::keys::KeyLayout) {
        for mut r in gated_admission_resources() {
            r.storage_key = layout.builtin(&r.storage_group, &r.plural);
            self.register(r);
        }
    }

    /// Adds or replaces a resource. Readers see it at their next request.
    pub fn register(&self, info: ResourceInfo) {
        self.replace(&[], vec![info]);
    }

    /// Swaps a set of entries in one step (a CRD's served versions):
    /// removes `remove` (group, version, plural), then adds `add`. Readers
    /// see the old set or the new one, never a mix.
    pub fn replace(&self, remove: &[(String, String, String)], add: Vec<ResourceInfo>) {
        let mut guard = self.inner.write();
        let mut by_gvr = guard.by_gvr.clone();
        for key in remove {
            by_gvr.remove(key);
        }
        for info in add {
            by_gvr.insert(
                (
                    info.group.clone(),
                    info.version.clone(),
                    info.plural.clone(),
                ),
                Arc::new(info),
            );
        }
        *guard = Arc::new(CatalogSnapshot::new(by_gvr));
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Removes a resource (a deleted CRD).
    pub fn unregister(&self, group: &str, version: &str, plural: &str) {
        self.replace(
            &[(group.to_string(), version.to_string(), plural.to_string())],
            Vec::new(),
        );
    }

    pub fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.inner.read().clone()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// An executor-local reader: one atomic load per request, the lock only
/// when the catalog changed since the last look.
pub struct CatalogReader {
    catalog: Arc<Catalog>,
    /// The snapshot behind an executor-local `Rc`, so handing it to a
    /// request bumps a local counter instead of the shared atomic one.
    #[allow(clippy::redundant_allocation)] // the Rc is the point: local refcount
    cached: std::cell::RefCell<(u64, std::rc::Rc<Arc<CatalogSnapshot>>)>,
}

impl CatalogReader {
    pub fn new(catalog: Arc<Catalog>) -> Self {
        let generation = catalog.generation();
        let snapshot = catalog.snapshot();
        Self {
            catalog,
            cached: std::cell::RefCell::new((generation, std::rc::Rc::new(snapshot))),
        }
    }

    #[allow(clippy::redundant_allocation)] // see `cached`
    pub fn current(&self) -> std::rc::Rc<Arc<CatalogSnapshot>> {
        let generation = self.catalog.generation();
        let mut cached = self.cached.borrow_mut();
        if cached.0 != generation {
            *cached = (generation, std::rc::Rc::new(self.catalog.snapshot()));
        }
        cached.1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_served() {
        let c = Catalog::with_builtins();
        let snap = c.snapshot();
        let cm = snap.lookup("", "v1", "configmaps").unwrap();
        assert_eq!(cm.kind, "ConfigMap");
        assert!(cm.namespaced);
        let dep = snap.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(dep.qualified_resource(), "deployments.apps");
        assert!(dep.has_status());
        assert!(snap.lookup("", "v1", "nope").is_none());
        assert_eq!(snap.groups()[0], "");
    }

    #[test]
    fn runtime_registration_reaches_readers() {
        let c = Catalog::with_builtins();
        let reader = CatalogReader::new(c.clone());
        assert!(reader
            .current()
            .lookup("example.com", "v1", "widgets")
            .is_none());
        let mut w = builtin_resources().remove(0);
        w.group = "example.com".into();
        w.plural = "widgets".into();
        c.register(w);
        assert!(reader
            .current()
            .lookup("example.com", "v1", "widgets")
            .is_some());
        c.unregister("example.com", "v1", "widgets");
        assert!(reader
            .current()
            .lookup("example.com", "v1", "widgets")
            .is_none());
    }

    #[test]
    fn field_labels_include_metadata() {
        let c = Catalog::with_builtins();
        let snap = c.snapshot();
        let pods = snap.lookup("", "v1", "pods").unwrap();
        assert!(pods.supports_field("spec.nodeName"));
        assert!(pods.supports_field("metadata.namespace"));
        let nodes = snap.lookup("", "v1", "nodes").unwrap();
        assert!(!nodes.supports_field("metadata.namespace"));
        assert!(!pods.supports_field("spec.bogus"));
    }
}
