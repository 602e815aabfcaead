//! Service-account tokens: JWTs signed with the service-account key.
//!
//! Two kinds exist, as in kube. Bound tokens (issued by the TokenRequest
//! subresource) carry the configured issuer, audiences, an expiry and a
//! `kubernetes.io` claim naming the account (and optionally a pod, secret
//! or node they are bound to); legacy tokens (issuer
//! `kubernetes/serviceaccount`, stored in Secrets) name the account and
//! the Secret and never expire. Either stops working once its account —
//! or the object it is bound to — is deleted or replaced (uid check).

use crate::security::Security;
use crate::security::ServiceAccountConfig;
use crate::storage::Backend;
use crate::storage::{status, Storage};
use jsonwebtoken::{Algorithm, Header, Validation};
use kubeshard_core::authn::{service_account_groups, service_account_username, UserInfo};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectRef {
    pub name: String,
    pub uid: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KubeClaims {
    pub namespace: String,
    pub serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRef>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Claims {
    #[serde(default)]
    pub iss: String,
    #[serde(default)]
    pub sub: String,
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(
        rename = "kubernetes.io",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kube: Option<KubeClaims>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/namespace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_namespace: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/secret.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_secret: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_name: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.uid",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_uid: Option<String>,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Aud {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<Aud>::deserialize(d)? {
        None => vec![],
        Some(Aud::One(s)) => vec![s],
        Some(Aud::Many(v)) => v,
    })
}

impl Claims {
    /// (namespace, account name, account uid) from either token kind.
    fn account(&self) -> Option<(&str, &str, &str)> {
        match &self.kube {
            Some(k) => Some((&k.namespace, &k.serviceaccount.name, &k.serviceaccount.uid)),
            None => Some((
                self.legacy_namespace.as_deref()?,
                self.legacy_name.as_deref()?,
                self.legacy_uid.as_deref()?,
            )),
        }
    }

    fn is_legacy(&self) -> bool {
        self.iss == LEGACY_ISSUER
    }
}

/// The unverified payload, to see whether the token is ours at all.
fn peek(token: &str) -> Option<Claims> {
    use base64::Engine;
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Signature, time and issuer checks.
fn verify(config: &ServiceAccountConfig, token: &str) -> Result<Claims, String> {
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| format!("invalid bearer token: {e}"))?;
    let mut validation = Validation::new(header.alg);
    validation.required_spec_claims.clear();
    validation.validate_aud = false;
    validation.validate_nbf = true;
    validation.leeway = 0;
    let mut last = String::from("no key verifies this token");
    for (alg, key) in &config.keys.verifying {
        if *alg != header.alg {
            continue;
        }
        match jsonwebtoken::decode::<Claims>(token, key, &validation) {
            Ok(data) => return Ok(data.claims),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("invalid bearer token: {last}"))
}

/// Authenticates a service-account token for `audiences`. Ok(None) when
/// the token is not one of ours (not a JWT, or another issuer).
pub async fn authenticate(
    sec: &Security,
    storage: &Backend,
    token: &str,
    audiences: &[String],
) -> Result<Option<(Arc<UserInfo>, Vec<String>)>, String> {
    let config = &sec.config.service_accounts;
    let Some(peeked) = peek(token) else {
        return Ok(None);
    };
    if peeked.iss != config.issuer && peeked.iss != LEGACY_ISSUER {
        return Ok(None);
    }
    let cached = sec.token_cache.borrow_mut().get(token);
    let claims = match cached {
        Some(c) => c,
        None => {
            let c = Arc::new(verify(config, token)?);
            sec.token_cache.borrow_mut().put(token, c.clone());
            c
        }
    };
    let granted: Vec<String> = if claims.is_legacy() {
        // Legacy tokens have no audience: they are for the API server.
        audiences
            .iter()
            .filter(|a| config.audiences.contains(a))
            .cloned()
            .collect()
    } else {
        audiences
            .iter()
            .filter(|a| claims.aud.contains(a))
            .cloned()
            .collect()
    };
    if granted.is_empty() {
        return Err("token audiences are not valid for this server".into());
    }
    let (ns, name, uid) = claims.account().ok_or("token names no service account")?;
    if config.lookup {
        check_still_valid(sec, storage, &claims, token, ns, name, uid).await?;
    }
    let mut user = UserInfo {
        name: service_account_username(ns, name),
        uid: uid.to_string(),
        groups: service_account_groups(ns),
        ..Default::default()
    };
    if !claims.jti.is_empty() {
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    if let Some(k) = &claims.kube {
        for (kind, r) in [("pod", &k.pod), ("node", &k.node)] {
            if let Some(r) = r {
                user.extra.insert(
                    format!("authentication.kubernetes.io/{kind}-name"),
                    vec![r.name.clone()],
                );
                user.extra.insert(
                    format!("authentication.kubernetes.io/{kind}-uid"),
                    vec![r.uid.clone()],
                );
            }
        }
    }
    Ok(Some((Arc::new(user), granted)))
}

/// The account must still exist with the token's uid (and not be on its
/// way out); a bound object likewise; a legacy token must still be the
/// one in its Secret.
async fn check_still_valid(
    sec: &Security,
    storage: &Backend,
    claims: &Claims,
    token: &str,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<(), String> {
    {
        let accounts = sec.accounts.borrow();
        match accounts.get(&(ns.to_string(), name.to_string())) {
            Some(a) if a.uid == uid && !a.terminating => {}
            Some(a) if a.uid == uid => {
                return Err(format!("service account {ns}/{name} is being deleted"))
            }
            _ => return Err(format!("service account {ns}/{name} has been deleted")),
        }
    }
    let mut bound: Vec<(&str, &str, &ObjectRef)> = Vec::new();
    if let Some(k) = &claims.kube {
        if let Some(p) = &k.pod {
            bound.push(("pods", ns, p));
        }
        if let Some(s) = &k.secret {
            bound.push(("secrets", ns, s));
        }
        if let Some(n) = &k.node {
            bound.push(("nodes", "", n));
        }
    }
    for (resource, ns, r) in bound {
        let obj = storage
            .get(&sec.keys.builtin("", resource), ns, &r.name)
            .await
            .map_err(|e| status(e).message)?;
        match obj {
            Some(o) if o.uid() == r.uid => {}
            _ => {
                return Err(format!(
                    "{} {:?} bound to this token has been deleted",
                    resource, r.name
                ))
            }
        }
    }
    if claims.is_legacy() {
        let secret = claims.legacy_secret.as_deref().unwrap_or_default();
        let obj = storage
            .get(&sec.keys.builtin("", "secrets"), ns, secret)
            .await
            .map_err(|e| status(e).message)?
            .ok_or_else(|| format!("secret {ns}/{secret} of this token has been deleted"))?;
        let v = obj.to_value();
        use base64::Engine;
        let stored = v
            .pointer("/data/token")
            .and_then(|t| t.as_str())
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok());
        if stored.as_deref() != Some(token.as_bytes()) {
            return Err(format!(
                "token does not match the one in secret {ns}/{secret}"
            ));
        }
    }
    Ok(())
}

/// What a bound token is issued for.
pub struct TokenSpec<'a> {
    pub namespace: &'a str,
    pub account: ObjectRef,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    /// ("Pod" | "Secret" | "Node", name, uid).
    pub bound: Option<(&'a str, ObjectRef)>,
}

/// Signs a bound token; returns it and its expiry (unix seconds).
pub fn issue(config: &ServiceAccountConfig, spec: TokenSpec<'_>) -> Result<(String, i64), String> {
    let now = chrono::Utc::now().timestamp();
    let exp = now + spec.expiration_seconds;
    let mut kube = KubeClaims {
        namespace: spec.namespace.to_string(),
        serviceaccount: spec.account.clone(),
        ..Default::default()
    };
    match spec.bound {
        Some(("Pod", r)) => kube.pod = Some(r),
        Some(("Secret", r)) => kube.secret = Some(r),
        Some(("Node", r)) => kube.node = Some(r),
        _ => {}
    }
    let claims = Claims {
        iss: config.issuer.clone(),
        sub: service_account_username(spec.namespace, &spec.account.name),
        aud: spec.audiences,
        exp: Some(exp),
        iat: Some(now),
        nbf: Some(now),
        jti: uuid::Uuid::new_v4().to_string(),
        kube: Some(kube),
        ..Default::default()
    };
    Ok((sign(config, &claims)?, exp))
}

/// Signs a legacy (Secret-stored, non-expiring) token.
pub fn issue_legacy(
    config: &ServiceAccountConfig,
    ns: &str,
    account: &ObjectRef,
    secret: &str,
) -> Result<String, String> {
    let claims = Claims {
        iss: LEGACY_ISSUER.into(),
        sub: service_account_username(ns, &account.name),
        legacy_namespace: Some(ns.into()),
        legacy_secret: Some(secret.into()),
        legacy_name: Some(account.name.clone()),
        legacy_uid: Some(account.uid.clone()),
        ..Default::default()
    };
    sign(config, &claims)
}

fn sign(config: &ServiceAccountConfig, claims: &Claims) -> Result<String, String> {
    let header = Header {
        alg: config.keys.algorithm,
        kid: Some(config.keys.kid.clone()),
        ..Header::new(Algorithm::ES256)
    };
    jsonwebtoken::encode(&header, claims, &config.keys.signing)
        .map_err(|e| format!("signing token: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audience_claim_may_be_a_string_or_a_list() {
        let one: Claims = serde_json::from_str(r#"{"aud": "api"}"#).unwrap();
        assert_eq!(one.aud, vec!["api"]);
        let many: Claims = serde_json::from_str(r#"{"aud": ["a", "b"]}"#).unwrap();
        assert_eq!(many.aud, vec!["a", "b"]);
        let legacy: Claims = serde_json::from_str(
            r#"{"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
                "kubernetes.io/serviceaccount/service-account.name": "sa",
                "kubernetes.io/serviceaccount/service-account.uid": "u1"}"#,
        )
        .unwrap();
        assert!(legacy.is_legacy());
        assert_eq!(legacy.account(), Some(("ns", "sa", "u1")));
    }

    #[test]
    fn peek_reads_only_jwt_shapes() {
        assert!(peek("abcdef.0123456789abcdef").is_none());
        assert!(peek("not a token").is_none());
        use base64::Engine;
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"iss":"x"}"#);
        assert_eq!(peek(&format!("h.{body}.s")).unwrap().iss, "x");
    }
}
