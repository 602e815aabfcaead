//! Roles and bindings indexed by subject, so a decision looks at the
//! bindings of the requesting user and of its groups only — never at every
//! binding. The server keeps one index per executor, fed from that
//! executor's watch hub in revision order (like an informer), so reads take
//! no lock.
//!
//! Bindings are keyed by the user names and group names they grant to (a
//! ServiceAccount subject becomes its user name), split into cluster-wide
//! (ClusterRoleBindings) and per-namespace (RoleBindings). Roles are kept
//! by name; a binding resolves its roleRef at decision time, so a role
//! changing or appearing after its binding needs no re-indexing.

use super::rule::rule_allows;
use super::types::{role_ref_of, rules_of, subjects_of};
use super::{PolicyRule, RoleRef, Subject};
use crate::authn::{service_account_username, Attributes, UserInfo};
use crate::selector::labels::LabelSelector;
use hashbrown::HashMap;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The four RBAC kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    /// From a catalog plural (`roles`, `clusterroles`, …).
    pub fn from_plural(plural: &str) -> Option<Self> {
        Some(match plural {
            "roles" => Self::Role,
            "clusterroles" => Self::ClusterRole,
            "rolebindings" => Self::RoleBinding,
            "clusterrolebindings" => Self::ClusterRoleBinding,
            _ => return None,
        })
    }

    pub fn plural(self) -> &'static str {
        match self {
            Self::Role => "roles",
            Self::ClusterRole => "clusterroles",
            Self::RoleBinding => "rolebindings",
            Self::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::Role => "Role",
            Self::ClusterRole => "ClusterRole",
            Self::RoleBinding => "RoleBinding",
            Self::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    pub fn is_binding(self) -> bool {
        matches!(self, Self::RoleBinding | Self::ClusterRoleBinding)
    }
}

/// A ClusterRole as the index keeps it: its rules, plus what aggregation
/// needs (its labels and, for an aggregated role, its selectors).
#[derive(Debug, Clone, Default)]
pub struct ClusterRole {
    pub name: String,
    pub rules: Arc<[PolicyRule]>,
    pub labels: BTreeMap<String, String>,
    /// `aggregationRule.clusterRoleSelectors`, when set.
    pub aggregation: Option<Vec<LabelSelector>>,
}

/// A RoleBinding (namespace set) or ClusterRoleBinding (namespace empty).
#[derive(Debug, Clone)]
pub struct Binding {
    pub cluster: bool,
    pub namespace: String,
    pub name: String,
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

impl Binding {
    fn kind(&self) -> &'static str {
        if self.cluster {
            "ClusterRoleBinding"
        } else {
            "RoleBinding"
        }
    }

    /// Whether `subject` names `user` (kube's appliesTo; a ServiceAccount
    /// without a namespace means one in the binding's namespace).
    pub fn subject_applies(&self, subject: &Subject, user: &UserInfo) -> bool {
        match subject.kind.as_str() {
            "User" => user.name == subject.name,
            "Group" => user.in_group(&subject.name),
            "ServiceAccount" => {
                let ns = if subject.namespace.is_empty() {
                    &self.namespace
                } else {
                    &subject.namespace
                };
                !ns.is_empty() && crate::authn::is_service_account(&user.name, ns, &subject.name)
            }
            _ => false,
        }
    }
}

/// Why a request was allowed: the binding that granted it. The readable
/// reason is built only when someone asks (audit, reviews).
#[derive(Debug, Clone)]
pub struct Allowed(pub Arc<Binding>);

impl Allowed {
    /// kube's `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`.
    pub fn reason(&self, user: &UserInfo) -> String {
        let b = &self.0;
        let scope = if b.cluster {
            String::new()
        } else {
            format!(" in namespace {:?}", b.namespace)
        };
        let to = b
            .subjects
            .iter()
            .find(|s| b.subject_applies(s, user))
            .map(|s| match s.kind.as_str() {
                "ServiceAccount" => {
                    format!(" to ServiceAccount \"{}/{}\"", subject_ns(b, s), s.name)
                }
                _ => format!(" to {} {:?}", s.kind, s.name),
            })
            .unwrap_or_default();
        format!(
            "RBAC: allowed by {} {:?} of {} {:?}{to}{scope}",
            b.kind(),
            b.name,
            b.role_ref.kind,
            b.role_ref.name
        )
    }
}

fn subject_ns<'a>(b: &'a Binding, s: &'a Subject) -> &'a str {
    if s.namespace.is_empty() {
        &b.namespace
    } else {
        &s.namespace
    }
}

/// The bindings that grant to one user name or one group name.
#[derive(Debug, Default)]
struct SubjectBindings {
    cluster: Vec<Arc<Binding>>,
    by_namespace: HashMap<Box<str>, Vec<Arc<Binding>>>,
}

impl SubjectBindings {
    fn is_empty(&self) -> bool {
        self.cluster.is_empty() && self.by_namespace.is_empty()
    }
}

/// A namespace's Roles: name → rules.
type NamespaceRoles = HashMap<Box<str>, Arc<[PolicyRule]>>;

#[derive(Debug, Default)]
pub struct RbacIndex {
    /// namespace → its Roles.
    roles: HashMap<Box<str>, NamespaceRoles>,
    cluster_roles: HashMap<Box<str>, Arc<ClusterRole>>,
    /// Every binding by (namespace, name), to unindex it when it changes.
    bindings: HashMap<(Box<str>, Box<str>), Arc<Binding>>,
    users: HashMap<Box<str>, SubjectBindings>,
    groups: HashMap<Box<str>, SubjectBindings>,
    /// The revision of the last change applied (informer-style freshness).
    revision: u64,
}

/// Where a binding is filed: under user names or group names.
#[derive(PartialEq, Eq)]
enum Key {
    User(String),
    Group(String),
}

impl RbacIndex {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Records that every change up to `revision` has been applied.
    pub fn set_revision(&mut self, revision: u64) {
        self.revision = self.revision.max(revision);
    }

    /// Adds or replaces an object of `kind` from its stored JSON.
    pub fn upsert(&mut self, kind: RbacKind, obj: &Value) {
        let name = crate::meta::name(obj);
        let namespace = crate::meta::namespace(obj);
        match kind {
            RbacKind::Role => {
                self.roles
                    .entry(namespace.into())
                    .or_default()
                    .insert(name.into(), rules_of(obj).into());
            }
            RbacKind::ClusterRole => {
                self.cluster_roles
                    .insert(name.into(), Arc::new(cluster_role_of(obj)));
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                let cluster = kind == RbacKind::ClusterRoleBinding;
                let binding = Binding {
                    cluster,
                    namespace: if cluster {
                        String::new()
                    } else {
                        namespace.into()
                    },
                    name: name.into(),
                    role_ref: role_ref_of(obj),
                    subjects: subjects_of(obj),
                };
                self.insert_binding(binding);
            }
        }
    }

    /// Removes an object of `kind` (a deletion event).
    pub fn remove(&mut self, kind: RbacKind, namespace: &str, name: &str) {
        match kind {
            RbacKind::Role => {
                if let Some(ns) = self.roles.get_mut(namespace) {
                    ns.remove(name);
                    if ns.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
            }
            RbacKind::ClusterRole => {
                self.cluster_roles.remove(name);
            }
            RbacKind::RoleBinding => self.remove_binding(namespace, name),
            RbacKind::ClusterRoleBinding => self.remove_binding("", name),
        }
    }

    /// Forgets every object of `kind` (before a relist).
    pub fn clear(&mut self, kind: RbacKind) {
        match kind {
            RbacKind::Role => self.roles.clear(),
            RbacKind::ClusterRole => self.cluster_roles.clear(),
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                let cluster = kind == RbacKind::ClusterRoleBinding;
                let doomed: Vec<(String, String)> = self
                    .bindings
                    .values()
                    .filter(|b| b.cluster == cluster)
                    .map(|b| (b.namespace.clone(), b.name.clone()))
                    .collect();
                for (ns, name) in doomed {
                    self.remove_binding(&ns, &name);
                }
            }
        }
    }

    fn insert_binding(&mut self, binding: Binding) {
        self.remove_binding(&binding.namespace.clone(), &binding.name.clone());
        let binding = Arc::new(binding);
        for key in keys_of(&binding) {
            let entry = match &key {
                Key::User(u) => self.users.entry(u.as_str().into()).or_default(),
                Key::Group(g) => self.groups.entry(g.as_str().into()).or_default(),
            };
            if binding.cluster {
                entry.cluster.push(binding.clone());
            } else {
                entry
                    .by_namespace
                    .entry(binding.namespace.as_str().into())
                    .or_default()
                    .push(binding.clone());
            }
        }
        self.bindings.insert(
            (
                binding.namespace.as_str().into(),
                binding.name.as_str().into(),
            ),
            binding,
        );
    }

    fn remove_binding(&mut self, namespace: &str, name: &str) {
        let Some(old) = self.bindings.remove(&(namespace.into(), name.into())) else {
            return;
        };
        for key in keys_of(&old) {
            let (map, k) = match &key {
                Key::User(u) => (&mut self.users, u),
                Key::Group(g) => (&mut self.groups, g),
            };
            let Some(entry) = map.get_mut(k.as_str()) else {
                continue;
            };
            if old.cluster {
                entry.cluster.retain(|b| !Arc::ptr_eq(b, &old));
            } else if let Some(list) = entry.by_namespace.get_mut(old.namespace.as_str()) {
                list.retain(|b| !Arc::ptr_eq(b, &old));
                if list.is_empty() {
                    entry.by_namespace.remove(old.namespace.as_str());
                }
            }
            if entry.is_empty() {
                map.remove(k.as_str());
            }
        }
    }

    /// The rules a binding grants, if its role exists.
    pub fn role_rules(&self, binding: &Binding) -> Option<&Arc<[PolicyRule]>> {
        self.resolve(&binding.role_ref, &binding.namespace)
    }

    /// The rules of `role_ref` as seen from `namespace` (a Role lives in the
    /// binding's namespace; a ClusterRole anywhere).
    pub fn resolve(&self, role_ref: &RoleRef, namespace: &str) -> Option<&Arc<[PolicyRule]>> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(role_ref.name.as_str())
                .map(|r| &r.rules),
            "Role" if !namespace.is_empty() => {
                self.roles.get(namespace)?.get(role_ref.name.as_str())
            }
            _ => None,
        }
    }

    /// Every role a binding in `namespace` could reference (the
    /// namespace's Roles, when it has one, and all ClusterRoles), with its
    /// rules.
    pub fn referable_roles(&self, namespace: &str) -> Vec<(RoleRef, Arc<[PolicyRule]>)> {
        let role_ref = |kind: &str, name: &str| RoleRef {
            api_group: super::GROUP.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
        };
        let roles = self
            .roles
            .get(namespace)
            .into_iter()
            .flatten()
            .filter(|_| !namespace.is_empty())
            .map(|(name, rules)| (role_ref("Role", name), rules.clone()));
        let cluster = self
            .cluster_roles
            .values()
            .map(|r| (role_ref("ClusterRole", &r.name), r.rules.clone()));
        roles.chain(cluster).collect()
    }

    pub fn cluster_role(&self, name: &str) -> Option<&Arc<ClusterRole>> {
        self.cluster_roles.get(name)
    }

    pub fn cluster_roles(&self) -> impl Iterator<Item = &Arc<ClusterRole>> {
        self.cluster_roles.values()
    }

    /// Calls `f` for every binding that applies to `user` in `namespace`
    /// (cluster-wide ones first, then the namespace's), until it returns
    /// true. A binding may be seen twice when the user matches it both by
    /// name and by group.
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut f: impl FnMut(&Arc<Binding>) -> bool,
    ) -> bool {
        let subjects = || {
            self.users.get(user.name.as_str()).into_iter().chain(
                user.groups
                    .iter()
                    .filter_map(|g| self.groups.get(g.as_str())),
            )
        };
        for s in subjects() {
            for b in &s.cluster {
                if f(b) {
                    return true;
                }
            }
        }
        if namespace.is_empty() {
            return false;
        }
        for s in subjects() {
            if let Some(list) = s.by_namespace.get(namespace) {
                for b in list {
                    if f(b) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// The binding that allows `attrs` for `user`, if any.
    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Option<Allowed> {
        let mut found = None;
        self.visit(user, &attrs.namespace, |b| {
            let allows = self
                .role_rules(b)
                .is_some_and(|rules| rules.iter().any(|r| rule_allows(attrs, r)));
            if allows {
                found = Some(Allowed(b.clone()));
            }
            allows
        });
        found
    }

    /// Every rule `user` holds in `namespace` (cluster-wide ones included),
    /// plus an error for each binding whose role does not exist.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        let mut seen: Vec<*const Binding> = Vec::new();
        self.visit(user, namespace, |b| {
            if seen.contains(&Arc::as_ptr(b)) {
                return false;
            }
            seen.push(Arc::as_ptr(b));
            match self.role_rules(b) {
                Some(r) => rules.extend(r.iter().cloned()),
                None => errors.push(missing_role(b)),
            }
            false
        });
        (rules, errors)
    }

    /// How many bindings are indexed (for metrics and tests).
    pub fn binding_count(&self) -> usize {
        self.bindings.len()
    }
}

fn missing_role(b: &Binding) -> String {
    match b.role_ref.kind.as_str() {
        "Role" => format!(
            "role.rbac.authorization.k8s.io {:?} not found",
            b.role_ref.name
        ),
        _ => format!(
            "clusterrole.rbac.authorization.k8s.io {:?} not found",
            b.role_ref.name
        ),
    }
}

/// The user and group names a binding is filed under.
fn keys_of(b: &Binding) -> Vec<Key> {
    let mut keys = Vec::with_capacity(b.subjects.len());
    for s in &b.subjects {
        let key = match s.kind.as_str() {
            "User" => Key::User(s.name.clone()),
            "Group" => Key::Group(s.name.clone()),
            "ServiceAccount" => {
                let ns = subject_ns(b, s);
                if ns.is_empty() {
                    continue;
                }
                Key::User(service_account_username(ns, &s.name))
            }
            _ => continue,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

fn cluster_role_of(obj: &Value) -> ClusterRole {
    let labels = crate::meta::labels(obj).into_iter().collect();
    let aggregation = obj
        .get("aggregationRule")
        .filter(|a| !a.is_null())
        .map(|a| {
            a.get("clusterRoleSelectors")
                .and_then(Value::as_array)
                .map(|sels| {
                    sels.iter()
                        .filter_map(|s| LabelSelector::from_metav1(s).ok())
                        .collect()
                })
                .unwrap_or_default()
        });
    ClusterRole {
        name: crate::meta::name(obj).to_string(),
        rules: rules_of(obj).into(),
        labels,
        aggregation,
    }
}

#[cfg(test)]
mod tests;
