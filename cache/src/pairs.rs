//! Small sets of string pairs (an object's labels, its selectable fields)
//! packed into one allocation.
//!
//! Every stored object carries a few of each, and as `(String, String)`
//! pairs they cost two allocations per pair plus the slice: about 240 bytes
//! for two labels, more than a tenth of a typical object. Packed, they are
//! one allocation of their bytes plus a length prefix per string — and
//! shareable: the pods of one ReplicaSet, the objects of one release, carry
//! the same labels, so the store keeps one copy of a set (`PairInterner`).

use std::sync::Arc;

/// Pairs in the order given (callers sort labels by key), each string
/// prefixed with its length as a little-endian u16 (longer strings are
/// cut: no label key, label value or field a filter uses comes close).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PackedPairs(Arc<[u8]>);

impl Default for PackedPairs {
    fn default() -> Self {
        Self(Arc::from(&[][..]))
    }
}

impl PackedPairs {
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        // Sized for a typical object's labels so the buffer does not grow
        // pair by pair (it is copied into the shared slice at its size).
        let mut buf = Vec::with_capacity(256);
        for (k, v) in pairs {
            for s in [k, v] {
                let s = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
                buf.extend_from_slice(&(s.len() as u16).to_le_bytes());
                buf.extend_from_slice(s);
            }
        }
        Self(Arc::from(buf))
    }

    /// Whether both hold the very same bytes (one shared copy).
    pub fn shares_with(&self, other: &PackedPairs) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub fn iter(&self) -> PairIter<'_> {
        PairIter(&self.0)
    }

    /// The value of `key`. Keys are compared as bytes, and only the
    /// value found is decoded: selectors call this for every event a
    /// watcher is offered.
    pub fn get(&self, key: &str) -> Option<&str> {
        let mut it = PairIter(&self.0);
        loop {
            let k = it.next_bytes()?;
            let v = it.next_bytes()?;
            if k == key.as_bytes() {
                return std::str::from_utf8(v).ok();
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Heap bytes held (shared sets are counted by each holder).
    pub fn heap_size(&self) -> usize {
        self.0.len()
    }

    pub fn to_vec(&self) -> Vec<(String, String)> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl std::fmt::Debug for PackedPairs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

pub struct PairIter<'a>(&'a [u8]);

impl<'a> PairIter<'a> {
    fn next_bytes(&mut self) -> Option<&'a [u8]> {
        let len = u16::from_le_bytes(self.0.get(..2)?.try_into().ok()?) as usize;
        let s = self.0.get(2..2 + len)?;
        self.0 = &self.0[2 + len..];
        Some(s)
    }

    fn next_str(&mut self) -> Option<&'a str> {
        // Only whole &str were packed, but a cut at u16::MAX may have split
        // a character: treat what does not decode as absent.
        std::str::from_utf8(self.next_bytes()?).ok()
    }
}

impl<'a> Iterator for PairIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let k = self.next_str()?;
        let v = self.next_str()?;
        Some((k, v))
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for PackedPairs {
    fn from_iter<T: IntoIterator<Item = (&'a str, &'a str)>>(iter: T) -> Self {
        Self::new(iter)
    }
}

/// Hands out one shared copy of each set of pairs seen recently. Bounded:
/// once full it starts over, so sets nobody holds any more are not kept
/// for ever (objects keep the copies they were given).
#[derive(Default)]
pub struct PairInterner {
    known: hashbrown::HashSet<PackedPairs>,
}

/// Distinct sets remembered before starting over.
const INTERNED_SETS: usize = 4096;

impl PairInterner {
    /// The shared copy of `pairs` (empty sets are not worth sharing).
    pub fn intern(&mut self, pairs: &PackedPairs) -> PackedPairs {
        if pairs.is_empty() {
            return pairs.clone();
        }
        if let Some(known) = self.known.get(pairs) {
            return known.clone();
        }
        if self.known.len() >= INTERNED_SETS {
            self.known.clear();
        }
        self.known.insert(pairs.clone());
        pairs.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_sets_share_one_copy_and_the_interner_stays_bounded() {
        let mut interner = PairInterner::default();
        let a = interner.intern(&PackedPairs::new([("app", "web"), ("tier", "front")]));
        let b = interner.intern(&PackedPairs::new([("app", "web"), ("tier", "front")]));
        let c = interner.intern(&PackedPairs::new([("app", "db")]));
        assert!(a.shares_with(&b));
        assert_eq!(a, b);
        assert!(!a.shares_with(&c));
        assert_eq!(c.get("app"), Some("db"));
        for i in 0..INTERNED_SETS * 2 {
            let v = i.to_string();
            interner.intern(&PackedPairs::new([("n", v.as_str())]));
            assert!(interner.known.len() <= INTERNED_SETS);
        }
        // Sets handed out earlier stay valid after the interner started over.
        assert_eq!(a.get("tier"), Some("front"));
    }

    proptest! {
        #[test]
        fn pairs_round_trip(pairs in prop::collection::vec((".{0,40}", ".{0,80}"), 0..12)) {
            let packed = PackedPairs::new(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let back: Vec<(String, String)> = packed.to_vec();
            prop_assert_eq!(&back, &pairs);
            for (k, v) in &pairs {
                let first = pairs.iter().find(|(k2, _)| k2 == k).map(|(_, v)| v.as_str());
                prop_assert_eq!(packed.get(k), first);
                let _ = v;
            }
        }
    }

    #[test]
    fn empty_and_missing() {
        let p = PackedPairs::default();
        assert!(p.is_empty());
        assert_eq!(p.get("a"), None);
        let p = PackedPairs::new([("app", "web"), ("tier", "")]);
        assert_eq!(p.get("tier"), Some(""));
        assert_eq!(p.get("ap"), None);
        assert_eq!(p.heap_size(), 2 + 3 + 2 + 3 + 2 + 4 + 2);
    }
}
