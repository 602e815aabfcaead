use super::*;
use proptest::prelude::*;
use serde_json::json;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo::new(name, groups)
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn binding(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": subjects
    })
}

fn get_pods(ns: &str) -> Attributes {
    Attributes::resource("get", "", "pods", ns, "p")
}

#[test]
fn role_binding_grants_only_in_its_namespace() {
    let mut idx = RbacIndex::new();
    idx.upsert(
        RbacKind::Role,
        &role(
            "a",
            "reader",
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
        ),
    );
    idx.upsert(
        RbacKind::RoleBinding,
        &binding(
            "a",
            "rb",
            "Role",
            "reader",
            json!([{"kind": "User", "name": "alice"}]),
        ),
    );
    let alice = user("alice", &[]);
    assert!(idx.authorize(&alice, &get_pods("a")).is_some());
    assert!(idx.authorize(&alice, &get_pods("b")).is_none());
    assert!(idx.authorize(&alice, &get_pods("")).is_none());
    assert!(idx.authorize(&user("bob", &[]), &get_pods("a")).is_none());
    let reason = idx
        .authorize(&alice, &get_pods("a"))
        .unwrap()
        .reason(&alice);
    assert_eq!(
        reason,
        r#"RBAC: allowed by RoleBinding "rb" of Role "reader" to User "alice" in namespace "a""#
    );
}

#[test]
fn cluster_role_binding_grants_everywhere_and_groups_match() {
    let mut idx = RbacIndex::new();
    idx.upsert(
        RbacKind::ClusterRole,
        &role(
            "",
            "viewer",
            json!([{"verbs": ["get", "list"], "apiGroups": ["*"], "resources": ["*"]}]),
        ),
    );
    idx.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "crb",
            "ClusterRole",
            "viewer",
            json!([{"kind": "Group", "name": "devs"}]),
        ),
    );
    assert!(idx
        .authorize(&user("x", &["devs"]), &get_pods("any"))
        .is_some());
    assert!(idx
        .authorize(&user("x", &["devs"]), &get_pods(""))
        .is_some());
    assert!(idx
        .authorize(&user("x", &["ops"]), &get_pods("any"))
        .is_none());
}

#[test]
fn role_binding_to_cluster_role_is_namespaced() {
    let mut idx = RbacIndex::new();
    idx.upsert(
        RbacKind::ClusterRole,
        &role(
            "",
            "edit",
            json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}]),
        ),
    );
    idx.upsert(
        RbacKind::RoleBinding,
        &binding(
            "a",
            "rb",
            "ClusterRole",
            "edit",
            json!([{"kind": "ServiceAccount", "name": "builder"}]),
        ),
    );
    let sa = user(
        "system:serviceaccount:a:builder",
        &["system:serviceaccounts"],
    );
    assert!(idx.authorize(&sa, &get_pods("a")).is_some());
    assert!(idx.authorize(&sa, &get_pods("b")).is_none());
    // The same SA name in another namespace is another user.
    let other = user("system:serviceaccount:b:builder", &[]);
    assert!(idx.authorize(&other, &get_pods("a")).is_none());
}

#[test]
fn roles_resolve_late_and_changes_reindex() {
    let mut idx = RbacIndex::new();
    idx.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "crb",
            "ClusterRole",
            "later",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    let u = user("u", &[]);
    assert!(idx.authorize(&u, &get_pods("a")).is_none());
    let (_, errors) = idx.rules_for(&u, "a");
    assert_eq!(
        errors,
        vec![r#"clusterrole.rbac.authorization.k8s.io "later" not found"#]
    );
    idx.upsert(
        RbacKind::ClusterRole,
        &role(
            "",
            "later",
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
        ),
    );
    assert!(idx.authorize(&u, &get_pods("a")).is_some());
    // Re-pointing the binding at other subjects unindexes the old ones.
    idx.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "crb",
            "ClusterRole",
            "later",
            json!([{"kind": "User", "name": "v"}]),
        ),
    );
    assert!(idx.authorize(&u, &get_pods("a")).is_none());
    assert!(idx.authorize(&user("v", &[]), &get_pods("a")).is_some());
    idx.remove(RbacKind::ClusterRoleBinding, "", "crb");
    assert!(idx.authorize(&user("v", &[]), &get_pods("a")).is_none());
    assert_eq!(idx.binding_count(), 0);
    assert!(idx.users.is_empty());
}

#[test]
fn rules_for_collects_cluster_and_namespace_rules_once() {
    let mut idx = RbacIndex::new();
    idx.upsert(
        RbacKind::ClusterRole,
        &role(
            "",
            "c",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/x"]}]),
        ),
    );
    idx.upsert(
        RbacKind::Role,
        &role(
            "a",
            "r",
            json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]),
        ),
    );
    idx.upsert(
        RbacKind::ClusterRoleBinding,
        &binding(
            "",
            "crb",
            "ClusterRole",
            "c",
            json!([{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"}]),
        ),
    );
    idx.upsert(
        RbacKind::RoleBinding,
        &binding(
            "a",
            "rb",
            "Role",
            "r",
            json!([{"kind": "Group", "name": "g"}]),
        ),
    );
    let (rules, errors) = idx.rules_for(&user("u", &["g"]), "a");
    assert!(errors.is_empty());
    assert_eq!(rules.len(), 2);
    let (cluster_only, _) = idx.rules_for(&user("u", &["g"]), "");
    assert_eq!(cluster_only.len(), 1);
}

// The index must agree with the obvious definition: a request is allowed
// iff some binding applying to the user (in scope) has a role with a rule
// that allows it.
fn naive(objects: &[(RbacKind, Value)], u: &UserInfo, attrs: &Attributes) -> bool {
    let roles: Vec<&(RbacKind, Value)> = objects.iter().filter(|(k, _)| !k.is_binding()).collect();
    objects
        .iter()
        .filter(|(k, _)| k.is_binding())
        .any(|(k, b)| {
            let cluster = *k == RbacKind::ClusterRoleBinding;
            let ns = if cluster {
                ""
            } else {
                crate::meta::namespace(b)
            };
            if !cluster && ns != attrs.namespace {
                return false;
            }
            let binding = Binding {
                cluster,
                namespace: ns.into(),
                name: String::new(),
                role_ref: role_ref_of(b),
                subjects: subjects_of(b),
            };
            if !binding
                .subjects
                .iter()
                .any(|s| binding.subject_applies(s, u))
            {
                return false;
            }
            // Last write per (kind, ns, name) wins, as in the index.
            let role = roles.iter().rev().find(|(rk, r)| {
                crate::meta::name(r) == binding.role_ref.name
                    && match binding.role_ref.kind.as_str() {
                        "ClusterRole" => *rk == RbacKind::ClusterRole,
                        "Role" => {
                            *rk == RbacKind::Role
                                && crate::meta::namespace(r) == ns
                                && !ns.is_empty()
                        }
                        _ => false,
                    }
            });
            role.is_some_and(|(_, r)| rules_of(r).iter().any(|rule| rule_allows(attrs, rule)))
        })
}

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(options)
}

fn object() -> impl Strategy<Value = (RbacKind, Value)> {
    let ns = pick(&["a", "b"]);
    let name = pick(&["r1", "r2"]);
    let verb = pick(&["get", "list", "*"]);
    let res = pick(&["pods", "configmaps", "*", "pods/log", "*/log"]);
    let subject = (
        pick(&["User", "Group", "ServiceAccount"]),
        pick(&["u", "g", "sa"]),
        pick(&["", "a", "b"]),
    );
    (
        0..4usize,
        ns,
        name,
        verb,
        res,
        proptest::collection::vec(subject, 0..3),
        pick(&["Role", "ClusterRole"]),
    )
        .prop_map(|(k, ns, name, verb, res, subjects, ref_kind)| {
            let kind = [
                RbacKind::Role,
                RbacKind::ClusterRole,
                RbacKind::RoleBinding,
                RbacKind::ClusterRoleBinding,
            ][k];
            let obj = match kind {
                RbacKind::Role | RbacKind::ClusterRole => role(
                    if kind == RbacKind::Role { ns } else { "" },
                    name,
                    json!([{"verbs": [verb], "apiGroups": [""], "resources": [res]}]),
                ),
                _ => {
                    let subjects: Vec<Value> = subjects
                        .iter()
                        .map(|(k, n, sns)| json!({"kind": k, "name": n, "namespace": sns}))
                        .collect();
                    let rk = if kind == RbacKind::ClusterRoleBinding {
                        "ClusterRole"
                    } else {
                        ref_kind
                    };
                    binding(
                        if kind == RbacKind::RoleBinding {
                            ns
                        } else {
                            ""
                        },
                        name,
                        rk,
                        name,
                        json!(subjects),
                    )
                }
            };
            (kind, obj)
        })
}

proptest! {
    #[test]
    fn index_agrees_with_a_scan(
        objects in proptest::collection::vec(object(), 0..24),
        who in pick(&["u", "system:serviceaccount:a:sa", "system:serviceaccount:b:sa", "x"]),
        grouped in any::<bool>(),
        ns in pick(&["a", "b", ""]),
        verb in pick(&["get", "list"]),
        res in pick(&["pods", "configmaps"]),
        sub in pick(&["", "log"]),
    ) {
        let mut idx = RbacIndex::new();
        // Keep only the last version of each object, as the store would.
        let mut last: Vec<(RbacKind, Value)> = Vec::new();
        for (k, o) in &objects {
            idx.upsert(*k, o);
            last.retain(|(lk, lo)| !(lk == k && crate::meta::name(lo) == crate::meta::name(o)
                && crate::meta::namespace(lo) == crate::meta::namespace(o)));
            last.push((*k, o.clone()));
        }
        let u = user(who, if grouped { &["g"] } else { &[] });
        let attrs = Attributes::resource(verb, "", res, ns, "n").with_subresource(sub);
        prop_assert_eq!(idx.authorize(&u, &attrs).is_some(), naive(&last, &u, &attrs));
    }
}
