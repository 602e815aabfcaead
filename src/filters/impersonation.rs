//! Impersonation: `Impersonate-User`, `Impersonate-Group` (repeatable),
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` headers make the
//! request act as someone else, if the requester may `impersonate` each
//! of them: users, groups, service accounts (by namespace and name), uids
//! and user extras (`userextras/<key>`, named by the value).

use super::authz;
use crate::context::Api;
use http::HeaderMap;
use kubeshard_core::authn::{
    service_account_groups, split_service_account_username, Attributes, UserInfo, ANONYMOUS,
    AUTHENTICATED, UNAUTHENTICATED,
};
use kubeshard_core::status::ApiError;
use std::collections::BTreeMap;
use std::sync::Arc;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const AUTHN_GROUP: &str = "authentication.k8s.io";

/// The identity the headers ask for, and what must be authorized for it.
struct Requested {
    user: UserInfo,
    checks: Vec<Attributes>,
}

fn impersonate(group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    let mut a = Attributes::resource("impersonate", group, resource, ns, name);
    a.api_version = "v1".into();
    a
}

/// Reads the headers; None when the request impersonates no one.
fn requested(headers: &HeaderMap) -> Result<Option<Requested>, ApiError> {
    let value = |v: &http::HeaderValue| {
        v.to_str()
            .map(str::to_string)
            .map_err(|_| ApiError::bad_request("impersonation headers must be valid text"))
    };
    let name = headers
        .get(USER)
        .map(value)
        .transpose()?
        .filter(|n| !n.is_empty());
    let groups: Vec<String> = headers
        .get_all(GROUP)
        .iter()
        .map(value)
        .collect::<Result<_, _>>()?;
    let uid = headers
        .get(UID)
        .map(value)
        .transpose()?
        .filter(|u| !u.is_empty());
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (h, v) in headers {
        if let Some(key) = h.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .to_string();
            extra.entry(key).or_default().push(value(v)?);
        }
    }
    let Some(name) = name else {
        if !groups.is_empty() || !extra.is_empty() || uid.is_some() {
            return Err(ApiError::internal(
                "requested impersonation of groups, extras or a uid without impersonating a user",
            ));
        }
        return Ok(None);
    };
    let mut checks = Vec::new();
    let mut user = UserInfo {
        name: name.clone(),
        ..Default::default()
    };
    match split_service_account_username(&name) {
        Some((ns, sa)) => {
            checks.push(impersonate("", "serviceaccounts", ns, sa));
            if groups.is_empty() {
                user.groups = service_account_groups(ns);
            }
        }
        None => checks.push(impersonate("", "users", "", &name)),
    }
    for g in &groups {
        checks.push(impersonate("", "groups", "", g));
        user.add_group(g);
    }
    for (key, values) in &extra {
        for v in values {
            checks.push(impersonate(AUTHN_GROUP, "userextras", "", v).with_subresource(key));
        }
    }
    if let Some(u) = uid {
        checks.push(impersonate(AUTHN_GROUP, "uids", "", &u));
        user.uid = u;
    }
    user.extra = extra;
    if user.name == ANONYMOUS {
        user.add_group(UNAUTHENTICATED);
    } else {
        user.add_group(AUTHENTICATED);
    }
    Ok(Some(Requested { user, checks }))
}

/// The user the request acts as: the requester, or whom it may
/// impersonate (403 otherwise).
pub async fn apply(
    api: &Api,
    requester: &Arc<UserInfo>,
    headers: &HeaderMap,
    arrived_at: u64,
) -> Result<Option<Arc<UserInfo>>, ApiError> {
    let Some(req) = requested(headers)? else {
        return Ok(None);
    };
    for attrs in &req.checks {
        let d =
            authz::decide_fresh(&api.security, &api.exec.hub, requester, attrs, arrived_at).await;
        if !d.allowed() {
            return Err(authz::forbidden(requester, attrs, &d.reason(requester)));
        }
    }
    Ok(Some(Arc::new(req.user)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn builds_the_requested_user_and_its_checks() {
        let r = requested(&headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes%2Fa", "x"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(r.user.name, "bob");
        assert_eq!(r.user.groups, vec!["devs", "ops", AUTHENTICATED]);
        assert_eq!(r.user.uid, "u-1");
        assert_eq!(r.user.extra["scopes/a"], vec!["x"]);
        let what: Vec<(String, String, String)> = r
            .checks
            .iter()
            .map(|a| (a.resource.clone(), a.subresource.clone(), a.name.clone()))
            .collect();
        assert_eq!(what.len(), 5);
        assert!(what.contains(&("userextras".into(), "scopes/a".into(), "x".into())));
    }

    #[test]
    fn service_accounts_get_their_groups_and_namespace() {
        let r = requested(&headers(&[(
            "Impersonate-User",
            "system:serviceaccount:ns:robot",
        )]))
        .unwrap()
        .unwrap();
        assert_eq!(r.checks[0].resource, "serviceaccounts");
        assert_eq!(
            (r.checks[0].namespace.as_str(), r.checks[0].name.as_str()),
            ("ns", "robot")
        );
        assert!(r.user.in_group("system:serviceaccounts:ns"));
    }

    #[test]
    fn groups_without_a_user_are_refused() {
        assert!(requested(&headers(&[("Impersonate-Group", "g")])).is_err());
        assert!(requested(&headers(&[])).unwrap().is_none());
    }
}
