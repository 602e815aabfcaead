//! ClusterRole aggregation: a ClusterRole with an `aggregationRule` holds
//! the rules of every ClusterRole whose labels match one of its selectors.
//! The server's aggregation controller writes the result into the
//! aggregated role's `rules`, as kube's controller does, so the rules are
//! visible to `kubectl get` and to the authorizer alike.

use super::index::ClusterRole;
use super::PolicyRule;
use std::sync::Arc;

/// The rules `target` should hold: the matching roles' rules in the order
/// of the roles' names, duplicates dropped. None when `target` does not
/// aggregate.
pub fn aggregate<'a>(
    target: &ClusterRole,
    roles: impl Iterator<Item = &'a Arc<ClusterRole>>,
) -> Option<Vec<PolicyRule>> {
    let selectors = target.aggregation.as_ref()?;
    let mut sources: Vec<&Arc<ClusterRole>> = roles
        .filter(|r| r.name != target.name)
        .filter(|r| selectors.iter().any(|s| s.matches(&r.labels)))
        .collect();
    sources.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for r in sources {
        for rule in r.rules.iter() {
            if !rules.contains(rule) {
                rules.push(rule.clone());
            }
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::labels::LabelSelector;

    fn role(name: &str, label: Option<&str>, rules: Vec<PolicyRule>) -> Arc<ClusterRole> {
        Arc::new(ClusterRole {
            name: name.into(),
            rules: rules.into(),
            labels: label
                .map(|l| [(l.to_string(), "true".to_string())].into())
                .unwrap_or_default(),
            aggregation: None,
        })
    }

    #[test]
    fn unions_matching_roles_in_name_order() {
        let get = PolicyRule::resources(&["get"], &[""], &["pods"]);
        let list = PolicyRule::resources(&["list"], &[""], &["pods"]);
        let roles = [
            role("b", Some("agg"), vec![list.clone(), get.clone()]),
            role("a", Some("agg"), vec![get.clone()]),
            role(
                "c",
                None,
                vec![PolicyRule::resources(&["*"], &["*"], &["*"])],
            ),
        ];
        let target = ClusterRole {
            name: "t".into(),
            aggregation: Some(vec![LabelSelector::parse("agg=true").unwrap()]),
            ..Default::default()
        };
        assert_eq!(aggregate(&target, roles.iter()), Some(vec![get, list]));
        let plain = ClusterRole::default();
        assert_eq!(aggregate(&plain, roles.iter()), None);
    }
}
