//! Merging an applied configuration into the live object, and removing the
//! fields an applier gave up — structured-merge-diff semantics: the
//! configuration wins at every leaf, structs and granular maps merge key
//! by key, associative lists merge item by item (keeping both sides'
//! relative order), atomic values are replaced.

use super::path::PathElement;
use super::typed::{item_element, shape, Shape, TypeError};
use crate::schema::{ListType, Schema};
use serde_json::{Map, Value};

pub fn merge(live: &Value, config: &Value, schema: Option<Schema<'_>>) -> Result<Value, TypeError> {
    merge_at(live, config, schema, &mut Vec::new())
}

fn merge_at(
    lhs: &Value,
    rhs: &Value,
    schema: Option<Schema<'_>>,
    path: &mut Vec<PathElement>,
) -> Result<Value, TypeError> {
    match (shape(rhs, schema), lhs, rhs) {
        (Shape::Struct(s), Value::Object(l), Value::Object(r)) => {
            let mut out = Map::new();
            for (k, lv) in l {
                match r.get(k) {
                    Some(rv) => {
                        let child = s.and_then(|s| s.member(k)).map(|(c, _)| c);
                        path.push(PathElement::Field(k.clone()));
                        let merged = merge_at(lv, rv, child, path)?;
                        path.pop();
                        out.insert(k.clone(), merged);
                    }
                    None => {
                        out.insert(k.clone(), lv.clone());
                    }
                }
            }
            for (k, rv) in r {
                if !l.contains_key(k) {
                    out.insert(k.clone(), rv.clone());
                }
            }
            Ok(Value::Object(out))
        }
        (Shape::List(lt, items), Value::Array(l), Value::Array(r)) if lt != ListType::Atomic => {
            merge_lists(l, r, &lt, items, path).map(Value::Array)
        }
        _ => Ok(rhs.clone()),
    }
}

/// Two-pointer merge of associative lists: items of both sides keep their
/// relative order; an item on both sides is merged where the
/// configuration puts it among the shared items.
fn merge_lists(
    lhs: &[Value],
    rhs: &[Value],
    lt: &ListType,
    items: Option<Schema<'_>>,
    path: &mut Vec<PathElement>,
) -> Result<Vec<Value>, TypeError> {
    let lpe = elements(lhs, lt, path)?;
    let rpe = elements(rhs, lt, path)?;
    let find = |pes: &[PathElement], pe: &PathElement| pes.iter().position(|p| p == pe);
    let mut shared: std::collections::VecDeque<&PathElement> =
        rpe.iter().filter(|p| find(&lpe, p).is_some()).collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: Vec<&PathElement> = Vec::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    let item = |pe: &PathElement,
                l: Option<&Value>,
                r: Option<&Value>,
                path: &mut Vec<PathElement>|
     -> Result<Value, TypeError> {
        match (l, r) {
            (Some(l), Some(r)) => {
                path.push(pe.clone());
                let v = merge_at(l, r, items, path);
                path.pop();
                v
            }
            (Some(v), None) | (None, Some(v)) => Ok(v.clone()),
            (None, None) => Ok(Value::Null),
        }
    };
    while li < lpe.len() || ri < rpe.len() {
        if li < lpe.len() && ri < rpe.len() {
            let pe = &lpe[li];
            if *pe == rpe[ri] {
                merged_rhs.push(pe);
                out.push(item(pe, Some(&lhs[li]), Some(&rhs[ri]), path)?);
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if find(&rpe, pe).is_some() && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lpe.len() {
            let pe = &lpe[li];
            if find(&rpe, pe).is_none() {
                out.push(lhs[li].clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(&pe) {
                li += 1;
                continue;
            }
        }
        if ri < rpe.len() {
            let pe = &rpe[ri];
            merged_rhs.push(pe);
            let l = find(&lpe, pe).map(|i| &lhs[i]);
            out.push(item(pe, l, Some(&rhs[ri]), path)?);
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok(out)
}

fn elements(
    list: &[Value],
    lt: &ListType,
    path: &[PathElement],
) -> Result<Vec<PathElement>, TypeError> {
    list.iter()
        .enumerate()
        .map(|(i, v)| item_element(v, i, lt, path))
        .collect()
}

/// Removes the field or list item at `path` (if present). A list or map
/// emptied by the removal goes too, as Go's `omitempty` drops it.
pub fn remove(value: &mut Value, path: &[PathElement], schema: Option<Schema<'_>>) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match (first, value) {
        (PathElement::Field(name), Value::Object(map)) => {
            if rest.is_empty() {
                map.shift_remove(name);
                return;
            }
            let child_schema = schema.and_then(|s| s.member(name)).map(|(c, _)| c);
            if let Some(child) = map.get_mut(name) {
                remove(child, rest, child_schema);
                if is_emptied(child, child_schema) {
                    map.shift_remove(name);
                }
            }
        }
        (pe, Value::Array(items)) => {
            let lt = schema.and_then(|s| s.list_type().cloned());
            let item_schema = schema.and_then(|s| s.items());
            let Some(idx) = items.iter().enumerate().position(|(i, v)| {
                let el = match (&lt, pe) {
                    (_, PathElement::Index(_)) => Ok(PathElement::Index(i)),
                    (Some(lt), _) => item_element(v, i, lt, &[]),
                    (None, _) => Ok(PathElement::Index(i)),
                };
                el.is_ok_and(|e| e == *pe)
            }) else {
                return;
            };
            if rest.is_empty() {
                items.remove(idx);
            } else {
                remove(&mut items[idx], rest, item_schema);
            }
        }
        _ => {}
    }
}

/// An emptied list, or an emptied map (not a struct: Go prints empty
/// structs, but omits empty slices and maps).
fn is_emptied(v: &Value, schema: Option<Schema<'_>>) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => {
            m.is_empty() && schema.is_some_and(|s| matches!(s.node(), crate::schema::Node::Map(_)))
        }
        _ => false,
    }
}
