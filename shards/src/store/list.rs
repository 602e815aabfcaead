//! Lists at a revision: current objects with the changes after that
//! revision undone from history, merged in key order.

use super::{NsName, ShardStore};
use kubeshard_cache::{Filter, StoredObject};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One shard's part of a list.
#[derive(Debug, Default)]
pub struct ListChunk {
    /// Matching objects in key order, at most `limit` of them.
    pub items: Vec<Arc<StoredObject>>,
    /// Matching objects after the last returned one (0 unless counted).
    pub remaining: usize,
    /// More matching objects exist after `items`.
    pub more: bool,
}

/// Parameters of a list on one shard.
#[derive(Debug, Clone)]
pub struct ListRequest {
    pub resource: Arc<str>,
    pub filter: Arc<Filter>,
    /// The snapshot revision.
    pub revision: u64,
    /// Start strictly after this key (from a continue token).
    pub start_after: Option<NsName>,
    /// 0 = no limit.
    pub limit: usize,
    /// Count all matches past the page (for remainingItemCount).
    pub count_remaining: bool,
}

impl ShardStore {
    /// This shard's part of a list at `req.revision`: current objects with
    /// the changes after that revision undone from history. Err carries the
    /// compaction point when history no longer reaches the revision.
    pub fn list(&self, req: &ListRequest) -> Result<ListChunk, u64> {
        let Some(rs) = self.resources.get(&req.resource) else {
            return Ok(ListChunk::default());
        };
        // Keys changed after the snapshot revision, mapped to their state at
        // the revision (None: did not exist then). Walking newest → oldest,
        // the last write per key is the oldest event's `prev`.
        let mut overlay: BTreeMap<NsName, Option<Arc<StoredObject>>> = BTreeMap::new();
        if req.revision < rs.history.last_revision() {
            for ev in rs.history.events_after(req.revision)?.rev() {
                let key = (ev.object.namespace.clone(), ev.object.name.clone());
                overlay.insert(key, ev.prev.clone());
            }
        }
        let ns = req.filter.namespace.as_deref();
        let lower: NsName = match (&req.start_after, ns) {
            (Some(k), _) => k.clone(),
            (None, Some(ns)) => (ns.into(), "".into()),
            (None, None) => ("".into(), "".into()),
        };
        let exclusive = req.start_after.is_some();
        let in_namespace = |k: &NsName| ns.is_none_or(|ns| *k.0 == *ns);
        let past_start = |k: &NsName| !exclusive || *k != lower;
        let current = rs
            .objects
            .range(lower.clone()..)
            .take_while(|(k, _)| in_namespace(k))
            .filter(|(k, _)| past_start(k));
        let changed = overlay
            .range(lower.clone()..)
            .take_while(|(k, _)| in_namespace(k))
            .filter(|(k, _)| past_start(k));
        let mut chunk = ListChunk::default();
        for obj in MergeOverlay::new(current, changed) {
            if !req.filter.matches(&obj) {
                continue;
            }
            if req.limit > 0 && chunk.items.len() >= req.limit {
                chunk.more = true;
                if !req.count_remaining {
                    break;
                }
                chunk.remaining += 1;
                continue;
            }
            chunk.items.push(obj);
        }
        Ok(chunk)
    }
}

/// Merges current objects with the snapshot overlay, both in key order:
/// an overlay entry replaces (or hides, when None) the current one.
struct MergeOverlay<'a, A, B>
where
    A: Iterator<Item = (&'a NsName, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a NsName, &'a Option<Arc<StoredObject>>)>,
{
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<'a, A, B> MergeOverlay<'a, A, B>
where
    A: Iterator<Item = (&'a NsName, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a NsName, &'a Option<Arc<StoredObject>>)>,
{
    fn new(a: A, b: B) -> Self {
        Self {
            a: a.peekable(),
            b: b.peekable(),
        }
    }
}

impl<'a, A, B> Iterator for MergeOverlay<'a, A, B>
where
    A: Iterator<Item = (&'a NsName, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a NsName, &'a Option<Arc<StoredObject>>)>,
{
    type Item = Arc<StoredObject>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.a.peek(), self.b.peek()) {
                (None, None) => return None,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
            };
            let from_overlay = match order {
                std::cmp::Ordering::Less => return self.a.next().map(|(_, o)| o.clone()),
                std::cmp::Ordering::Equal => {
                    self.a.next();
                    self.b.next()
                }
                std::cmp::Ordering::Greater => self.b.next(),
            };
            if let Some((_, Some(o))) = from_overlay {
                return Some(o.clone());
            }
        }
    }
}
