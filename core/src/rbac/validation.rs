//! Validation of the four RBAC kinds, following kube's rules: every rule
//! needs verbs and is either a resource rule (groups and resources) or a
//! non-resource rule (cluster roles only); a roleRef names a Role or
//! ClusterRole of this group; subjects are Users, Groups or
//! ServiceAccounts.

use super::index::RbacKind;
use super::types::{PolicyRule, RoleRef, Subject};
use crate::status::{field_invalid, field_not_supported, field_required, StatusCause};
use crate::validation::{is_valid_path_segment_name, validate_name, NameRule};
use serde_json::Value;

pub fn validate(kind: RbacKind, obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    match kind {
        RbacKind::Role | RbacKind::ClusterRole => {
            let namespaced = kind == RbacKind::Role;
            match obj.get("rules") {
                None | Some(Value::Null) => {}
                Some(Value::Array(rules)) => {
                    for (i, r) in rules.iter().enumerate() {
                        let path = format!("rules[{i}]");
                        match serde_json::from_value::<PolicyRule>(r.clone()) {
                            Ok(rule) => causes.extend(validate_rule(&rule, namespaced, &path)),
                            Err(e) => causes.push(field_invalid(&path, "", &e.to_string())),
                        }
                    }
                }
                Some(_) => causes.push(field_invalid("rules", "", "must be a list")),
            }
            if kind == RbacKind::ClusterRole {
                causes.extend(validate_aggregation(obj));
            }
        }
        RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
            let namespaced = kind == RbacKind::RoleBinding;
            match obj
                .get("roleRef")
                .map(|r| serde_json::from_value::<RoleRef>(r.clone()))
            {
                Some(Ok(r)) => causes.extend(validate_role_ref(&r, namespaced)),
                Some(Err(e)) => causes.push(field_invalid("roleRef", "", &e.to_string())),
                None => causes.push(field_required("roleRef.name", "")),
            }
            match obj.get("subjects") {
                None | Some(Value::Null) => {}
                Some(Value::Array(subjects)) => {
                    for (i, s) in subjects.iter().enumerate() {
                        let path = format!("subjects[{i}]");
                        match serde_json::from_value::<Subject>(s.clone()) {
                            Ok(s) => causes.extend(validate_subject(&s, namespaced, &path)),
                            Err(e) => causes.push(field_invalid(&path, "", &e.to_string())),
                        }
                    }
                }
                Some(_) => causes.push(field_invalid("subjects", "", "must be a list")),
            }
        }
    }
    causes
}

fn validate_rule(rule: &PolicyRule, namespaced: bool, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if rule.verbs.is_empty() {
        causes.push(field_required(
            &format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        let urls = format!("{:?}", rule.non_resource_urls);
        if namespaced {
            causes.push(field_invalid(
                &format!("{path}.nonResourceURLs"),
                &urls,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !rule.api_groups.is_empty()
            || !rule.resources.is_empty()
            || !rule.resource_names.is_empty()
        {
            causes.push(field_invalid(
                &format!("{path}.nonResourceURLs"),
                &urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return causes;
    }
    if rule.api_groups.is_empty() {
        causes.push(field_required(
            &format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if rule.resources.is_empty() {
        causes.push(field_required(
            &format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    causes
}

fn validate_aggregation(obj: &Value) -> Vec<StatusCause> {
    let Some(agg) = obj.get("aggregationRule").filter(|a| !a.is_null()) else {
        return Vec::new();
    };
    let sels = agg.get("clusterRoleSelectors").and_then(Value::as_array);
    let Some(sels) = sels.filter(|s| !s.is_empty()) else {
        return vec![field_required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        )];
    };
    sels.iter()
        .enumerate()
        .filter_map(|(i, s)| {
            crate::selector::labels::LabelSelector::from_metav1(s)
                .err()
                .map(|e| {
                    field_invalid(
                        &format!("aggregationRule.clusterRoleSelectors[{i}]"),
                        "",
                        &e,
                    )
                })
        })
        .collect()
}

fn validate_role_ref(r: &RoleRef, namespaced: bool) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if r.api_group != super::GROUP {
        causes.push(field_not_supported(
            "roleRef.apiGroup",
            &r.api_group,
            &[super::GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&r.kind.as_str()) {
        causes.push(field_not_supported("roleRef.kind", &r.kind, kinds));
    }
    if r.name.is_empty() {
        causes.push(field_required("roleRef.name", ""));
    } else {
        for msg in is_valid_path_segment_name(&r.name) {
            causes.push(field_invalid("roleRef.name", &r.name, &msg));
        }
    }
    causes
}

fn validate_subject(s: &Subject, namespaced: bool, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if s.name.is_empty() {
        causes.push(field_required(&format!("{path}.name"), ""));
    }
    match s.kind.as_str() {
        "ServiceAccount" => {
            if !s.name.is_empty() {
                for msg in validate_name(&s.name, NameRule::Dns1123Subdomain, false) {
                    causes.push(field_invalid(&format!("{path}.name"), &s.name, &msg));
                }
            }
            if !s.api_group.is_empty() {
                causes.push(field_not_supported(
                    &format!("{path}.apiGroup"),
                    &s.api_group,
                    &[""],
                ));
            }
            if !namespaced && s.namespace.is_empty() {
                causes.push(field_required(&format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if s.api_group != super::GROUP {
                causes.push(field_not_supported(
                    &format!("{path}.apiGroup"),
                    &s.api_group,
                    &[super::GROUP],
                ));
            }
        }
        other => causes.push(field_not_supported(
            &format!("{path}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(c: &[StatusCause]) -> Vec<String> {
        c.iter().map(|c| c.field.clone()).collect()
    }

    #[test]
    fn rules() {
        let ok = json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        assert!(validate(RbacKind::Role, &ok).is_empty());
        let bad = json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/x"]},
            {"verbs": ["get"], "resources": ["pods"]}
        ]});
        assert_eq!(
            fields(&validate(RbacKind::Role, &bad)),
            [
                "rules[0].verbs",
                "rules[1].nonResourceURLs",
                "rules[2].apiGroups"
            ]
        );
        let url = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]});
        assert!(validate(RbacKind::ClusterRole, &url).is_empty());
        let agg = json!({"aggregationRule": {"clusterRoleSelectors": []}});
        assert_eq!(
            fields(&validate(RbacKind::ClusterRole, &agg)),
            ["aggregationRule.clusterRoleSelectors"]
        );
    }

    #[test]
    fn bindings() {
        let g = "rbac.authorization.k8s.io";
        let ok = json!({"roleRef": {"apiGroup": g, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "apiGroup": g, "name": "u"}, {"kind": "ServiceAccount", "name": "sa"}]});
        assert!(validate(RbacKind::RoleBinding, &ok).is_empty());
        // A ClusterRoleBinding may not reference a Role, and its service
        // account subjects need a namespace.
        assert_eq!(
            fields(&validate(RbacKind::ClusterRoleBinding, &ok)),
            ["roleRef.kind", "subjects[1].namespace"]
        );
        let bad = json!({"roleRef": {"apiGroup": "x", "kind": "Role", "name": ""},
            "subjects": [{"kind": "Robot", "name": "r"}, {"kind": "User", "name": "u"}]});
        assert_eq!(
            fields(&validate(RbacKind::RoleBinding, &bad)),
            [
                "roleRef.apiGroup",
                "roleRef.name",
                "subjects[0].kind",
                "subjects[1].apiGroup"
            ]
        );
    }
}
