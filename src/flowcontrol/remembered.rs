//! Classification results remembered per executor. Walking the schemas
//! compares a dozen subject and rule lists (about a twentieth of a GET's
//! instructions); a request is classified by what it is — who, which
//! verb, which resource or URL, which namespace — never by the object's
//! name, so the same few thousand combinations recur and their answers
//! are kept until the configuration changes.

use crate::request::RequestInfo;
use kubeshard_core::authn::UserInfo;
use std::collections::HashMap;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Combinations kept before the memory is cleared and starts again.
const CAPACITY: usize = 4096;

/// What classification reads of a request, owned.
#[derive(Debug)]
struct Key {
    user: String,
    groups: Vec<String>,
    verb: String,
    resource_request: bool,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    /// Only for non-resource requests (their URL is what rules match).
    path: String,
}

impl Key {
    fn of(user: &UserInfo, info: &RequestInfo) -> Self {
        Self {
            user: user.name.clone(),
            groups: user.groups.clone(),
            verb: info.verb.clone(),
            resource_request: info.is_resource_request,
            group: info.group.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            namespace: info.namespace.clone(),
            path: path_of(info).to_string(),
        }
    }

    fn is(&self, user: &UserInfo, info: &RequestInfo) -> bool {
        self.user == user.name
            && self.groups == user.groups
            && self.verb == info.verb
            && self.resource_request == info.is_resource_request
            && self.group == info.group
            && self.resource == info.resource
            && self.subresource == info.subresource
            && self.namespace == info.namespace
            && self.path == path_of(info)
    }
}

fn path_of(info: &RequestInfo) -> &str {
    if info.is_resource_request {
        ""
    } else {
        &info.path
    }
}

fn hash(user: &UserInfo, info: &RequestInfo) -> u64 {
    // Each field hashed on its own (one-shot hashing of short strings is
    // several times cheaper than streaming them), seeded with the hash so
    // far: no two splits of the same bytes hash alike.
    let mut h = 0u64;
    let mut field = |s: &str| {
        h = xxh3_64_with_seed(s.as_bytes(), h);
    };
    field(&user.name);
    for g in &user.groups {
        field(g);
    }
    field(&info.verb);
    field(if info.is_resource_request { "r" } else { "n" });
    field(&info.group);
    field(&info.resource);
    field(&info.subresource);
    field(&info.namespace);
    field(path_of(info));
    h
}

/// Remembered answers, checked field by field on a hit (a hash collision
/// never hands one request another's class).
pub struct Remembered<V> {
    answers: HashMap<u64, Vec<(Key, V)>>,
    len: usize,
}

impl<V> Default for Remembered<V> {
    fn default() -> Self {
        Self {
            answers: HashMap::new(),
            len: 0,
        }
    }
}

impl<V: Clone> Remembered<V> {
    /// The remembered answer, or `classify`'s, remembered.
    pub fn get_or(
        &mut self,
        user: &UserInfo,
        info: &RequestInfo,
        classify: impl FnOnce() -> Option<V>,
    ) -> Option<V> {
        let h = hash(user, info);
        if let Some(found) = self
            .answers
            .get(&h)
            .and_then(|all| all.iter().find(|(k, _)| k.is(user, info)))
        {
            return Some(found.1.clone());
        }
        let answer = classify()?;
        if self.len >= CAPACITY {
            self.clear();
        }
        self.answers
            .entry(h)
            .or_default()
            .push((Key::of(user, info), answer.clone()));
        self.len += 1;
        Some(answer)
    }

    /// Forgets everything (the configuration changed).
    pub fn clear(&mut self) {
        self.answers.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Query;

    fn info(method: http::Method, path: &str) -> RequestInfo {
        RequestInfo::parse(&method, path, &Query::default())
    }

    #[test]
    fn answers_are_per_class_not_per_object() {
        let mut r: Remembered<u32> = Remembered::default();
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        let mut calls = 0;
        let mut ask = |r: &mut Remembered<u32>, u: &UserInfo, i: &RequestInfo, v| {
            r.get_or(u, i, || {
                calls += 1;
                Some(v)
            })
        };
        let a = info(http::Method::GET, "/api/v1/namespaces/a/pods/one");
        let b = info(http::Method::GET, "/api/v1/namespaces/a/pods/two");
        assert_eq!(ask(&mut r, &alice, &a, 1), Some(1));
        assert_eq!(ask(&mut r, &alice, &b, 2), Some(1), "names do not matter");
        let other_ns = info(http::Method::GET, "/api/v1/namespaces/b/pods/one");
        assert_eq!(ask(&mut r, &alice, &other_ns, 3), Some(3));
        let bob = UserInfo::new("alice", &["system:masters"]);
        assert_eq!(ask(&mut r, &bob, &a, 4), Some(4), "groups matter");
        let h1 = info(http::Method::GET, "/healthz");
        let h2 = info(http::Method::GET, "/livez");
        assert_eq!(ask(&mut r, &alice, &h1, 5), Some(5));
        assert_eq!(ask(&mut r, &alice, &h2, 6), Some(6), "URLs matter");
        r.clear();
        assert_eq!(ask(&mut r, &alice, &a, 7), Some(7));
        assert_eq!(calls, 6);
    }
}
