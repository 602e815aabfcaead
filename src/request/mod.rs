//! What a request is about, parsed from its method and path the way
//! kube-apiserver's RequestInfoFactory does: resource requests
//! (`/api/v1/namespaces/ns/pods/name/status`) versus everything else
//! (discovery, health, version).

pub mod metrics;

use std::collections::HashMap;

/// Subresources of a namespace itself, which would otherwise parse as a
/// resource inside the namespace.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub is_resource_request: bool,
    /// get, list, watch, create, update, patch, delete, deletecollection;
    /// for non-resource requests the lower-cased method.
    pub verb: String,
    /// "api" or "apis" for resource requests.
    pub api_prefix: String,
    pub group: String,
    pub version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub path: String,
    /// The path goes on past the subresource: only a `proxy` subresource
    /// has such a path (the one it forwards to). A flag, not the path:
    /// this struct is moved with every request's future.
    pub past_subresource: bool,
}

/// Query parameters, first value wins (as Go's `url.Values.Get`).
#[derive(Debug, Clone, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(query: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            map.entry(k.into_owned()).or_insert_with(|| v.into_owned());
        }
        Self(map)
    }

    pub fn remove(&mut self, key: &str) {
        self.0.remove(key);
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Go's strconv.ParseBool set of spellings, as kube accepts them.
    pub fn flag(&self, key: &str) -> bool {
        matches!(
            self.get(key),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }
}

impl RequestInfo {
    /// kube's long-running requests: watches, and the connect subresources
    /// (logs, streams, proxies), which run as long as their client wants
    /// and are neither timed out nor counted against the in-flight limit.
    pub fn is_long_running(&self) -> bool {
        self.is_resource_request
            && (self.verb == "watch"
                || matches!(
                    self.subresource.as_str(),
                    "attach" | "exec" | "proxy" | "log" | "portforward"
                ))
    }

    pub fn parse(method: &http::Method, path: &str, query: &Query) -> Self {
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.as_str().to_ascii_lowercase(),
            ..Default::default()
        };
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        let Some(prefix) = parts.first() else {
            return info;
        };
        let mut rest: &[&str] = &parts[1..];
        match *prefix {
            "api" => {
                let Some(version) = rest.first() else {
                    return info;
                };
                info.version = version.to_string();
                rest = &rest[1..];
            }
            "apis" => {
                if rest.len() < 2 {
                    if let Some(g) = rest.first() {
                        info.group = g.to_string();
                    }
                    return info;
                }
                info.group = rest[0].to_string();
                info.version = rest[1].to_string();
                rest = &rest[2..];
            }
            _ => return info,
        }
        info.api_prefix = prefix.to_string();
        if rest.is_empty() {
            return info;
        }
        info.is_resource_request = true;
        let mut watch_prefix = false;
        if rest[0] == "watch" {
            watch_prefix = true;
            rest = &rest[1..];
        }
        if rest.first() == Some(&"namespaces")
            && rest.len() >= 3
            && !NAMESPACE_SUBRESOURCES.contains(&rest[2])
        {
            // /namespaces/{ns}/{resource}...; /namespaces/{name} and
            // /namespaces/{name}/{sub} address the namespace itself.
            info.namespace = rest[1].to_string();
            rest = &rest[2..];
            info.resource = rest[0].to_string();
            if let Some(n) = rest.get(1) {
                info.name = n.to_string();
            }
        } else {
            info.resource = rest[0].to_string();
            if let Some(n) = rest.get(1) {
                info.name = n.to_string();
            }
        }
        // As kube: the subresource is the third part; what follows is the
        // path a `proxy` subresource forwards (and a 404 for any other).
        if let Some(s) = rest.get(2) {
            info.subresource = s.to_string();
        }
        info.past_subresource = rest.len() > 3;
        if info.resource == "namespaces" && !info.name.is_empty() && info.namespace.is_empty() {
            info.namespace = info.name.clone();
        }
        info.verb = match *method {
            http::Method::GET | http::Method::HEAD => {
                // `?watch` makes a collection GET a watch; a GET of one
                // named object stays a GET (kube routes it to the getter).
                if watch_prefix || (info.name.is_empty() && query.flag("watch")) {
                    "watch".into()
                } else if info.name.is_empty() {
                    "list".into()
                } else {
                    "get".into()
                }
            }
            http::Method::POST => "create".into(),
            http::Method::PUT => "update".into(),
            http::Method::PATCH => "patch".into(),
            http::Method::DELETE => {
                if info.name.is_empty() {
                    "deletecollection".into()
                } else {
                    "delete".into()
                }
            }
            _ => info.verb,
        };
        if matches!(info.verb.as_str(), "list" | "watch") && info.name.is_empty() {
            info.name = selected_name(query).unwrap_or_default();
        }
        info
    }
}

/// The name a list or watch selects with `fieldSelector=metadata.name=…`:
/// kube authorizes such a request for that name, so a user allowed one
/// object by `resourceNames` may list or watch just that object.
fn selected_name(query: &Query) -> Option<String> {
    let selector =
        kubeshard_core::selector::fields::FieldSelector::parse(query.get("fieldSelector")?).ok()?;
    let name = selector.exact_match("metadata.name")?;
    let valid = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%']);
    valid.then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn p(m: Method, path: &str, q: &str) -> RequestInfo {
        RequestInfo::parse(&m, path, &Query::parse(Some(q)))
    }

    #[test]
    fn namespaced_resources() {
        let i = p(Method::GET, "/api/v1/namespaces/ns1/pods/p1/status", "");
        assert!(i.is_resource_request);
        assert_eq!((i.group.as_str(), i.version.as_str()), ("", "v1"));
        assert_eq!(
            (i.namespace.as_str(), i.resource.as_str(), i.name.as_str()),
            ("ns1", "pods", "p1")
        );
        assert_eq!(i.subresource, "status");
        assert_eq!(i.verb, "get");
        let l = p(
            Method::GET,
            "/apis/apps/v1/namespaces/ns1/deployments",
            "watch=true",
        );
        assert_eq!((l.group.as_str(), l.verb.as_str()), ("apps", "watch"));
        assert_eq!(
            p(Method::DELETE, "/api/v1/namespaces/a/configmaps", "").verb,
            "deletecollection"
        );
    }

    #[test]
    fn namespaces_themselves() {
        let i = p(Method::GET, "/api/v1/namespaces/ns1", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.namespace.as_str()),
            ("namespaces", "ns1", "ns1")
        );
        let f = p(Method::PUT, "/api/v1/namespaces/ns1/finalize", "");
        assert_eq!(
            (f.resource.as_str(), f.name.as_str(), f.subresource.as_str()),
            ("namespaces", "ns1", "finalize")
        );
        let all = p(Method::GET, "/api/v1/namespaces", "");
        assert_eq!(
            (all.resource.as_str(), all.verb.as_str()),
            ("namespaces", "list")
        );
        let w = p(Method::GET, "/api/v1/watch/namespaces/a/configmaps", "");
        assert_eq!(
            (w.verb.as_str(), w.namespace.as_str(), w.resource.as_str()),
            ("watch", "a", "configmaps")
        );
    }

    #[test]
    fn non_resource_paths() {
        assert!(!p(Method::GET, "/healthz", "").is_resource_request);
        assert!(!p(Method::GET, "/apis/apps/v1", "").is_resource_request);
        let g = p(Method::GET, "/apis/apps", "");
        assert_eq!(g.group, "apps");
        assert!(!p(Method::GET, "/api", "").is_resource_request);
    }

    #[test]
    fn lists_and_watches_selecting_one_name_name_it() {
        let w = p(
            Method::GET,
            "/api/v1/namespaces/a/secrets",
            "watch=1&fieldSelector=metadata.name%3Ds1",
        );
        assert_eq!((w.verb.as_str(), w.name.as_str()), ("watch", "s1"));
        let l = p(
            Method::GET,
            "/api/v1/secrets",
            "fieldSelector=type%3DOpaque,metadata.name%3Ds2",
        );
        assert_eq!((l.verb.as_str(), l.name.as_str()), ("list", "s2"));
        for q in [
            "fieldSelector=metadata.name%21%3Ds1",
            "fieldSelector=metadata.name%3D..",
            "fieldSelector=type%3DOpaque",
        ] {
            assert_eq!(p(Method::GET, "/api/v1/secrets", q).name, "", "{q}");
        }
        let by_path = p(Method::GET, "/api/v1/watch/namespaces/a/secrets/s1", "");
        assert_eq!(
            (by_path.verb.as_str(), by_path.name.as_str()),
            ("watch", "s1")
        );
        let named = p(Method::GET, "/api/v1/namespaces/a/secrets/s1", "watch=true");
        assert_eq!((named.verb.as_str(), named.name.as_str()), ("get", "s1"));
    }

    #[test]
    fn query_flags() {
        let q = Query::parse(Some("watch=1&limit=5&limit=6&x=%2Fy"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("limit"), Some("5"));
        assert_eq!(q.get("x"), Some("/y"));
        assert!(!q.flag("missing"));
    }
}
