//! One RBAC decision against a large policy: 10,000 Roles and 10,000
//! RoleBindings spread over 100 namespaces (each binding grants one user
//! one role), plus the bootstrap ClusterRoles and ClusterRoleBindings
//! every server has. The index finds a user's bindings by name and group,
//! so a decision should not depend on the policy's size (goal: < 2 µs).

use criterion::{criterion_group, criterion_main, Criterion};
use kubeshard_core::authn::{Attributes, UserInfo};
use kubeshard_core::rbac::bootstrap::{cluster_role_bindings, cluster_roles};
use kubeshard_core::rbac::{RbacIndex, RbacKind};
use serde_json::json;
use std::hint::black_box;

const ROLES: usize = 10_000;
const NAMESPACES: usize = 100;

fn index() -> RbacIndex {
    let mut idx = RbacIndex::new();
    for r in cluster_roles() {
        idx.upsert(RbacKind::ClusterRole, &r);
    }
    for b in cluster_role_bindings() {
        idx.upsert(RbacKind::ClusterRoleBinding, &b);
    }
    for i in 0..ROLES {
        let ns = format!("ns-{}", i % NAMESPACES);
        idx.upsert(
            RbacKind::Role,
            &json!({"metadata": {"name": format!("role-{i}"), "namespace": ns}, "rules": [
                {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps", "secrets"]},
                {"verbs": ["get", "update"], "apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": [format!("pod-{i}")]},
            ]}),
        );
        idx.upsert(
            RbacKind::RoleBinding,
            &json!({"metadata": {"name": format!("binding-{i}"), "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{i}")},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("user-{i}")},
                             {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("team-{}", i % 500)}]}),
        );
    }
    idx
}

fn decisions(c: &mut Criterion) {
    let idx = index();
    assert_eq!(idx.binding_count(), ROLES + cluster_role_bindings().len());
    let user = UserInfo::new("user-4242", &["team-242", "system:authenticated"]);
    let ns = format!("ns-{}", 4242 % NAMESPACES);
    let allowed =
        Attributes::resource("update", "apps", "deployments", &ns, "web").with_subresource("scale");
    let named = Attributes::resource("get", "", "pods", &ns, "pod-4242");
    let denied = Attributes::resource("delete", "", "pods", &ns, "pod-4242");
    let other_ns = Attributes::resource("get", "", "configmaps", "ns-7", "cm");
    let url = Attributes::non_resource("get", "/healthz");
    assert!(idx.authorize(&user, &allowed).is_some());
    assert!(idx.authorize(&user, &named).is_some());
    assert!(idx.authorize(&user, &denied).is_none());
    assert!(idx.authorize(&user, &other_ns).is_none());
    assert!(idx.authorize(&user, &url).is_some());
    let mut g = c.benchmark_group("rbac_10k_roles_10k_bindings");
    for (name, attrs) in [
        ("allowed_subresource", &allowed),
        ("allowed_resource_name", &named),
        ("denied", &denied),
        ("denied_other_namespace", &other_ns),
        ("allowed_non_resource_url", &url),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| black_box(idx.authorize(black_box(&user), black_box(attrs)).is_some()))
        });
    }
    g.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
