//! The `authorizer` variable of admission expressions: its checks are
//! decided by this executor's authorizers (the system:masters short cut,
//! RBAC, Node, …) for the requester, or for the service account an
//! expression names, exactly as a request by them would be.

use crate::admission::Attributes;
use crate::security::authz::decide;
use crate::security::Security;
use kubeshard_core::authn::{
    service_account_groups, service_account_username, Attributes as AuthzAttributes, UserInfo,
    AUTHENTICATED,
};
use kubeshard_core::crd::cel_authz::{self, Check, RequestResource, Verdict};
use kubeshard_core::crd::expression::Variables;
use std::rc::Rc;

/// `vars` with `authorizer` bound, when the expressions read it.
pub fn bind<'v>(a: &Attributes<'_>, reads: bool, vars: Variables<'v>) -> Variables<'v> {
    if reads {
        let request = RequestResource {
            group: a.resource.group.clone(),
            resource: a.resource.plural.clone(),
            subresource: a.subresource.to_string(),
            namespace: a.namespace.to_string(),
            name: a.name.to_string(),
        };
        vars.bind_value("authorizer", cel_authz::authorizer(request))
    } else {
        vars
    }
}

/// Runs `f`, with `authorizer` checks answered when the expressions read
/// it.
pub fn scope<R>(
    security: &Rc<Security>,
    a: &Attributes<'_>,
    reads: bool,
    f: impl FnOnce() -> R,
) -> R {
    if reads {
        with(security, a, f)
    } else {
        f()
    }
}

/// Runs `f` with `authorizer` checks answered for `a`'s user.
fn with<R>(security: &Rc<Security>, a: &Attributes<'_>, f: impl FnOnce() -> R) -> R {
    let sec = security.clone();
    let requester = a.user.clone();
    cel_authz::with_authorizer(
        Rc::new(move |c: &Check| {
            let user = match &c.service_account {
                Some((ns, name)) => {
                    let mut groups = service_account_groups(ns);
                    groups.push(AUTHENTICATED.to_string());
                    UserInfo {
                        name: service_account_username(ns, name),
                        uid: String::new(),
                        groups,
                        extra: Default::default(),
                    }
                }
                None => requester.clone(),
            };
            let attrs = match &c.path {
                Some(path) => AuthzAttributes::non_resource(&c.verb, path),
                None => {
                    let mut at = AuthzAttributes::resource(
                        &c.verb,
                        &c.group,
                        &c.resource,
                        &c.namespace,
                        &c.name,
                    );
                    at.subresource = c.subresource.clone();
                    at
                }
            };
            let d = decide(&sec, &user, &attrs);
            Verdict {
                allowed: d.allowed(),
                reason: d.reason(&user),
            }
        }),
        f,
    )
}
