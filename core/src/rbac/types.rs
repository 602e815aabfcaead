//! The RBAC object parts the authorizer reads, parsed from stored JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A resource rule: `verbs` on `resources` of `groups`.
    pub fn resources(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..Default::default()
        }
    }

    /// A non-resource rule: `verbs` on `urls`.
    pub fn urls(verbs: &[&str], urls: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..Default::default()
        }
    }

    pub fn names(mut self, names: &[&str]) -> Self {
        self.resource_names = strings(names);
        self
    }

    /// kube's compact rendering, used in escalation errors.
    pub fn compact(&self) -> String {
        let mut parts = Vec::new();
        let list = |v: &[String]| {
            format!(
                "[{}]",
                v.iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        };
        if !self.api_groups.is_empty() {
            parts.push(format!("APIGroups:{}", list(&self.api_groups)));
        }
        if !self.resources.is_empty() {
            parts.push(format!("Resources:{}", list(&self.resources)));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:{}", list(&self.resource_names)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!("NonResourceURLs:{}", list(&self.non_resource_urls)));
        }
        parts.push(format!("Verbs:{}", list(&self.verbs)));
        format!("{{{}}}", parts.join(", "))
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Who a binding grants to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    #[serde(default)]
    pub kind: String,
    #[serde(default, rename = "apiGroup")]
    pub api_group: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
}

/// The role a binding grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRef {
    #[serde(default, rename = "apiGroup")]
    pub api_group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

/// The `rules` of a role object; malformed entries are skipped (stored
/// objects were validated, so this only guards against the impossible).
pub fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    list_of(obj, "rules")
}

pub fn subjects_of(obj: &Value) -> Vec<Subject> {
    list_of(obj, "subjects")
}

pub fn role_ref_of(obj: &Value) -> RoleRef {
    obj.get("roleRef")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

fn list_of<T: for<'de> Deserialize<'de>>(obj: &Value, key: &str) -> Vec<T> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| serde_json::from_value(v.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_prints_rules() {
        let role = json!({"rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}
        ]});
        let rules = rules_of(&role);
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].non_resource_urls, vec!["/healthz"]);
        assert_eq!(
            rules[0].compact(),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}"#
        );
        let back = serde_json::to_value(&rules[1]).unwrap();
        assert_eq!(
            back,
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})
        );
    }
}
