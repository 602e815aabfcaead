//! The roles and bindings every server starts with: kube-apiserver's
//! bootstrap policy (the user-facing and discovery roles, every system
//! component's role — scheduler, controller-manager, node, proxier,
//! volume scheduler — every `system:controller:*` role, the CSR roles, and
//! the kube-system leader-election and authentication-reader roles), kept
//! as data in `bootstrap_policy.yaml`. The server creates whichever are
//! missing at start and adds back rules removed from those still marked
//! for auto-update.
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_V1: &str = "rbac.authorization.k8s.io/v1";

/// The policy's data: roles by name, bindings by name, the namespaced
/// ones by namespace first.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policy {
    cluster_roles: BTreeMap<String, RoleData>,
    cluster_role_bindings: BTreeMap<String, BindingData>,
    roles: BTreeMap<String, BTreeMap<String, RoleData>>,
    role_bindings: BTreeMap<String, BTreeMap<String, BindingData>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleData {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    aggregation_rule: Option<Value>,
    #[serde(default)]
    rules: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingData {
    role: String,
    #[serde(default)]
    role_kind: Option<String>,
    /// "Kind name [namespace]".
    subjects: Vec<String>,
}

fn policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        serde_yaml::from_str(include_str!("bootstrap_policy.yaml"))
            .expect("the bootstrap policy data is well-formed (a unit test parses it)")
    })
}

fn metadata(name: &str, namespace: Option<&str>, labels: &BTreeMap<String, String>) -> Value {
    let mut all = Map::new();
    all.insert(BOOTSTRAPPING_LABEL.into(), json!("rbac-defaults"));
    for (k, v) in labels {
        all.insert(k.clone(), json!(v));
    }
    let mut md = json!({
        "name": name,
        "labels": all,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    });
    if let Some(ns) = namespace {
        md["namespace"] = json!(ns);
    }
    md
}

fn role(kind: &str, name: &str, namespace: Option<&str>, data: &RoleData) -> Value {
    let mut obj = json!({
        "apiVersion": RBAC_V1,
        "kind": kind,
        "metadata": metadata(name, namespace, &data.labels),
    });
    match &data.aggregation_rule {
        // The aggregation controller fills in an aggregated role's rules.
        Some(rule) => obj["aggregationRule"] = rule.clone(),
        None => obj["rules"] = Value::Array(data.rules.clone()),
    }
    obj
}

fn binding(kind: &str, name: &str, namespace: Option<&str>, data: &BindingData) -> Value {
    let subjects: Vec<Value> = data
        .subjects
        .iter()
        .map(|s| {
            let mut parts = s.split(' ');
            let kind = parts.next().unwrap_or_default();
            let name = parts.next().unwrap_or_default();
            let mut subject = json!({"kind": kind, "name": name});
            if kind == "ServiceAccount" {
                subject["namespace"] = json!(parts.next().unwrap_or_default());
            } else {
                subject["apiGroup"] = json!(RBAC_GROUP);
            }
            subject
        })
        .collect();
    let role_kind = data.role_kind.as_deref().unwrap_or("ClusterRole");
    json!({
        "apiVersion": RBAC_V1,
        "kind": kind,
        "metadata": metadata(name, namespace, &BTreeMap::new()),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": data.role},
        "subjects": subjects,
    })
}

/// The bootstrap ClusterRoles, as stored objects (without server-owned
/// metadata). Aggregated roles (admin, edit, view) start without rules;
/// the aggregation controller fills them in.
pub fn cluster_roles() -> Vec<Value> {
    policy()
        .cluster_roles
        .iter()
        .map(|(name, data)| role("ClusterRole", name, None, data))
        .collect()
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    policy()
        .cluster_role_bindings
        .iter()
        .map(|(name, data)| binding("ClusterRoleBinding", name, None, data))
        .collect()
}

/// The bootstrap Roles (kube-system and kube-public).
pub fn roles() -> Vec<Value> {
    policy()
        .roles
        .iter()
        .flat_map(|(ns, roles)| {
            roles
                .iter()
                .map(move |(name, data)| role("Role", name, Some(ns), data))
        })
        .collect()
}

/// The bootstrap RoleBindings (kube-system and kube-public).
pub fn role_bindings() -> Vec<Value> {
    policy()
        .role_bindings
        .iter()
        .flat_map(|(ns, bindings)| {
            bindings
                .iter()
                .map(move |(name, data)| binding("RoleBinding", name, Some(ns), data))
        })
        .collect()
}

/// What reconciling an existing bootstrap object should change: for a
/// role still marked for auto-update, the rules it lost are added back
/// (and for a binding, the subjects); None when nothing is missing or the
/// object opted out.
pub fn reconcile(wanted: &Value, existing: &Value) -> Option<Value> {
    let autoupdate = crate::meta::metadata(existing)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str);
    if autoupdate == Some("false") {
        return None;
    }
    // An aggregated role's rules belong to the aggregation controller.
    let field = if wanted.get("roleRef").is_some() {
        "subjects"
    } else if wanted.get("aggregationRule").is_some() {
        return None;
    } else {
        "rules"
    };
    let have = existing
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let want = wanted
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let missing: Vec<Value> = want.into_iter().filter(|w| !have.contains(w)).collect();
    if missing.is_empty() {
        return None;
    }
    let mut out = existing.clone();
    let mut merged = have;
    merged.extend(missing);
    out[field] = Value::Array(merged);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::validation::validate;
    use crate::rbac::RbacKind;

    #[test]
    fn bootstrap_objects_are_valid() {
        for r in cluster_roles() {
            assert!(validate(RbacKind::ClusterRole, &r).is_empty(), "{r}");
        }
        for b in cluster_role_bindings() {
            assert!(validate(RbacKind::ClusterRoleBinding, &b).is_empty(), "{b}");
        }
        for r in roles() {
            assert!(validate(RbacKind::Role, &r).is_empty(), "{r}");
        }
        for b in role_bindings() {
            assert!(validate(RbacKind::RoleBinding, &b).is_empty(), "{b}");
        }
    }

    /// The roles a real scheduler, controller-manager and kubelet run
    /// under exist, bound to their identities.
    #[test]
    fn system_components_are_granted() {
        let names: Vec<String> = cluster_roles()
            .iter()
            .map(|r| crate::meta::name(r).to_string())
            .collect();
        for want in [
            "cluster-admin",
            "system:kube-scheduler",
            "system:kube-controller-manager",
            "system:volume-scheduler",
            "system:node",
            "system:node-proxier",
            "system:controller:replicaset-controller",
            "system:controller:generic-garbage-collector",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing");
        }
        let scheduler = cluster_role_bindings()
            .into_iter()
            .find(|b| crate::meta::name(b) == "system:kube-scheduler")
            .unwrap();
        assert_eq!(
            scheduler["subjects"],
            json!([{"kind": "User", "apiGroup": RBAC_GROUP, "name": "system:kube-scheduler"}])
        );
        let gc = cluster_role_bindings()
            .into_iter()
            .find(|b| crate::meta::name(b) == "system:controller:generic-garbage-collector")
            .unwrap();
        assert_eq!(
            gc["subjects"],
            json!([{"kind": "ServiceAccount", "name": "generic-garbage-collector", "namespace": "kube-system"}])
        );
        let lock = role_bindings()
            .into_iter()
            .find(|b| crate::meta::name(b) == "system::leader-locking-kube-scheduler")
            .unwrap();
        assert_eq!(lock["metadata"]["namespace"], "kube-system");
        assert_eq!(lock["roleRef"]["kind"], "Role");
    }

    #[test]
    fn reconcile_adds_back_lost_rules_unless_opted_out() {
        let wanted = cluster_roles()
            .into_iter()
            .find(|r| crate::meta::name(r) == "system:discovery")
            .unwrap();
        let mut stripped = wanted.clone();
        stripped["rules"] = json!([]);
        let fixed = reconcile(&wanted, &stripped).unwrap();
        assert_eq!(fixed["rules"], wanted["rules"]);
        assert_eq!(reconcile(&wanted, &wanted), None);
        stripped["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert_eq!(reconcile(&wanted, &stripped), None);
    }
}
