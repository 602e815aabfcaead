//! The strategic merge patch engine as it was before the linear-time
//! rewrite (quadratic or worse in list and map sizes), kept verbatim as an
//! oracle: the equivalence proptests in `strategic_equivalence.rs` check that
//! the rewrite in `strategic.rs` / `order.rs` returns the same `Result` for
//! random originals and patches. Test-only; never call it from the server.

use crate::schema::Schema;
use crate::status::ApiError;
use order::{normalize_element_order, position};
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Applies `patch` to `original`; `schema` is the kind's root schema.
pub fn apply(original: Value, patch: Value, schema: Schema<'_>) -> Result<Value, ApiError> {
    let Value::Object(patch) = patch else {
        return Err(ApiError::bad_request(BAD_JSON_DOC));
    };
    let Value::Object(original) = original else {
        return Err(ApiError::bad_request(BAD_JSON_DOC));
    };
    merge_map(original, patch, Some(schema)).map(Value::Object)
}

const BAD_JSON_DOC: &str = "invalid JSON document";

fn bad_format(what: &str) -> ApiError {
    ApiError::bad_request(format!("invalid patch format of {what}"))
}

/// kube turns errors that are not API statuses into a 500 with no reason.
fn unstructured(msg: impl Into<String>) -> ApiError {
    ApiError::new(500, "", msg)
}

fn no_merge_key(item: &Value, key: &str) -> ApiError {
    unstructured(format!(
        "map: {} does not contain declared merge key: {key}",
        order::go_print(item)
    ))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
        Value::String(_) => "string",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Null => "<nil>",
    }
}

fn bad_arg(expected: &str, got: &Value) -> ApiError {
    unstructured(format!(
        "expected a {expected}, but received a {}",
        type_name(got)
    ))
}

/// The field patch metadata and child schema for `key` under `schema`.
struct FieldMeta<'a> {
    schema: Option<Schema<'a>>,
    merge: bool,
    replace: bool,
    merge_key: Option<String>,
}

fn lookup<'a>(schema: Option<Schema<'a>>, key: &str) -> FieldMeta<'a> {
    let found = schema.and_then(|s| s.member(key));
    let (schema, meta) = match found {
        Some((s, m)) => (Some(s), m),
        None => (None, None),
    };
    FieldMeta {
        schema,
        merge: meta.is_some_and(|m| m.merge),
        replace: meta.is_some_and(|m| m.replace),
        merge_key: meta.and_then(|m| m.merge_key.as_deref().map(str::to_string)),
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Option<Schema<'_>>,
) -> Result<Map<String, Value>, ApiError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.shift_remove(DIRECTIVE);
                Ok(strip_map(patch))
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(unstructured(format!(
                "unknown patch type: {} in map: {}",
                order::go_print(directive),
                order::go_print(&Value::Object(patch.clone()))
            ))),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;
    for (key, patch_value) in patch {
        let (key, delete_list) = match split_directive(&key, DELETE_FROM_PRIMITIVE_LIST) {
            Some(Ok(list)) => (list.to_string(), true),
            Some(Err(())) => return Err(bad_format("primitive list")),
            None => (key, false),
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let same_shape = original
            .get(&key)
            .is_some_and(|o| std::mem::discriminant(o) == std::mem::discriminant(&patch_value));
        if !same_shape {
            if !delete_list {
                insert_new(&mut original, key, patch_value);
            }
            continue;
        }
        let current = original.shift_remove(&key).expect("present");
        let meta = lookup(schema, &key);
        let merged = match (current, patch_value) {
            (Value::Object(o), Value::Object(p)) => {
                if meta.replace {
                    Value::Object(strip_map(p))
                } else {
                    Value::Object(merge_map(o, p, meta.schema)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                Value::Array(merge_list_field(o, p, &meta, delete_list)?)
            }
            (_, p) => p,
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// `$deleteFromPrimitiveList/x` → Some(Ok("x")); a malformed directive of
/// that family → Some(Err); anything else → None.
fn split_directive<'k>(key: &'k str, prefix: &str) -> Option<Result<&'k str, ()>> {
    if !key.starts_with(prefix) {
        return None;
    }
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Some(Ok(rest)),
        _ => Some(Err(())),
    }
}

/// A value the original does not have (or has with another shape): taken
/// from the patch, minus nulls and directives.
fn insert_new(original: &mut Map<String, Value>, key: String, value: Value) {
    let mut value = value;
    discard_nulls(&mut value);
    if let Some(v) = strip(value) {
        original.insert(key, v);
    }
}

fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Removes patch directives from a value that lands in the result as is;
/// None when the value itself is a `$patch` directive.
fn strip(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(strip_map(m)))
        }
        Value::Array(a) => Some(Value::Array(a.into_iter().filter_map(strip).collect())),
        other => Some(other),
    }
}

fn strip_map(m: Map<String, Value>) -> Map<String, Value> {
    m.into_iter()
        .filter(|(k, _)| !is_directive_key(k))
        .filter_map(|(k, v)| strip(v).map(|v| (k, v)))
        .collect()
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE
        || k == RETAIN_KEYS
        || k.starts_with(SET_ELEMENT_ORDER)
        || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// `$retainKeys`: keys of the original not listed are cleared; every key
/// the patch sets must be listed.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_format("retainKeys"));
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(bad_format("retainKeys"));
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$setElementOrder/<list>`: merges that list (with its patch, if any)
/// and orders the result as the directive says, server-only items kept
/// where they were relative to the listed ones.
fn merge_ordered_lists(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Option<Schema<'_>>,
) -> Result<(), ApiError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive_key in keys {
        let order = patch.shift_remove(&directive_key).expect("listed");
        let Value::Array(order) = order else {
            return Err(bad_arg("[]interface {}", &order));
        };
        let Some(Ok(list_key)) = split_directive(&directive_key, SET_ELEMENT_ORDER) else {
            return Err(bad_format("setElementOrder list"));
        };
        let list_key = list_key.to_string();
        let live = match original.get(&list_key) {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg("[]interface {}", other)),
            None => None,
        };
        let patched = match patch.get(&list_key) {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg("[]interface {}", other)),
            None => None,
        };
        let meta = lookup(schema, &list_key);
        let merge_key = meta.merge_key.clone().unwrap_or_default();
        validate_order(patched.as_deref().unwrap_or(&[]), &order, &merge_key)?;
        let merged = match (&live, &patched) {
            (Some(l), None) => l.clone(),
            (None, Some(p)) => p.clone(),
            (Some(l), Some(p)) => merge_list_field(l.clone(), p.clone(), &meta, false)?,
            (None, None) => continue,
        };
        let live = live.unwrap_or_default();
        let patched = patched.unwrap_or_default();
        let is_map = element_kind(&live, &patched)?;
        let key = if is_map { merge_key.as_str() } else { "" };
        let (in_order, server_only) = partition(merged, &order, key)?;
        let result = normalize_element_order(in_order, server_only, &order, &live, key, is_map)?;
        original.insert(list_key.clone(), Value::Array(result));
        patch.shift_remove(&list_key);
    }
    Ok(())
}

/// The items of the patch list (deletions aside) must appear in the
/// `$setElementOrder` list in the same relative order.
fn validate_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<(), ApiError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = if merge_key.is_empty() {
        patch.iter().collect()
    } else {
        let mut kept = Vec::new();
        for v in patch {
            let Value::Object(m) = v else {
                return Err(bad_arg("map[string]interface {}", v));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                kept.push(v);
            }
        }
        kept
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < kept.len() && oi < order.len() {
        if kept[pi].get(DIRECTIVE).is_some() {
            pi += 1;
            continue;
        }
        if same_key(kept[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < kept.len() && oi >= order.len() {
        return Err(unstructured(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            order::go_print(&Value::Array(patch.to_vec())),
            order::go_print(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

fn same_key(left: &Value, right: &Value, merge_key: &str) -> Result<bool, ApiError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let l = left
        .get(merge_key)
        .ok_or_else(|| no_merge_key(left, merge_key))?;
    let r = right
        .get(merge_key)
        .ok_or_else(|| no_merge_key(right, merge_key))?;
    Ok(l == r)
}

/// Whether the elements of these lists are maps (true) or scalars; lists
/// of lists and mixed lists are refused as kube refuses them.
fn element_kind(a: &[Value], b: &[Value]) -> Result<bool, ApiError> {
    let mut kind: Option<std::mem::Discriminant<Value>> = None;
    let mut is_map = false;
    for v in a.iter().chain(b) {
        if v.is_array() {
            return Err(ApiError::new(
                422,
                "Invalid",
                "lists of lists are not supported",
            ));
        }
        let d = std::mem::discriminant(v);
        match kind {
            None => {
                kind = Some(d);
                is_map = v.is_object();
            }
            Some(k) if k != d => {
                return Err(unstructured(format!(
                    "list element types are not identical: [{} {}]",
                    order::go_print(&Value::Array(a.to_vec())),
                    order::go_print(&Value::Array(b.to_vec()))
                )))
            }
            _ => {}
        }
    }
    match kind {
        Some(_) => Ok(is_map),
        None => Err(unstructured("no elements in any of the given slices")),
    }
}

/// A list field: merged when its strategy says so, otherwise replaced.
fn merge_list_field(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta<'_>,
    delete_list: bool,
) -> Result<Vec<Value>, ApiError> {
    if !meta.merge {
        return Ok(patch.into_iter().filter_map(strip).collect());
    }
    let items = meta.schema.and_then(|s| s.items());
    let key = meta.merge_key.as_deref().unwrap_or("");
    merge_list(original, patch, items, key, delete_list)
}

fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Option<Schema<'_>>,
    merge_key: &str,
    delete_list: bool,
) -> Result<Vec<Value>, ApiError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let is_map = element_kind(&original, &patch)?;
    let (live_order, patch, merged) = if !is_map {
        if delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged = original.clone();
        merged.extend(patch.iter().cloned());
        (original, patch, dedupe_scalars(merged))
    } else {
        if merge_key.is_empty() {
            return Err(unstructured(
                "cannot merge lists without merge key for type map",
            ));
        }
        let (original, patch) = apply_list_directives(original, patch, merge_key)?;
        let merged = merge_by_key(original.clone(), &patch, items, merge_key)?;
        (original, patch, merged)
    };
    let key = if is_map { merge_key } else { "" };
    let (from_patch, server_only) = partition(merged, &patch, key)?;
    normalize_element_order(from_patch, server_only, &patch, &live_order, key, is_map)
}

/// Go's in-place dedupe: a later duplicate is overwritten by the last item.
pub(super) fn dedupe_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if s[i] == s[j] {
                let last = s.len() - 1;
                s.swap(j, last);
                s.pop();
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// `$patch: delete` items remove their match from the original;
/// `$patch: replace` makes the rest of the patch the whole list.
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else {
            return Err(bad_arg("map[string]interface {}", &v));
        };
        match m.get(DIRECTIVE) {
            None => plain.push(v),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let Some(target) = m.get(merge_key) else {
                        return Err(no_merge_key(&v, merge_key));
                    };
                    for (i, item) in original.iter().enumerate() {
                        if !item.is_object() {
                            return Err(unstructured(format!("value for key {i} is not a map.")));
                        }
                    }
                    original.retain(|item| item.get(merge_key) != Some(target));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(unstructured(
                        "merging lists cannot yet be specified in the patch",
                    ))
                }
                _ => {
                    return Err(unstructured(format!(
                        "unknown patch type: {} in map: {}",
                        order::go_print(d),
                        order::go_print(&v)
                    )))
                }
            },
        }
    }
    if replace {
        return Ok((plain.into_iter().filter_map(strip).collect(), Vec::new()));
    }
    Ok((original, plain))
}

fn merge_by_key(
    mut original: Vec<Value>,
    patch: &[Value],
    items: Option<Schema<'_>>,
    merge_key: &str,
) -> Result<Vec<Value>, ApiError> {
    for v in patch {
        let Some(target) = v.get(merge_key) else {
            return Err(no_merge_key(v, merge_key));
        };
        let found = position(&original, target, merge_key)?;
        match (found, v) {
            (Some(i), Value::Object(p)) => {
                let Value::Object(o) = std::mem::take(&mut original[i]) else {
                    unreachable!("position checks items are maps")
                };
                original[i] = Value::Object(merge_map(o, p.clone(), items)?);
            }
            _ => {
                let mut v = v.clone();
                discard_nulls(&mut v);
                if let Some(v) = strip(v) {
                    original.push(v);
                }
            }
        }
    }
    Ok(original)
}

/// Splits `merged` into the items that `by` names and the rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut named = Vec::new();
    let mut rest = Vec::new();
    for v in merged {
        let hit = if merge_key.is_empty() {
            by.contains(&v)
        } else {
            let Some(target) = v.get(merge_key) else {
                return Err(no_merge_key(&v, merge_key));
            };
            position(by, target, merge_key)?.is_some()
        };
        if hit {
            named.push(v);
        } else {
            rest.push(v);
        }
    }
    Ok((named, rest))
}

mod order {
    /// Ordering of merged lists in strategic merge patch: items named by the
    /// patch (or by `$setElementOrder`) keep the patch's order, items only the
    /// server has keep theirs, and the two are interleaved by the live order.
    ///
    /// The sort deliberately mirrors Go's stable insertion sort with kube's
    /// comparator, which is not a total order when an item is missing from the
    /// order list; Rust's sorts may reject such comparators.
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
            Value::Array(a) => {
                format!("[{}]", a.iter().map(go_print).collect::<Vec<_>>().join(" "))
            }
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
}
