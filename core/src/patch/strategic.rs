//! Strategic merge patch (`application/strategic-merge-patch+json`),
//! applied the way kube-apiserver applies it to built-in kinds.
//!
//! A JSON merge patch whose lists know how to merge: the schema says which
//! lists merge by a key (containers by name, ports by containerPort) or as
//! sets of scalars, and which are replaced whole. Directives in the patch
//! steer it: `$patch: replace|delete` on a map or list item,
//! `$retainKeys`, `$setElementOrder/<list>` and
//! `$deleteFromPrimitiveList/<list>`. `null` deletes a key.
//!
//! Errors carry kube's wording and status: malformed directives are 400,
//! list-of-lists and retainKeys mismatches 422, and structural mismatches
//! (an item without its merge key) kube reports as a bare 500.
//!
//! Patch bodies come from clients (up to the 3 MiB body limit), so every
//! step is linear or O(n log n) in the sizes of the lists and maps it
//! touches: list items are found through hash indexes of their merge keys
//! ([`Index`], [`ValueKey`]) rather than by scanning, and map keys are
//! updated in place rather than shifted out and re-inserted. The results
//! (values, errors, element order, which duplicate wins) are those of the
//! straightforward quadratic version this replaced, which the tests keep
//! as an oracle. Keys the patch merges into an existing map keep their
//! place in it (they used to move to the end); JSON key order carries no
//! meaning.

use super::key::ValueKey;
use super::order::{normalize_element_order, not_a_map, Index};
use crate::schema::Schema;
use crate::status::ApiError;
use serde_json::{Map, Value};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

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
    WORK.set(MAX_WORK);
    merge_map(original, patch, Some(schema)).map(Value::Object)
}

/// How many list items and map entries one patch may go through. Every
/// step is linear in what it merges, but a patch can make the same large
/// list merge again and again (many patch items naming one container,
/// each touching its long `env`): Go's algorithm does the same, so the
/// result cannot be had cheaper. A 3 MiB patch of distinct items stays
/// far below this; past it the patch is refused rather than holding its
/// core for seconds.
pub const MAX_WORK: usize = 1_000_000;

thread_local! {
    static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_WORK) };
}

/// Spends `n` of the patch's work budget.
fn charge(n: usize) -> Result<(), ApiError> {
    let left = WORK.get();
    if n > left {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "the strategic merge patch is too costly to apply: it merges more than {MAX_WORK} list items and map entries"
            ),
        ));
    }
    WORK.set(left - n);
    Ok(())
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
        crate::status::go_print(item)
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
            // strip_map drops the `$patch` key with the other directives.
            Some("replace") => Ok(strip_map(patch)),
            Some("delete") => Ok(Map::new()),
            _ => Err(unstructured(format!(
                "unknown patch type: {} in map: {}",
                crate::status::go_print(directive),
                crate::status::go_print(&Value::Object(patch.clone()))
            ))),
        };
    }
    charge(patch.len())?;
    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;
    // Keys a `null` deleted: they stay in `original` until one `retain` at
    // the end (removing each at once would shift the map every time) and
    // read as absent meanwhile. A key can come up twice, as `x` and as
    // `$deleteFromPrimitiveList/x`.
    let mut deleted: HashSet<String> = HashSet::new();
    for (key, patch_value) in patch {
        let (key, delete_list) = match split_directive(&key, DELETE_FROM_PRIMITIVE_LIST) {
            Some(Ok(list)) => (list.to_string(), true),
            Some(Err(())) => return Err(bad_format("primitive list")),
            None => (key, false),
        };
        let was_deleted = !deleted.is_empty() && deleted.contains(&key);
        let current = if was_deleted {
            None
        } else {
            original.get_mut(&key)
        };
        if patch_value.is_null() {
            if current.is_some() {
                deleted.insert(key);
            }
            continue;
        }
        let Some(current) = current
            .filter(|o| std::mem::discriminant(&**o) == std::mem::discriminant(&patch_value))
        else {
            if !delete_list {
                insert_new(&mut original, &mut deleted, key, patch_value);
            }
            continue;
        };
        let current = std::mem::take(current);
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
        *original.get_mut(&key).expect("present") = merged;
    }
    if !deleted.is_empty() {
        original.retain(|k, _| !deleted.contains(k));
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
/// from the patch, minus nulls and directives. A key a `null` deleted
/// earlier comes back.
fn insert_new(
    original: &mut Map<String, Value>,
    deleted: &mut HashSet<String>,
    key: String,
    value: Value,
) {
    let mut value = value;
    discard_nulls(&mut value);
    if let Some(v) = strip(value) {
        if !deleted.is_empty() {
            deleted.remove(&key);
        }
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
    let listed: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed.contains(k.as_str()) {
            return Err(bad_format("retainKeys"));
        }
    }
    original.retain(|k, _| listed.contains(k.as_str()));
    Ok(())
}

/// `$setElementOrder/<list>`: merges that list (with its patch, if any)
/// and orders the result as the directive says, server-only items kept
/// where they were relative to the listed ones.
///
/// The directives and the lists they merge leave the patch; they are
/// collected in `removed` and dropped in one pass at the end, reading as
/// absent meanwhile. A directive whose key another directive already
/// took as its list (`$setElementOrder/$setElementOrder/x` takes
/// `$setElementOrder/x`) is skipped, as Go skips a map key deleted during
/// the range over the map.
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
    if keys.is_empty() {
        return Ok(());
    }
    let mut removed: HashSet<String> = HashSet::new();
    for directive_key in keys {
        if removed.contains(&directive_key) {
            continue;
        }
        let order = std::mem::take(patch.get_mut(&directive_key).expect("listed"));
        removed.insert(directive_key.clone());
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
        let in_patch = if removed.contains(&list_key) {
            None
        } else {
            patch.get(&list_key)
        };
        let patched = match in_patch {
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
        removed.insert(list_key);
    }
    patch.retain(|k, _| !removed.contains(k));
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
            crate::status::go_print(&Value::Array(patch.to_vec())),
            crate::status::go_print(&Value::Array(order.to_vec()))
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
                    crate::status::go_print(&Value::Array(a.to_vec())),
                    crate::status::go_print(&Value::Array(b.to_vec()))
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
    charge(original.len() + patch.len())?;
    let is_map = element_kind(&original, &patch)?;
    let (live_order, patch, merged) = if !is_map {
        if delete_list {
            let drop: HashSet<ValueKey<'_>> = patch.iter().map(ValueKey).collect();
            return Ok(original
                .into_iter()
                .filter(|v| !drop.contains(&ValueKey(v)))
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

/// Go's in-place dedupe, which keeps its order and its choice among equal
/// items (only `0.0` and `-0.0` are equal yet look different):
///
/// ```text
/// for i := 0; i < len(s); i++ {
///     for j := i + 1; j < len(s); {
///         if s[i] == s[j] { s[j] = s[len(s)-1]; s = s[:len(s)-1] } else { j++ }
///     }
/// }
/// ```
///
/// Run as written that is quadratic. Only the positions holding a copy of
/// `s[i]` matter to round `i`: at each, in increasing order, the tail is
/// popped — copies of `s[i]` there are dropped — until another item fills
/// the hole (or the hole was the tail). Each class of equal items keeps a
/// sorted set of its positions, so every drop and move is O(log n).
pub(super) fn dedupe_scalars(s: Vec<Value>) -> Vec<Value> {
    let n = s.len();
    let mut class_of: Vec<usize> = Vec::with_capacity(n);
    let mut sizes: Vec<usize> = Vec::new();
    {
        let mut ids: HashMap<ValueKey<'_>, usize> = HashMap::with_capacity(n);
        for v in &s {
            let next = ids.len();
            let id = *ids.entry(ValueKey(v)).or_insert(next);
            if id == sizes.len() {
                sizes.push(0);
            }
            sizes[id] += 1;
            class_of.push(id);
        }
    }
    if sizes.len() == n {
        return s;
    }
    // slots[p]: which item is at position p; positions of classes with
    // copies, the only ones a round can touch.
    let mut slots: Vec<usize> = (0..n).collect();
    let mut positions: Vec<Option<BTreeSet<usize>>> = sizes
        .iter()
        .map(|&size| (size > 1).then(BTreeSet::new))
        .collect();
    for (p, &c) in class_of.iter().enumerate() {
        if let Some(set) = positions[c].as_mut() {
            set.insert(p);
        }
    }
    let mut len = n;
    let mut i = 0;
    while i < len {
        let c = class_of[slots[i]];
        if let Some(mut set) = positions[c].take() {
            // Every other position of this class lies after i: a class is
            // emptied past its first position when that position's round
            // comes.
            set.remove(&i);
            while let Some(j) = set.pop_first() {
                loop {
                    len -= 1;
                    let last = len;
                    if last == j {
                        break;
                    }
                    let moved = slots[last];
                    let mc = class_of[moved];
                    if mc == c {
                        set.remove(&last);
                        continue;
                    }
                    slots[j] = moved;
                    if let Some(other) = positions[mc].as_mut() {
                        other.remove(&last);
                        other.insert(j);
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    let mut items: Vec<Option<Value>> = s.into_iter().map(Some).collect();
    slots[..len]
        .iter()
        .map(|&k| items[k].take().expect("each item once"))
        .collect()
}

/// `$patch: delete` items remove their match from the original;
/// `$patch: replace` makes the rest of the patch the whole list.
fn apply_list_directives(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut replace = false;
    let mut deleted: HashSet<ValueKey<'_>> = HashSet::new();
    let mut original_checked = false;
    for v in &patch {
        let Value::Object(m) = v else {
            return Err(bad_arg("map[string]interface {}", v));
        };
        let Some(d) = m.get(DIRECTIVE) else {
            continue;
        };
        match d.as_str() {
            Some("delete") => {
                let Some(target) = m.get(merge_key) else {
                    return Err(no_merge_key(v, merge_key));
                };
                // Deleting never removes a non-map, so only the first
                // delete can find one, at its original index.
                if !original_checked {
                    if let Some(i) = original.iter().position(|item| !item.is_object()) {
                        return Err(not_a_map(i));
                    }
                    original_checked = true;
                }
                deleted.insert(ValueKey(target));
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
                    crate::status::go_print(d),
                    crate::status::go_print(v)
                )))
            }
        }
    }
    let original = if replace || deleted.is_empty() {
        original
    } else {
        original
            .into_iter()
            .filter(|item| {
                !item
                    .get(merge_key)
                    .is_some_and(|k| deleted.contains(&ValueKey(k)))
            })
            .collect()
    };
    drop(deleted);
    let plain = patch.into_iter().filter(|v| v.get(DIRECTIVE).is_none());
    if replace {
        return Ok((plain.filter_map(strip).collect(), Vec::new()));
    }
    Ok((original, plain.collect()))
}

/// Merges each patch item into the first item of `original` with the same
/// merge key — items appended by earlier patch items included — or
/// appends it.
///
/// The first match comes from a min-heap of positions per merge-key value
/// the patch looks for. Merging can change an item's own key (a `null`
/// key deletes it, nested nulls and directives vanish), so each item's
/// current key is tracked and stale heap entries are skipped.
fn merge_by_key(
    mut original: Vec<Value>,
    patch: &[Value],
    items: Option<Schema<'_>>,
    merge_key: &str,
) -> Result<Vec<Value>, ApiError> {
    let mut ids: HashMap<ValueKey<'_>, usize> = HashMap::new();
    for v in patch {
        if let Some(target) = v.get(merge_key) {
            let next = ids.len();
            ids.entry(ValueKey(target)).or_insert(next);
        }
    }
    let id_of = |v: &Value| {
        v.get(merge_key)
            .and_then(|k| ids.get(&ValueKey(k)).copied())
    };
    let mut key_id: Vec<Option<usize>> = original.iter().map(id_of).collect();
    let mut heads: Vec<BinaryHeap<Reverse<usize>>> = vec![BinaryHeap::new(); ids.len()];
    for (i, id) in key_id.iter().enumerate() {
        if let Some(id) = *id {
            heads[id].push(Reverse(i));
        }
    }
    // A scan for a match fails at a non-map before it (never the case
    // here: element_kind made every item a map).
    let mut first_non_map = original.iter().position(|v| !v.is_object());
    for v in patch {
        let Some(target) = v.get(merge_key) else {
            return Err(no_merge_key(v, merge_key));
        };
        let id = ids[&ValueKey(target)];
        let heap = &mut heads[id];
        let hit = loop {
            match heap.peek() {
                Some(&Reverse(i)) if key_id[i] == Some(id) => break Some(i),
                Some(_) => {
                    heap.pop();
                }
                None => break None,
            }
        };
        let found = match (hit, first_non_map) {
            (Some(p), Some(f)) if p < f => Some(p),
            (_, Some(f)) => return Err(not_a_map(f)),
            (hit, None) => hit,
        };
        match (found, v) {
            (Some(i), Value::Object(p)) => {
                let Value::Object(o) = std::mem::take(&mut original[i]) else {
                    unreachable!("only maps have merge keys")
                };
                original[i] = Value::Object(merge_map(o, p.clone(), items)?);
                let now = id_of(&original[i]);
                if now != key_id[i] {
                    key_id[i] = now;
                    if let Some(now) = now {
                        heads[now].push(Reverse(i));
                    }
                }
            }
            _ => {
                let mut v = v.clone();
                discard_nulls(&mut v);
                if let Some(v) = strip(v) {
                    let i = original.len();
                    if !v.is_object() && first_non_map.is_none() {
                        first_non_map = Some(i);
                    }
                    let id = id_of(&v);
                    key_id.push(id);
                    if let Some(id) = id {
                        heads[id].push(Reverse(i));
                    }
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
    let index = Index::new(by, merge_key, !merge_key.is_empty());
    let mut named = Vec::new();
    let mut rest = Vec::new();
    for v in merged {
        let hit = if merge_key.is_empty() {
            index.contains(&v)
        } else {
            let Some(target) = v.get(merge_key) else {
                return Err(no_merge_key(&v, merge_key));
            };
            index.position(target)?.is_some()
        };
        if hit {
            named.push(v);
        } else {
            rest.push(v);
        }
    }
    Ok((named, rest))
}
