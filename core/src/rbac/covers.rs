//! Escalation prevention: a user may only create a role, or bind one,
//! whose permissions they already hold. kube's rule: break the new rules
//! into single (verb, group, resource, name) or (verb, URL) grants and
//! require each to be covered by one of the owner's rules.

use super::PolicyRule;

/// The grants of `servant` that no rule of `owner` covers (empty means
/// fully covered).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing = Vec::new();
    for rule in servant {
        for single in breakdown(rule) {
            if !owner.iter().any(|o| rule_covers(o, &single)) {
                missing.push(single);
            }
        }
    }
    missing
}

/// One rule per verb × group × resource (× name), or per verb × URL.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: vec![name.clone()],
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: vec![url.clone()],
                ..Default::default()
            });
        }
    }
    out
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

fn has_all(list: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(list, w))
}

/// Does `owner` grant everything `sub` does?
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resources_cover(&owner.resources, &sub.resources);
    let urls = sub.non_resource_urls.iter().all(|u| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == "*" || o == u || o.strip_suffix('*').is_some_and(|p| u.starts_with(p)))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && urls && names
}

fn resources_cover(owner: &[String], sub: &[String]) -> bool {
    if has(owner, "*") {
        return true;
    }
    sub.iter().all(|r| {
        has(owner, r)
            || r.split_once('/')
                .is_some_and(|(_, s)| has(owner, &format!("*/{s}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_owner_covers_everything() {
        let admin = [
            PolicyRule::resources(&["*"], &["*"], &["*"]),
            PolicyRule::urls(&["*"], &["*"]),
        ];
        let want = [
            PolicyRule::resources(
                &["get", "delete"],
                &["", "apps"],
                &["pods", "deployments/scale"],
            ),
            PolicyRule::urls(&["get"], &["/healthz"]),
        ];
        assert!(uncovered(&admin, &want).is_empty());
    }

    #[test]
    fn missing_grants_are_listed() {
        let owner = [PolicyRule::resources(&["get", "list"], &[""], &["pods"])];
        let want = [PolicyRule::resources(&["get", "delete"], &[""], &["pods"])];
        let missing = uncovered(&owner, &want);
        assert_eq!(
            missing,
            vec![PolicyRule::resources(&["delete"], &[""], &["pods"])]
        );
    }

    #[test]
    fn names_subresources_and_urls() {
        let owner = [
            PolicyRule::resources(&["get"], &[""], &["configmaps"]).names(&["a", "b"]),
            PolicyRule::resources(&["get"], &[""], &["*/status"]),
            PolicyRule::urls(&["get"], &["/logs/*"]),
        ];
        let named = [PolicyRule::resources(&["get"], &[""], &["configmaps"]).names(&["a"])];
        assert!(uncovered(&owner, &named).is_empty());
        let unnamed = [PolicyRule::resources(&["get"], &[""], &["configmaps"])];
        assert_eq!(uncovered(&owner, &unnamed).len(), 1);
        let status = [PolicyRule::resources(&["get"], &[""], &["pods/status"])];
        assert!(uncovered(&owner, &status).is_empty());
        let url = [PolicyRule::urls(&["get"], &["/logs/kubelet"])];
        assert!(uncovered(&owner, &url).is_empty());
        let other_url = [PolicyRule::urls(&["get"], &["/metrics"])];
        assert_eq!(uncovered(&owner, &other_url).len(), 1);
    }
}
