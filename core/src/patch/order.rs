//! Ordering of merged lists in strategic merge patch: items named by the
//! patch (or by `$setElementOrder`) keep the patch's order, items only the
//! server has keep theirs, and the two are interleaved by the live order.
//!
//! The sort deliberately mirrors Go's stable insertion sort with kube's
//! comparator, which is not a total order when an item is missing from the
//! order list; Rust's sorts may reject such comparators.

use crate::status::ApiError;
use serde_json::Value;

/// The index of the map in `list` whose `merge_key` equals `target` (or,
/// with an empty key, of the scalar equal to `target`).
pub(super) fn position(
    list: &[Value],
    target: &Value,
    merge_key: &str,
) -> Result<Option<usize>, ApiError> {
    if merge_key.is_empty() {
        return Ok(list.iter().position(|v| v == target));
    }
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(ApiError::new(
                500,
                "",
                format!("value for key {i} is not a map."),
            ));
        };
        if m.get(merge_key) == Some(target) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Index of `item` in `order`, by merge key for maps, by value otherwise.
fn index_in(order: &[Value], item: &Value, merge_key: &str, is_map: bool) -> Option<usize> {
    if is_map {
        let key = item.get(merge_key);
        order.iter().position(|o| o.get(merge_key) == key)
    } else {
        order.iter().position(|o| o == item)
    }
}

pub(super) fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>, ApiError> {
    let patch = sort_by_order(patch, patch_order, merge_key, is_map)?;
    let server_only = sort_by_order(server_only, server_order, merge_key, is_map)?;
    Ok(interleave(
        server_only,
        patch,
        server_order,
        merge_key,
        is_map,
    ))
}

fn sort_by_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Result<Vec<Value>, ApiError> {
    let (mut items, deletions) = if is_map {
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
                        go_print(v)
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
    // Stable insertion sort with "less" = both found and earlier in order,
    // or either one missing (kube's comparator).
    let less = |a: &Value, b: &Value| match (
        index_in(order, a, merge_key, is_map),
        index_in(order, b, merge_key, is_map),
    ) {
        (Some(i), Some(j)) => i < j,
        _ => true,
    };
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && less(&items[j], &items[j - 1]) {
            items.swap(j, j - 1);
            j -= 1;
        }
    }
    items.extend(deletions);
    Ok(items)
}

/// Inserts the server-only items (`left`) among the patch items (`right`),
/// keeping each list's own order and using the live order to decide.
fn interleave(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    is_map: bool,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (
                    index_in(server_order, l, merge_key, is_map),
                    index_in(server_order, r, merge_key, is_map),
                ),
                (Some(i), Some(j)) if i < j
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// A value printed the way Go's `%v` prints decoded JSON (maps with
/// sorted keys), for error messages that quote kube's.
pub(super) fn go_print(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_print).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let body: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", go_print(&m[k])))
                .collect();
            format!("map[{}]", body.join(" "))
        }
    }
}
