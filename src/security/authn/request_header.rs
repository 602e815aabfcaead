//! The request-header authenticator: an authenticating proxy (a
//! connection whose client certificate the request-header CA signs, with
//! an allowed CommonName) names the user in request headers. Anyone else
//! sending those headers is not listened to.

use crate::security::front_proxy::RequestHeader;
use crate::serving::conn::ConnInfo;
use http::HeaderMap;
use kubeshard_core::authn::UserInfo;

/// Ok(Some(user)) when a trusted proxy named one; Ok(None) when the
/// connection is not a trusted proxy's, or it named no user (other
/// authenticators then look at the request); Err when the certificate
/// verified but its name is not allowed.
pub fn authenticate(
    rh: &RequestHeader,
    conn: &ConnInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, String> {
    let verdict = conn
        .front_proxy
        .get_or_init(|| crate::pki::client_cert::verify(&rh.anchors, &conn.client_chain));
    let Ok(proxy) = verdict else {
        return Ok(None);
    };
    let proxy = proxy.at(chrono::Utc::now().timestamp())?;
    if !rh.allowed_names.is_empty() && !rh.allowed_names.contains(&proxy.name) {
        return Err(format!(
            "x509: subject with cn={} is not in the allowed list",
            proxy.name
        ));
    }
    Ok(user_from(rh, headers))
}

/// The user the headers name (None without a user name).
fn user_from(rh: &RequestHeader, headers: &HeaderMap) -> Option<UserInfo> {
    let first = |names: &[http::HeaderName]| {
        names
            .iter()
            .filter_map(|n| headers.get(n)?.to_str().ok())
            .map(str::trim)
            .find(|v| !v.is_empty())
            .map(str::to_string)
    };
    let name = first(&rh.username_headers)?;
    let uid = first(&rh.uid_headers).unwrap_or_default();
    let groups = rh
        .group_headers
        .iter()
        .flat_map(|n| headers.get_all(n))
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (header, value) in headers {
        let lower = header.as_str();
        let Some(key) = rh
            .extra_prefixes
            .iter()
            .find_map(|p| lower.strip_prefix(p.as_str()))
        else {
            continue;
        };
        let Ok(value) = value.to_str() else { continue };
        // Keys travel URL-escaped (a header name cannot carry `/`), and
        // header names are lowercase, so keys read back lowercased.
        let key = percent_encoding::percent_decode_str(key)
            .decode_utf8_lossy()
            .into_owned();
        extra.entry(key).or_default().push(value.to_string());
    }
    Some(UserInfo {
        name,
        uid,
        groups,
        extra,
    })
}

/// The headers an outgoing proxied request names `user` with (kube's
/// fixed `X-Remote-*` names, which extension servers read by default);
/// the caller removes any of them the client sent first.
pub fn identity_headers(user: &UserInfo, out: &mut HeaderMap) {
    use http::{HeaderName, HeaderValue};
    let mut put = |name: HeaderName, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            out.append(name, v);
        }
    };
    put(HeaderName::from_static("x-remote-user"), &user.name);
    if !user.uid.is_empty() {
        put(HeaderName::from_static("x-remote-uid"), &user.uid);
    }
    for g in &user.groups {
        put(HeaderName::from_static("x-remote-group"), g);
    }
    for (key, values) in &user.extra {
        let escaped = percent_encoding::utf8_percent_encode(key, EXTRA_KEY).to_string();
        let Ok(name) = HeaderName::try_from(format!("x-remote-extra-{escaped}")) else {
            continue;
        };
        for v in values {
            put(name.clone(), v);
        }
    }
}

/// What an extra key escapes to fit a header name (kube escapes all but
/// the RFC 7230 token characters, `%` included).
const EXTRA_KEY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'*')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RequestHeader {
        RequestHeader {
            anchors: Vec::new(),
            certs: Vec::new(),
            ca_pem: String::new(),
            allowed_names: Vec::new(),
            username_headers: vec!["x-remote-user".parse().unwrap()],
            uid_headers: vec!["x-remote-uid".parse().unwrap()],
            group_headers: vec!["x-remote-group".parse().unwrap()],
            extra_prefixes: vec!["x-remote-extra-".into()],
        }
    }

    #[test]
    fn identity_round_trips_through_headers() {
        let mut user = UserInfo::new("alice", &["devs", "system:authenticated"]);
        user.uid = "42".into();
        user.extra
            .insert("example.org/Team%".into(), vec!["a".into(), "b".into()]);
        let mut headers = HeaderMap::new();
        identity_headers(&user, &mut headers);
        assert!(headers.contains_key("x-remote-extra-example.org%2Fteam%25"));
        let back = user_from(&config(), &headers).unwrap();
        assert_eq!(back.name, "alice");
        assert_eq!(back.uid, "42");
        assert_eq!(back.groups, ["devs", "system:authenticated"]);
        // Keys come back lowercased, as kube's authenticator reads them.
        assert_eq!(back.extra["example.org/team%"], ["a", "b"]);
    }

    #[test]
    fn no_user_header_names_no_one() {
        let mut headers = HeaderMap::new();
        headers.insert("x-remote-group", "admins".parse().unwrap());
        assert!(user_from(&config(), &headers).is_none());
        headers.insert("x-remote-user", " ".parse().unwrap());
        assert!(user_from(&config(), &headers).is_none());
    }
}
