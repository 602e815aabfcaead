//! Bootstrap tokens: `<id>.<secret>` bearer tokens backed by Secrets of
//! type `bootstrap.kubernetes.io/token` named `bootstrap-token-<id>` in
//! kube-system. The rules for when such a Secret authenticates its token.

use super::UserInfo;
use serde_json::Value;

pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
pub const SECRET_PREFIX: &str = "bootstrap-token-";
pub const NAMESPACE: &str = "kube-system";
pub const GROUP: &str = "system:bootstrappers";
const USER_PREFIX: &str = "system:bootstrap:";

/// Splits a bearer token of the form `[a-z0-9]{6}.[a-z0-9]{16}`.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// Why a bootstrap Secret does not authenticate a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    NotABootstrapSecret,
    Mismatch,
    Expired,
    NotForAuthentication,
    BadExtraGroups(String),
}

/// Checks `token_secret` against the Secret (JSON, `data` base64) at
/// `now` (RFC 3339, compared as timestamps) and gives the user it
/// authenticates.
pub fn authenticate(
    secret: &Value,
    token_id: &str,
    token_secret: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<UserInfo, Rejection> {
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE)
        || crate::meta::meta_str(secret, "deletionTimestamp").is_some()
    {
        return Err(Rejection::NotABootstrapSecret);
    }
    let field = |k: &str| data_field(secret, k);
    if field("token-id").as_deref() != Some(token_id) {
        return Err(Rejection::Mismatch);
    }
    let stored = field("token-secret").unwrap_or_default();
    if !constant_time_eq(stored.as_bytes(), token_secret.as_bytes()) {
        return Err(Rejection::Mismatch);
    }
    if let Some(exp) = field("expiration") {
        match chrono::DateTime::parse_from_rfc3339(&exp) {
            Ok(t) if t.with_timezone(&chrono::Utc) > now => {}
            _ => return Err(Rejection::Expired),
        }
    }
    if field("usage-bootstrap-authentication").as_deref() != Some("true") {
        return Err(Rejection::NotForAuthentication);
    }
    let mut groups = vec![GROUP.to_string()];
    if let Some(extra) = field("auth-extra-groups") {
        for g in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            if !valid_extra_group(g) {
                return Err(Rejection::BadExtraGroups(g.to_string()));
            }
            if !groups.iter().any(|x| x == g) {
                groups.push(g.to_string());
            }
        }
    }
    Ok(UserInfo {
        name: format!("{USER_PREFIX}{token_id}"),
        groups,
        ..Default::default()
    })
}

/// `system:bootstrappers:` followed by lower-case alphanumerics, `:` and
/// `-`, ending alphanumeric (kube's BootstrapGroupPattern).
fn valid_extra_group(g: &str) -> bool {
    let Some(rest) = g.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    !rest.is_empty()
        && rest.len() <= 256
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn data_field(secret: &Value, key: &str) -> Option<String> {
    use base64::Engine;
    let raw = secret.get("data")?.get(key)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(raw).ok()?;
    String::from_utf8(bytes).ok()
}

/// Compares without an early exit, so timing tells nothing about where a
/// guessed secret first differs.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    fn secret(fields: &[(&str, &str)]) -> Value {
        let enc = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let data: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), json!(enc(v))))
            .collect();
        json!({"type": SECRET_TYPE, "metadata": {"name": "bootstrap-token-abcdef"}, "data": data})
    }

    fn now() -> chrono::DateTime<chrono::Utc> {
        "2030-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn token_shape() {
        assert_eq!(
            parse_token("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        assert_eq!(parse_token("ABCDEF.0123456789abcdef"), None);
        assert_eq!(parse_token("abcdef.0123"), None);
        assert_eq!(parse_token("nodot"), None);
    }

    #[test]
    fn valid_secret_authenticates_with_extra_groups() {
        let s = secret(&[
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
            ("auth-extra-groups", "system:bootstrappers:worker"),
            ("expiration", "2031-01-01T00:00:00Z"),
        ]);
        let u = authenticate(&s, "abcdef", "0123456789abcdef", now()).unwrap();
        assert_eq!(u.name, "system:bootstrap:abcdef");
        assert_eq!(
            u.groups,
            vec!["system:bootstrappers", "system:bootstrappers:worker"]
        );
    }

    #[test]
    fn rejections() {
        let base = [
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
        ];
        let s = secret(&base);
        assert_eq!(
            authenticate(&s, "abcdef", "0123456789abcdeX", now()),
            Err(Rejection::Mismatch)
        );
        let mut expired = base.to_vec();
        expired.push(("expiration", "2020-01-01T00:00:00Z"));
        assert_eq!(
            authenticate(&secret(&expired), "abcdef", "0123456789abcdef", now()),
            Err(Rejection::Expired)
        );
        let unused = secret(&base[..2]);
        assert_eq!(
            authenticate(&unused, "abcdef", "0123456789abcdef", now()),
            Err(Rejection::NotForAuthentication)
        );
        let mut bad = base.to_vec();
        bad.push(("auth-extra-groups", "system:masters"));
        assert!(matches!(
            authenticate(&secret(&bad), "abcdef", "0123456789abcdef", now()),
            Err(Rejection::BadExtraGroups(_))
        ));
    }
}
