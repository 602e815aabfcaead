//! Storage keys and key → shard routing.
//!
//! Keys follow kube-apiserver's etcd layout ([`KeyLayout`]), so a backend
//! that stores in etcd keeps kube's paths and tools that read them work.
//!
//! The hash must be stable across builds and restarts (durable storage
//! re-distributes by it), so it is xxh3 over the key's parts, not std's
//! randomly seeded hasher.

use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

/// kube's `--etcd-prefix` default.
pub const DEFAULT_PREFIX: &str = "/registry";

/// Built-in resources kept under another path than their plural (kube's
/// historical names, which its etcd data still uses).
const SPECIAL_PATHS: &[(&str, &str, &str)] = &[
    ("", "replicationcontrollers", "controllers"),
    ("", "endpoints", "services/endpoints"),
    ("", "services", "services/specs"),
    ("", "nodes", "minions"),
    ("extensions", "ingresses", "ingress"),
    ("networking.k8s.io", "ingresses", "ingress"),
];

/// Groups whose built-in resources are kept under `group/plural`, as
/// custom resources are (the servers kube chains behind its own).
const GROUP_QUALIFIED: &[&str] = &["apiextensions.k8s.io", "apiregistration.k8s.io"];

/// Where each kind's objects live: `{prefix}/{resource path}`, then the
/// namespace (if any) and the name. The resource path is the plural for
/// built-in kinds (with kube's historical exceptions) and `group/plural`
/// for kinds defined at runtime. A catalog entry carries its path as its
/// `storage_key`, so every backend reads the same layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    prefix: String,
}

impl Default for KeyLayout {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_string(),
        }
    }
}

impl KeyLayout {
    /// A layout under `prefix` (kube's `--etcd-prefix`): absolute, and
    /// with no empty or relative segments; a trailing `/` is dropped.
    pub fn new(prefix: &str) -> Result<Self, String> {
        let trimmed = prefix.trim_end_matches('/');
        if !prefix.starts_with('/') {
            return Err(format!("storage prefix {prefix:?} must start with /"));
        }
        if trimmed
            .split('/')
            .skip(1)
            .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(format!(
                "storage prefix {prefix:?} has an empty or relative segment"
            ));
        }
        Ok(Self {
            prefix: trimmed.to_string(),
        })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of a built-in resource.
    pub fn builtin(&self, group: &str, plural: &str) -> Arc<str> {
        if let Some((_, _, path)) = SPECIAL_PATHS
            .iter()
            .find(|(g, p, _)| *g == group && *p == plural)
        {
            return Arc::from(format!("{}/{path}", self.prefix));
        }
        if GROUP_QUALIFIED.contains(&group) {
            return self.custom(group, plural);
        }
        Arc::from(format!("{}/{plural}", self.prefix))
    }

    /// The key of a resource defined at runtime (a custom resource).
    pub fn custom(&self, group: &str, plural: &str) -> Arc<str> {
        Arc::from(format!("{}/{group}/{plural}", self.prefix))
    }

    /// One object's full key under its resource's key, as etcd stores it.
    pub fn object_key(resource: &str, namespace: &str, name: &str) -> String {
        if namespace.is_empty() {
            format!("{resource}/{name}")
        } else {
            format!("{resource}/{namespace}/{name}")
        }
    }
}

/// The identity of one stored object. `resource` is the catalog entry's
/// version-free storage key (`apps/deployments`); cluster-scoped objects have
/// an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub resource: Arc<str>,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(resource: Arc<str>, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            resource,
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// Which of `shards` owns this key.
    pub fn shard(&self, shards: usize) -> usize {
        shard_for(&self.resource, &self.namespace, &self.name, shards)
    }
}

/// Routing without building an [`ObjectKey`].
pub fn shard_for(resource: &str, namespace: &str, name: &str, shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    let mut h = Xxh3::new();
    h.update(resource.as_bytes());
    h.update(&[0]);
    h.update(namespace.as_bytes());
    h.update(&[0]);
    h.update(name.as_bytes());
    (h.digest() % shards as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_kubes() {
        let l = KeyLayout::default();
        assert_eq!(&*l.builtin("", "pods"), "/registry/pods");
        assert_eq!(&*l.builtin("apps", "deployments"), "/registry/deployments");
        assert_eq!(&*l.builtin("", "services"), "/registry/services/specs");
        assert_eq!(&*l.builtin("", "endpoints"), "/registry/services/endpoints");
        assert_eq!(&*l.builtin("", "nodes"), "/registry/minions");
        assert_eq!(
            &*l.builtin("", "replicationcontrollers"),
            "/registry/controllers"
        );
        assert_eq!(
            &*l.builtin("networking.k8s.io", "ingresses"),
            "/registry/ingress"
        );
        assert_eq!(
            &*l.builtin("apiregistration.k8s.io", "apiservices"),
            "/registry/apiregistration.k8s.io/apiservices"
        );
        assert_eq!(
            &*l.custom("example.com", "widgets"),
            "/registry/example.com/widgets"
        );
        assert_eq!(
            KeyLayout::object_key("/registry/pods", "default", "web"),
            "/registry/pods/default/web"
        );
        assert_eq!(
            KeyLayout::object_key("/registry/minions", "", "n1"),
            "/registry/minions/n1"
        );
        let other = KeyLayout::new("/kubeshard/").unwrap();
        assert_eq!(other.prefix(), "/kubeshard");
        assert_eq!(&*other.builtin("", "configmaps"), "/kubeshard/configmaps");
        for bad in ["registry", "/a//b", "/a/../b", ""] {
            assert!(KeyLayout::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(KeyLayout::new("/").unwrap().prefix(), "");
    }

    #[test]
    fn routing_is_stable_and_spread() {
        let r: Arc<str> = Arc::from("/configmaps");
        let k = ObjectKey::new(r.clone(), "default", "a");
        assert_eq!(k.shard(4), k.shard(4));
        assert_eq!(k.shard(1), 0);
        let mut counts = [0usize; 4];
        for i in 0..4000 {
            counts[shard_for(&r, "default", &format!("cm-{i}"), 4)] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }

    #[test]
    fn separator_prevents_ambiguity() {
        // "a"+"bc" and "ab"+"c" must not be forced onto the same hash input.
        let x = shard_for("r", "a", "bc", 1 << 20);
        let y = shard_for("r", "ab", "c", 1 << 20);
        assert_ne!(x, y);
    }
}
