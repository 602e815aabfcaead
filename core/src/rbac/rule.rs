//! Does one rule allow a request? kube's RBAC matching semantics: `*`
//! wildcards for verbs, groups and resources; `resource/subresource` and
//! `*/subresource`; resourceNames restricting to named objects; and
//! nonResourceURLs with a trailing `*` as a prefix match.

use super::PolicyRule;
use crate::authn::Attributes;

pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, &attrs.verb) {
        return false;
    }
    if !attrs.resource_request {
        return non_resource_url_matches(rule, &attrs.path);
    }
    group_matches(rule, &attrs.api_group)
        && resource_matches(rule, &attrs.resource, &attrs.subresource)
        && name_matches(rule, &attrs.name)
}

pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
}

pub fn group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == "*" || g == group)
}

/// `resource` and `subresource` as the request names them; the rule may
/// name `resource/subresource`, `*/subresource` or `*`.
pub fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == "*" {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        match r.split_once('/') {
            Some((res, sub)) => sub == subresource && (res == resource || res == "*"),
            None => false,
        }
    })
}

pub fn name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == "*"
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(group: &str, res: &str, sub: &str, name: &str) -> Attributes {
        Attributes::resource("get", group, res, "ns", name).with_subresource(sub)
    }

    #[test]
    fn wildcards_and_exact_matches() {
        let r = PolicyRule::resources(&["get", "list"], &[""], &["pods"]);
        assert!(rule_allows(&get("", "pods", "", "a"), &r));
        assert!(!rule_allows(&get("apps", "pods", "", "a"), &r));
        assert!(!rule_allows(&get("", "pods", "log", "a"), &r));
        let mut del = get("", "pods", "", "a");
        del.verb = "delete".into();
        assert!(!rule_allows(&del, &r));
        let all = PolicyRule::resources(&["*"], &["*"], &["*"]);
        assert!(rule_allows(&del, &all));
        assert!(rule_allows(&get("x", "y", "z", ""), &all));
    }

    #[test]
    fn subresources() {
        let logs = PolicyRule::resources(&["get"], &[""], &["pods/log"]);
        assert!(rule_allows(&get("", "pods", "log", "a"), &logs));
        assert!(!rule_allows(&get("", "pods", "", "a"), &logs));
        assert!(!rule_allows(&get("", "pods", "status", "a"), &logs));
        let any_status = PolicyRule::resources(&["get"], &["*"], &["*/status"]);
        assert!(rule_allows(
            &get("apps", "deployments", "status", "d"),
            &any_status
        ));
        assert!(!rule_allows(
            &get("apps", "deployments", "", "d"),
            &any_status
        ));
        assert!(!rule_allows(
            &get("apps", "deployments", "scale", "d"),
            &any_status
        ));
    }

    #[test]
    fn resource_names() {
        let r = PolicyRule::resources(&["get"], &[""], &["configmaps"]).names(&["a", "b"]);
        assert!(rule_allows(&get("", "configmaps", "", "b"), &r));
        assert!(!rule_allows(&get("", "configmaps", "", "c"), &r));
        assert!(!rule_allows(&get("", "configmaps", "", ""), &r));
    }

    #[test]
    fn non_resource_urls() {
        let r = PolicyRule::urls(&["get"], &["/healthz", "/apis/*"]);
        let at = |p: &str| Attributes::non_resource("get", p);
        assert!(rule_allows(&at("/healthz"), &r));
        assert!(!rule_allows(&at("/healthz/ping"), &r));
        assert!(rule_allows(&at("/apis/apps/v1"), &r));
        assert!(!rule_allows(&at("/api"), &r));
        let mut post = at("/healthz");
        post.verb = "post".into();
        assert!(!rule_allows(&post, &r));
        // A resource rule never matches a path, nor a path rule a resource.
        assert!(!rule_allows(
            &at("/api"),
            &PolicyRule::resources(&["*"], &["*"], &["*"])
        ));
        assert!(!rule_allows(
            &get("", "pods", "", ""),
            &PolicyRule::urls(&["*"], &["*"])
        ));
    }
}
