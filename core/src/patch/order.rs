//! Ordering of merged lists in strategic merge patch: items named by the
//! patch (or by `$setElementOrder`) keep the patch's order, items only the
//! server has keep theirs, and the two are interleaved by the live order.
//!
//! Everything here is O(n log n) in the list sizes: positions come from
//! hash indexes ([`Index`]) built once per list, and the sort reproduces
//! Go's stable insertion sort with kube's comparator — which is not a
//! total order when an item is missing from the order list — without
//! running it (see [`sort_like_insertion_sort`]).

use super::key::ValueKey;
use crate::status::ApiError;
use serde_json::Value;
use std::collections::HashMap;

/// First positions in a list, by merge key or by whole value, answering
/// what a left-to-right scan of the list would find.
pub(super) struct Index<'a> {
    /// The first position of each key (or value).
    first: HashMap<ValueKey<'a>, usize>,
    /// Keyed: the first item without the key (a non-map has no key).
    first_keyless: Option<usize>,
    /// Keyed: the first item that is not a map.
    first_non_map: Option<usize>,
    keyed: bool,
}

impl<'a> Index<'a> {
    /// Indexes `list` by each item's `merge_key` value when `keyed`,
    /// otherwise by the items themselves.
    pub(super) fn new(list: &'a [Value], merge_key: &str, keyed: bool) -> Self {
        let mut first = HashMap::with_capacity(list.len());
        let mut first_keyless = None;
        let mut first_non_map = None;
        for (i, v) in list.iter().enumerate() {
            if !keyed {
                first.entry(ValueKey(v)).or_insert(i);
                continue;
            }
            if !v.is_object() && first_non_map.is_none() {
                first_non_map = Some(i);
            }
            match v.get(merge_key) {
                Some(k) => {
                    first.entry(ValueKey(k)).or_insert(i);
                }
                None => {
                    first_keyless.get_or_insert(i);
                }
            }
        }
        Index {
            first,
            first_keyless,
            first_non_map,
            keyed,
        }
    }

    /// Whether some item of an unkeyed index equals `v`.
    pub(super) fn contains(&self, v: &Value) -> bool {
        self.first.contains_key(&ValueKey(v))
    }

    /// Like scanning the list for the first map whose merge key equals
    /// `target` (keyed), or the first item equal to it (unkeyed); a keyed
    /// scan that meets a non-map first fails the way kube's does.
    pub(super) fn position(&self, target: &Value) -> Result<Option<usize>, ApiError> {
        let hit = self.first.get(&ValueKey(target)).copied();
        if !self.keyed {
            return Ok(hit);
        }
        match (hit, self.first_non_map) {
            (Some(p), Some(f)) if p < f => Ok(Some(p)),
            (_, Some(f)) => Err(not_a_map(f)),
            (hit, None) => Ok(hit),
        }
    }

    /// The first item with the same merge key as `item` (keyed; an item
    /// without the key matches the first item without it, as `None ==
    /// None` does), or equal to `item` (unkeyed).
    fn index_in(&self, item: &Value, merge_key: &str) -> Option<usize> {
        if !self.keyed {
            return self.first.get(&ValueKey(item)).copied();
        }
        match item.get(merge_key) {
            Some(k) => self.first.get(&ValueKey(k)).copied(),
            None => self.first_keyless,
        }
    }
}

pub(super) fn not_a_map(i: usize) -> ApiError {
    ApiError::new(500, "", format!("value for key {i} is not a map."))
}

pub(super) fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>, ApiError> {
    let patch_index = Index::new(patch_order, merge_key, is_map);
    let patch = sort_by_order(patch, patch_order, &patch_index, merge_key, is_map)?;
    drop(patch_index);
    let server_index = Index::new(server_order, merge_key, is_map);
    let server_only = sort_by_order(server_only, server_order, &server_index, merge_key, is_map)?;
    Ok(interleave(server_only, patch, &server_index, merge_key))
}

fn sort_by_order(
    to_sort: Vec<Value>,
    order: &[Value],
    index: &Index<'_>,
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>, ApiError> {
    let (items, deletions): (Vec<Value>, Vec<Value>) = if is_map {
        for v in to_sort.iter().chain(order) {
            let Value::Object(m) = v else {
                return Err(ApiError::new(
                    500,
                    "",
                    format!(
                        "expected a map[string]interface {{}}, but received a {}",
                        if v.is_array() {
                            "[]interface {}"
                        } else {
                            "scalar"
                        }
                    ),
                ));
            };
            if !m.contains_key(merge_key) {
                return Err(ApiError::new(
                    500,
                    "",
                    format!(
                        "map: {} does not contain declared merge key: {merge_key}",
                        crate::status::go_print(v)
                    ),
                ));
            }
        }
        to_sort
            .into_iter()
            .partition(|v| v.get("$patch").and_then(Value::as_str) != Some("delete"))
    } else {
        (to_sort, Vec::new())
    };
    let keyed: Vec<(Option<usize>, Value)> = items
        .into_iter()
        .map(|v| (index.index_in(&v, merge_key), v))
        .collect();
    let mut sorted = sort_like_insertion_sort(keyed);
    sorted.extend(deletions);
    Ok(sorted)
}

/// The result of Go's stable insertion sort (`for i := 1..n { for j := i;
/// j > 0 && less(s[j], s[j-1]); j-- { swap } }`) under kube's comparator
/// `less(a, b) = idx(a) < idx(b)` when both are found in the order list
/// and `true` when either is missing — computed in O(n log n).
///
/// Running the insertion sort would be quadratic exactly when an attacker
/// wants it to be: a missing item always compares less, so each one walks
/// to the front. What it produces instead follows from three facts, each
/// kept invariant as item after item is inserted:
///
/// 1. A missing item is less than anything, so it moves to position 0.
///    Later insertions never reorder two missing items, so missing items
///    end in reverse arrival order.
/// 2. A found item x passes every missing item and every found item with
///    a greater index, and stops behind the nearest found item y with
///    `idx(y) <= idx(x)`. The found items alone therefore end stably
///    sorted by index (call that sequence F), and x lands directly behind
///    y — or at the very front when there is no such y.
/// 3. For a missing item m, the found items in front of m are a prefix of
///    F: none are when m arrives, and an inserted x joins them exactly
///    when it lands at the front or behind a member (its F-predecessor).
///    By induction over F, that prefix is the longest one whose items all
///    arrived after m.
///
/// So the output is F with each missing item m (newest first) placed
/// after the longest prefix of F whose earliest arrival is later than
/// m's. Prefix minima of arrival only fall along F and arrivals fall
/// along the newest-first missing items, so one merge pass places them.
/// With nothing missing this is just the stable sort by index.
///
/// `items` are (index in the order list, item) in arrival order.
pub(super) fn sort_like_insertion_sort<T>(items: Vec<(Option<usize>, T)>) -> Vec<T> {
    let n = items.len();
    let mut found: Vec<(usize, usize, T)> = Vec::with_capacity(n);
    let mut missing: Vec<(usize, T)> = Vec::new();
    for (arrival, (idx, item)) in items.into_iter().enumerate() {
        match idx {
            Some(idx) => found.push((idx, arrival, item)),
            None => missing.push((arrival, item)),
        }
    }
    // Stable: equal indexes keep arrival order, as the insertion sort does.
    found.sort_by_key(|&(idx, _, _)| idx);
    let mut out = Vec::with_capacity(n);
    let mut found = found.into_iter().peekable();
    let mut earliest = usize::MAX;
    for (arrival, item) in missing.into_iter().rev() {
        while let Some(&(_, a, _)) = found.peek() {
            if earliest.min(a) <= arrival {
                break;
            }
            earliest = earliest.min(a);
            out.extend(found.next().map(|(_, _, v)| v));
        }
        out.push(item);
    }
    out.extend(found.map(|(_, _, v)| v));
    out
}

/// Inserts the server-only items (`left`) among the patch items (`right`),
/// keeping each list's own order and using the live order to decide: a
/// server-only item goes first only when both are in the live list and it
/// is earlier there.
fn interleave(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &Index<'_>,
    merge_key: &str,
) -> Vec<Value> {
    // Positions are looked up once per item: an item can wait at the head
    // of its list for many steps.
    let left: Vec<(Option<usize>, Value)> = left
        .into_iter()
        .map(|v| (server_order.index_in(&v, merge_key), v))
        .collect();
    let right: Vec<(Option<usize>, Value)> = right
        .into_iter()
        .map(|v| (server_order.index_in(&v, merge_key), v))
        .collect();
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((l, _)), Some((r, _))) => matches!((l, r), (Some(i), Some(j)) if i < j),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next.map(|(_, v)| v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Go's insertion sort with kube's comparator, run as is.
    fn insertion_sort(items: Vec<(Option<usize>, u32)>) -> Vec<u32> {
        let mut items = items;
        let less = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(i), Some(j)) => i < j,
            _ => true,
        };
        for i in 1..items.len() {
            let mut j = i;
            while j > 0 && less(items[j].0, items[j - 1].0) {
                items.swap(j, j - 1);
                j -= 1;
            }
        }
        items.into_iter().map(|(_, v)| v).collect()
    }

    #[test]
    fn missing_items_follow_the_insertion_sort() {
        // [M1, A(2), M2, B(1), C(3)] sorts to [B, M2, A, C, M1].
        let items = vec![
            (None, 1),
            (Some(2), 10),
            (None, 2),
            (Some(1), 20),
            (Some(3), 30),
        ];
        assert_eq!(insertion_sort(items.clone()), [20, 2, 10, 30, 1]);
        assert_eq!(sort_like_insertion_sort(items), [20, 2, 10, 30, 1]);
    }

    #[test]
    fn many_missing_items_sort_in_linear_time() {
        // The shape that made the insertion sort quadratic.
        let n = 200_000;
        let items: Vec<(Option<usize>, u32)> = (0..n)
            .map(|i| (if i % 2 == 0 { None } else { Some(n - i) }, i as u32))
            .collect();
        let out = sort_like_insertion_sort(items);
        assert_eq!(out.len(), n);
    }

    proptest! {
        #[test]
        fn equals_the_insertion_sort(
            idx in prop::collection::vec(prop::option::weighted(0.7, 0usize..6), 0..40)
        ) {
            let items: Vec<(Option<usize>, u32)> =
                idx.into_iter().enumerate().map(|(i, x)| (x, i as u32)).collect();
            prop_assert_eq!(sort_like_insertion_sort(items.clone()), insertion_sort(items));
        }
    }
}
