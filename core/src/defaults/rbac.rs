//! RBAC bindings: a roleRef or a User/Group subject without an apiGroup
//! means the RBAC group (kube's `SetDefaults_RoleBinding`,
//! `SetDefaults_ClusterRoleBinding` and `SetDefaults_Subject`); a
//! ServiceAccount subject keeps the core group.

use super::util;
use crate::rbac::GROUP;
use serde_json::Value;

pub fn binding(obj: &mut Value) {
    if let Some(role_ref) = obj.get_mut("roleRef").filter(|r| r.is_object()) {
        set_group(role_ref);
    }
    for subject in util::each(obj, "subjects") {
        if matches!(util::str_of(subject, "kind"), Some("User" | "Group")) {
            set_group(subject);
        }
    }
}

/// An absent, null or empty apiGroup becomes the RBAC group.
fn set_group(v: &mut Value) {
    if util::str_of(v, "apiGroup").is_none_or(str::is_empty) {
        v["apiGroup"] = Value::String(GROUP.to_string());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn bindings_name_the_rbac_group_unless_told_otherwise() {
        let mut b = json!({
            "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "u"},
                {"kind": "Group", "apiGroup": "", "name": "g"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                {"kind": "User", "apiGroup": "example.com", "name": "other"},
            ]
        });
        super::super::apply("rbac.authorization.k8s.io", "RoleBinding", &mut b);
        let g = "rbac.authorization.k8s.io";
        assert_eq!(b["roleRef"]["apiGroup"], g);
        assert_eq!(b["subjects"][0]["apiGroup"], g);
        assert_eq!(b["subjects"][1]["apiGroup"], g);
        assert!(b["subjects"][2].get("apiGroup").is_none());
        assert_eq!(b["subjects"][3]["apiGroup"], "example.com");
        let mut c = json!({"roleRef": {"kind": "ClusterRole", "name": "view"}});
        super::super::apply("rbac.authorization.k8s.io", "ClusterRoleBinding", &mut c);
        assert_eq!(c["roleRef"]["apiGroup"], g);
    }
}
