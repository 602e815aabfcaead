//! Authentication: who is making the request, decided by the first
//! authenticator that recognises its credential, in kube's order —
//! an authenticating proxy's request headers, client certificate, then
//! bearer token (static token file, service-account JWT, bootstrap
//! token) — and otherwise anonymous.
//!
//! A credential that is presented but fails is a 401; it never falls back
//! to anonymous. Authenticated users are added to system:authenticated.
//! Places for the OIDC and webhook token authenticators (after bootstrap
//! tokens) are marked below.

mod bootstrap;
mod cache;
pub mod request_header;
pub mod serviceaccount;
mod static_token;

pub use cache::TokenCache;

use super::Security;
use crate::serving::conn::ConnInfo;
use crate::storage::Backend;
use http::HeaderMap;
use kubeshard_core::authn::{UserInfo, ANONYMOUS, AUTHENTICATED, MASTERS, UNAUTHENTICATED};
use kubeshard_core::status::ApiError;
use std::sync::Arc;

/// The user of the plain-HTTP port (kube's insecure-port identity).
pub fn privileged_user() -> Arc<UserInfo> {
    Arc::new(UserInfo::new("system:unsecured", &[MASTERS, AUTHENTICATED]))
}

pub fn unauthorized() -> ApiError {
    ApiError::unauthorized("Unauthorized")
}

/// A token that authenticated, and the audiences it is good for.
pub struct TokenUser {
    pub user: Arc<UserInfo>,
    pub audiences: Vec<String>,
}

/// The request's user, or 401.
pub async fn authenticate(
    sec: &Security,
    storage: &Backend,
    conn: &ConnInfo,
    headers: &HeaderMap,
) -> Result<Arc<UserInfo>, ApiError> {
    if conn.privileged {
        return Ok(privileged_user());
    }
    let config = &sec.config;
    let mut failed = false;
    if let (Some(rh), false) = (
        &config.front_proxy.request_header,
        conn.client_chain.is_empty(),
    ) {
        match request_header::authenticate(rh, conn, headers) {
            Ok(Some(user)) => return Ok(with_authenticated(Arc::new(user))),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(error = %e, "authenticating proxy rejected");
                failed = true;
            }
        }
    }
    if !conn.client_chain.is_empty() {
        let verdict = conn.x509.get_or_init(|| {
            crate::pki::client_cert::verify(&config.client_cas, &conn.client_chain).map(|mut v| {
                v.user = with_authenticated(v.user);
                v
            })
        });
        let now = chrono::Utc::now().timestamp();
        match verdict
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|v| v.at(now))
        {
            Ok(u) => return Ok(u.clone()),
            Err(e) => {
                tracing::debug!(error = %e, "client certificate rejected");
                failed = true;
            }
        }
    }
    if let Some(token) = bearer(headers) {
        return match authenticate_token(sec, storage, token, None).await {
            Ok(Some(t)) => Ok(t.user),
            Ok(None) | Err(_) => Err(unauthorized()),
        };
    }
    if failed {
        return Err(unauthorized());
    }
    if config.anonymous {
        return Ok(Arc::new(UserInfo::new(ANONYMOUS, &[UNAUTHENTICATED])));
    }
    Err(unauthorized())
}

/// `Authorization: Bearer <token>`; any other scheme carries no token.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Runs the token authenticators. `audiences` is what a TokenReview asked
/// for (None: the API server's own audiences). Ok(None) when no
/// authenticator recognises the token; Err when one recognised it and it
/// is invalid.
pub async fn authenticate_token(
    sec: &Security,
    storage: &Backend,
    token: &str,
    audiences: Option<&[String]>,
) -> Result<Option<TokenUser>, String> {
    let config = &sec.config;
    let api_audiences = &config.service_accounts.audiences;
    // Static and bootstrap tokens are good for the API server's own
    // audiences only.
    let agnostic = |user: Arc<UserInfo>| {
        let auds: Vec<String> = match audiences {
            None => api_audiences.clone(),
            Some(want) => want
                .iter()
                .filter(|a| api_audiences.contains(a))
                .cloned()
                .collect(),
        };
        (!auds.is_empty()).then(|| TokenUser {
            user: with_authenticated(user),
            audiences: auds,
        })
    };
    if let Some(u) = static_token::authenticate(config, token) {
        return Ok(agnostic(u));
    }
    match serviceaccount::authenticate(sec, storage, token, audiences.unwrap_or(api_audiences))
        .await
    {
        Ok(Some((user, auds))) => {
            return Ok(Some(TokenUser {
                user: with_authenticated(user),
                audiences: auds,
            }))
        }
        Ok(None) => {}
        Err(e) => return Err(e),
    }
    if config.bootstrap_tokens {
        match bootstrap::authenticate(sec, token) {
            Ok(Some(u)) => return Ok(agnostic(u)),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
    }
    // (OIDC and webhook token authenticators go here.)
    Ok(None)
}

/// Adds system:authenticated (kube's AuthenticatedGroupAdder).
fn with_authenticated(user: Arc<UserInfo>) -> Arc<UserInfo> {
    if user.in_group(AUTHENTICATED) || user.name == ANONYMOUS {
        return user;
    }
    let mut u = (*user).clone();
    u.groups.push(AUTHENTICATED.to_string());
    Arc::new(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert("authorization", "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", "bearer  xyz ".parse().unwrap());
        assert_eq!(bearer(&h), Some("xyz"));
        h.insert("authorization", "Basic dXNlcjpwYXNz".parse().unwrap());
        assert_eq!(bearer(&h), None);
        h.insert("authorization", "Bearer ".parse().unwrap());
        assert_eq!(bearer(&h), None);
    }
}
