//! Parsing and evaluating an audit policy: the first rule that matches a
//! request decides its level; a request no rule matches is not audited.

use crate::authn::{Attributes, UserInfo};
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Default)]
pub enum Level {
    #[default]
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// What the policy decides for one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Policy {
    /// Parses a policy file (YAML or JSON).
    pub fn parse(text: &str) -> Result<Self, String> {
        let p: Policy = serde_yaml::from_str(text).map_err(|e| format!("audit policy: {e}"))?;
        if p.kind != "Policy" || !matches!(p.api_version.as_str(), "audit.k8s.io/v1") {
            return Err(format!(
                "audit policy: expected apiVersion audit.k8s.io/v1 and kind Policy, got {:?} {:?}",
                p.api_version, p.kind
            ));
        }
        Ok(p)
    }

    pub fn evaluate(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        let Some(rule) = self.rules.iter().find(|r| r.matches(user, attrs)) else {
            return Decision::default();
        };
        let mut omit = self.omit_stages.clone();
        for s in &rule.omit_stages {
            if !omit.contains(s) {
                omit.push(*s);
            }
        }
        Decision {
            level: rule.level,
            omit_stages: omit,
            omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
        }
    }
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

impl PolicyRule {
    fn matches(&self, user: &UserInfo, attrs: &Attributes) -> bool {
        if !self.users.is_empty() && !has(&self.users, &user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| has(&self.user_groups, g)) {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &attrs.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attrs);
        }
        if !self.non_resource_urls.is_empty() {
            return !attrs.resource_request
                && self.non_resource_urls.iter().any(|spec| {
                    spec == "*"
                        || *spec == attrs.path
                        || spec
                            .strip_suffix('*')
                            .is_some_and(|p| attrs.path.starts_with(p))
                });
        }
        true
    }

    fn matches_resource(&self, attrs: &Attributes) -> bool {
        if !attrs.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !has(&self.namespaces, &attrs.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let (res, sub) = (attrs.resource.as_str(), attrs.subresource.as_str());
        let combined = if sub.is_empty() {
            res.to_string()
        } else {
            format!("{res}/{sub}")
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == attrs.api_group)
            .any(|gr| {
                if gr.resources.is_empty() {
                    return true;
                }
                if !gr.resource_names.is_empty() && !has(&gr.resource_names, &attrs.name) {
                    return false;
                }
                gr.resources.iter().any(|r| {
                    r == "*"
                        || *r == combined
                        || (!sub.is_empty() && r.strip_prefix("*/") == Some(sub))
                        || r.strip_suffix("/*") == Some(res)
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["audited"]
- level: Request
  verbs: ["create", "update"]
  namespaces: ["prod"]
- level: Metadata
  userGroups: ["devs"]
  resources:
  - group: "apps"
    resources: ["deployments/*"]
  omitStages: [ResponseStarted]
- level: Metadata
  users: ["alice"]
"#;

    fn u(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::new(name, groups)
    }

    #[test]
    fn first_matching_rule_wins() {
        let p = Policy::parse(POLICY).unwrap();
        let level = |user: &UserInfo, a: &Attributes| p.evaluate(user, a).level;
        let bob = u("bob", &[]);
        assert_eq!(
            level(&bob, &Attributes::non_resource("get", "/healthz/ping")),
            Level::None
        );
        let cm = |name: &str| Attributes::resource("get", "", "configmaps", "prod", name);
        assert_eq!(level(&bob, &cm("audited")), Level::RequestResponse);
        assert_eq!(level(&bob, &cm("other")), Level::None);
        let mut create = cm("other");
        create.verb = "create".into();
        assert_eq!(level(&bob, &create), Level::Request);
        let scale = Attributes::resource("update", "apps", "deployments", "dev", "d")
            .with_subresource("scale");
        assert_eq!(level(&u("x", &["devs"]), &scale), Level::Metadata);
        assert_eq!(level(&u("x", &["ops"]), &scale), Level::None);
        let d = p.evaluate(&u("x", &["devs"]), &scale);
        assert_eq!(
            d.omit_stages,
            vec![Stage::RequestReceived, Stage::ResponseStarted]
        );
        assert_eq!(
            level(
                &u("alice", &[]),
                &Attributes::non_resource("get", "/metrics")
            ),
            Level::Metadata
        );
    }

    #[test]
    fn rejects_other_kinds() {
        assert!(Policy::parse("apiVersion: v1\nkind: ConfigMap\n").is_err());
        assert!(Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n"
        )
        .is_err());
    }
}
