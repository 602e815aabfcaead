//! Storage keys and key → shard routing.
//!
//! The hash must be stable across builds and restarts (durable storage
//! re-distributes by it), so it is xxh3 over the key's parts, not std's
//! randomly seeded hasher.

use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

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
