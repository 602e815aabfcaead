//! Who a request is from, and what it asks to do: the two inputs every
//! authorizer and the audit log work from. The server's authenticators
//! produce a [`UserInfo`]; its request-info filter produces the
//! [`Attributes`]. Also the pure parts of authentication that need no IO:
//! the static token file format and bootstrap-token rules.

pub mod bootstrap_token;
pub mod token_file;

use std::collections::BTreeMap;

/// The group every authenticated user is put in.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of requests that carry no credential.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user name of requests that carry no credential.
pub const ANONYMOUS: &str = "system:anonymous";
/// Members of this group may do anything, whatever RBAC says.
pub const MASTERS: &str = "system:masters";
/// All service accounts, and (with `:<namespace>`) those of one namespace.
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const SA_USER_PREFIX: &str = "system:serviceaccount:";

/// An authenticated identity (kube's `user.Info`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `group` unless the user already has it.
    pub fn add_group(&mut self, group: &str) {
        if !self.in_group(group) {
            self.groups.push(group.to_string());
        }
    }

    /// The `user.Info` JSON shape used by reviews and audit events
    /// (`username`, `uid`, `groups`, `extra`), empty fields omitted.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("username".into(), self.name.clone().into());
        if !self.uid.is_empty() {
            m.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            m.insert("groups".into(), self.groups.clone().into());
        }
        if !self.extra.is_empty() {
            m.insert(
                "extra".into(),
                serde_json::to_value(&self.extra).expect("strings serialize"),
            );
        }
        serde_json::Value::Object(m)
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SA_USER_PREFIX}{namespace}:{name}")
}

/// The (namespace, name) of a service-account user name.
pub fn split_service_account_username(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SA_USER_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// True when `user` is the service account `namespace/name`, without
/// building the user name.
pub fn is_service_account(user: &str, namespace: &str, name: &str) -> bool {
    split_service_account_username(user) == Some((namespace, name))
}

/// The groups kube gives a service account's user.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS.to_string(),
        format!("{SERVICE_ACCOUNTS}:{namespace}"),
    ]
}

/// What a request asks to do (kube's `authorizer.Attributes`, minus the
/// user, which is passed alongside).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// True for `/api` and `/apis` resource paths; false for everything
    /// else, which is matched by `path` against nonResourceURLs.
    pub resource_request: bool,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub path: String,
    /// The raw `fieldSelector` of a list, watch or deletecollection:
    /// authorizers that scope reads by field (the Node authorizer) read it.
    pub field_selector: String,
}

impl Attributes {
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Self {
            verb: verb.into(),
            resource_request: true,
            namespace: namespace.into(),
            api_group: group.into(),
            api_version: "*".into(),
            resource: resource.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn non_resource(verb: &str, path: &str) -> Self {
        Self {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    pub fn with_subresource(mut self, sub: &str) -> Self {
        self.subresource = sub.into();
        self
    }

    /// kube's 403 explanation for these attributes.
    pub fn forbidden_reason(&self, user: &str) -> String {
        if self.resource_request {
            let res = if self.subresource.is_empty() {
                self.resource.clone()
            } else {
                format!("{}/{}", self.resource, self.subresource)
            };
            crate::status::forbidden_resource_reason(
                user,
                &self.verb,
                &self.api_group,
                &res,
                &self.namespace,
            )
        } else {
            crate::status::forbidden_path_reason(user, &self.verb, &self.path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_round_trip() {
        let u = service_account_username("ns", "builder");
        assert_eq!(u, "system:serviceaccount:ns:builder");
        assert_eq!(split_service_account_username(&u), Some(("ns", "builder")));
        assert!(is_service_account(&u, "ns", "builder"));
        assert!(!is_service_account(&u, "ns", "build"));
        assert_eq!(
            split_service_account_username("system:serviceaccount:ns"),
            None
        );
        assert_eq!(split_service_account_username("alice"), None);
        assert_eq!(
            split_service_account_username("system:serviceaccount:a:b:c"),
            None
        );
    }

    #[test]
    fn forbidden_messages_name_the_scope() {
        let a = Attributes::resource("get", "", "pods", "ns", "p").with_subresource("log");
        assert_eq!(
            a.forbidden_reason("bob"),
            r#"User "bob" cannot get resource "pods/log" in API group "" in the namespace "ns""#
        );
        let c = Attributes::resource("list", "apps", "deployments", "", "");
        assert!(c.forbidden_reason("bob").ends_with("at the cluster scope"));
        let p = Attributes::non_resource("get", "/metrics");
        assert_eq!(
            p.forbidden_reason("bob"),
            r#"User "bob" cannot get path "/metrics""#
        );
    }
}
