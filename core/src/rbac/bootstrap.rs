//! The roles and bindings every server starts with, as kube-apiserver's
//! bootstrap policy defines them (facts: names, labels, the grants of the
//! user-facing roles and of the discovery and basic roles). The server
//! creates whichever are missing at start and adds back rules removed from
//! those still marked for auto-update.

use super::PolicyRule;
use serde_json::{json, Value};

pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
const AGG_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const AGG_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const AGG_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = crate::catalog::ALL_VERBS;

fn r(verbs: &[&str], group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule::resources(verbs, &[group], resources)
}

fn cluster_role(
    name: &str,
    labels: &[(&str, &str)],
    rules: Vec<PolicyRule>,
    aggregate_from: Option<&str>,
) -> Value {
    let mut all_labels = serde_json::Map::new();
    all_labels.insert(BOOTSTRAPPING_LABEL.into(), json!("rbac-defaults"));
    for (k, v) in labels {
        all_labels.insert(k.to_string(), json!(v));
    }
    let mut obj = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": all_labels,
            "annotations": {AUTOUPDATE_ANNOTATION: "true"},
        },
        "rules": rules,
    });
    if let Some(label) = aggregate_from {
        obj["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
    }
    obj
}

fn cluster_role_binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": role,
            "labels": {BOOTSTRAPPING_LABEL: "rbac-defaults"},
            "annotations": {AUTOUPDATE_ANNOTATION: "true"},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// The bootstrap ClusterRoles, as stored objects (without server-owned
/// metadata). Aggregated roles (admin, edit, view) start without rules;
/// the aggregation controller fills them in.
pub fn cluster_roles() -> Vec<Value> {
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![
                PolicyRule::resources(&["*"], &["*"], &["*"]),
                PolicyRule::urls(&["*"], &["*"]),
            ],
            None,
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
            None,
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
            None,
        ),
        cluster_role(
            "system:monitoring",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
            None,
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                r(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                r(&["create"], "authentication.k8s.io", &["tokenreviews"]),
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["subjectaccessreviews"],
                ),
            ],
            None,
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            vec![PolicyRule::urls(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
            None,
        ),
        cluster_role("admin", &[], vec![], Some(AGG_ADMIN)),
        cluster_role("edit", &[(AGG_ADMIN, "true")], vec![], Some(AGG_EDIT)),
        cluster_role("view", &[(AGG_EDIT, "true")], vec![], Some(AGG_VIEW)),
        cluster_role(
            "system:aggregate-to-admin",
            &[(AGG_ADMIN, "true")],
            aggregate_to_admin(),
            None,
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(AGG_EDIT, "true")],
            aggregate_to_edit(),
            None,
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(AGG_VIEW, "true")],
            aggregate_to_view(),
            None,
        ),
    ]
}

fn aggregate_to_admin() -> Vec<PolicyRule> {
    vec![
        r(
            &["create"],
            "authorization.k8s.io",
            &["localsubjectaccessreviews"],
        ),
        r(
            READ_WRITE,
            "rbac.authorization.k8s.io",
            &["rolebindings", "roles"],
        ),
    ]
}

fn aggregate_to_edit() -> Vec<PolicyRule> {
    vec![
        r(&["impersonate"], "", &["serviceaccounts"]),
        r(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        r(&["create"], "", &["pods/eviction"]),
        r(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        r(&["create"], "", &["serviceaccounts/token"]),
        r(
            WRITE,
            "apps",
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        r(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        r(WRITE, "batch", &["jobs", "cronjobs"]),
        r(WRITE, "policy", &["poddisruptionbudgets"]),
        r(
            WRITE,
            "networking.k8s.io",
            &["networkpolicies", "ingresses"],
        ),
        r(WRITE, "coordination.k8s.io", &["leases"]),
        r(READ, "", &["secrets"]),
    ]
}

fn aggregate_to_view() -> Vec<PolicyRule> {
    vec![
        r(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        r(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        r(READ, "", &["namespaces"]),
        r(READ, "discovery.k8s.io", &["endpointslices"]),
        r(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        r(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        r(
            READ,
            "batch",
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        r(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        r(
            READ,
            "networking.k8s.io",
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
        r(READ, "coordination.k8s.io", &["leases"]),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        cluster_role_binding("cluster-admin", &[crate::authn::MASTERS]),
        cluster_role_binding("system:discovery", &[crate::authn::AUTHENTICATED]),
        cluster_role_binding("system:basic-user", &[crate::authn::AUTHENTICATED]),
        cluster_role_binding(
            "system:public-info-viewer",
            &[crate::authn::AUTHENTICATED, crate::authn::UNAUTHENTICATED],
        ),
        cluster_role_binding("system:monitoring", &["system:monitoring"]),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            &[crate::authn::SERVICE_ACCOUNTS],
        ),
    ]
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
    }

    #[test]
    fn reconcile_adds_back_lost_rules_unless_opted_out() {
        let wanted = cluster_roles().remove(1);
        let mut stripped = wanted.clone();
        stripped["rules"] = json!([]);
        let fixed = reconcile(&wanted, &stripped).unwrap();
        assert_eq!(fixed["rules"], wanted["rules"]);
        assert_eq!(reconcile(&wanted, &wanted), None);
        stripped["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert_eq!(reconcile(&wanted, &stripped), None);
    }
}
