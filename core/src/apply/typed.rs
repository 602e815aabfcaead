//! The fields an object sets, by schema — structured-merge-diff's
//! "to field set" walk, keeping each leaf's value so two objects can be
//! compared path by path.
//!
//! Leaves are scalars, atomic lists and maps, and empty or null values;
//! list items (by key or value) and map entries are members themselves;
//! struct fields with content are not (their leaves are).

use super::path::{Display, Path, PathElement};
use crate::schema::{ListType, Node, Schema};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a path holds in an object (leaves borrow from it: a write walks
/// two objects and compares them, and copying every leaf showed up as the
/// largest cost of recording ownership).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry<'v> {
    /// A value owned whole.
    Leaf(&'v Value),
    /// A list item or map entry whose content is listed separately.
    Member,
    /// A map-typed field with content (labels, data): not owned by an
    /// applier, but an update that creates it takes it as a member.
    Map,
}

pub type Fields<'v> = BTreeMap<Path, Entry<'v>>;

/// Where a walk puts what it finds: a path and what the path holds. A
/// comparison keeps both ([`Fields`]); a create only needs the set of
/// paths, which it builds directly instead of listing them first.
pub trait Sink<'v> {
    /// `path` holds `entry`, whatever an earlier step said.
    fn put(&mut self, path: &Path, entry: Entry<'v>);
    /// `path` holds `entry` unless an earlier step said otherwise.
    fn put_if_absent(&mut self, path: &Path, entry: Entry<'v>);
}

impl<'v> Sink<'v> for Fields<'v> {
    fn put(&mut self, path: &Path, entry: Entry<'v>) {
        self.insert(path.clone(), entry);
    }

    fn put_if_absent(&mut self, path: &Path, entry: Entry<'v>) {
        self.entry(path.clone()).or_insert(entry);
    }
}

/// Decides, for a struct field about to be walked, whether its whole
/// subtree is left out (managedFields, a status another endpoint owns).
pub type Skip<'s> = &'s dyn Fn(&[PathElement]) -> bool;

/// Why an object does not fit its schema (kube refuses such applies).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeError(pub String);

/// Every path `value` sets, but those under fields `skip` leaves out.
pub fn fields<'v>(
    value: &'v Value,
    schema: Option<Schema<'_>>,
    skip: Skip<'_>,
) -> Result<Fields<'v>, TypeError> {
    let mut out = Fields::new();
    walk_into(value, schema, &mut out, skip)?;
    Ok(out)
}

/// Every path `value` sets, as [`fields`] lists them, into `out`.
pub fn walk_into<'v>(
    value: &'v Value,
    schema: Option<Schema<'_>>,
    out: &mut impl Sink<'v>,
    skip: Skip<'_>,
) -> Result<(), TypeError> {
    walk(value, schema, &mut Vec::new(), out, skip)
}

/// How a value merges, from its schema (or, without one, from its shape:
/// objects merge by key, lists are atomic).
pub(super) enum Shape<'s> {
    Leaf,
    Struct(Option<Schema<'s>>),
    List(ListType, Option<Schema<'s>>),
}

pub(super) fn shape<'s>(value: &Value, schema: Option<Schema<'s>>) -> Shape<'s> {
    match schema.map(|s| (s, s.node())) {
        Some((s, Node::Object(o))) if !o.atomic => Shape::Struct(Some(s)),
        Some((s, Node::Map(m))) if !m.atomic => Shape::Struct(Some(s)),
        Some((s, Node::List(l))) => Shape::List(l.list_type.clone(), s.items()),
        Some((_, Node::Untyped)) | None => match value {
            Value::Object(_) => Shape::Struct(None),
            _ => Shape::Leaf,
        },
        Some(_) => Shape::Leaf,
    }
}

/// The path element naming `item` (at `index`) in a list of `list_type`.
pub(super) fn item_element(
    item: &Value,
    index: usize,
    list_type: &ListType,
    at: &[PathElement],
) -> Result<PathElement, TypeError> {
    match list_type {
        ListType::Set => Ok(PathElement::Value(item.clone())),
        ListType::Map(keys) => {
            let mut k = Vec::with_capacity(keys.len());
            for key in keys {
                match item.get(key.as_ref()) {
                    Some(v) if !v.is_null() => k.push((key.to_string(), v.clone())),
                    // kube's defaults fill protocol in keys; a missing one
                    // is matched as kube matches it after defaulting.
                    _ if key.as_ref() == "protocol" => k.push((key.to_string(), Value::from("TCP"))),
                    _ => {
                        return Err(TypeError(format!(
                            "{}: element {index}: associative list with keys has an element that omits key field {:?} (and doesn't have default value)",
                            Display(at),
                            key.as_ref()
                        )))
                    }
                }
            }
            k.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(k))
        }
        ListType::Atomic => Ok(PathElement::Index(index)),
    }
}

fn walk<'v>(
    value: &'v Value,
    schema: Option<Schema<'_>>,
    path: &mut Path,
    out: &mut impl Sink<'v>,
    skip: Skip<'_>,
) -> Result<(), TypeError> {
    match shape(value, schema) {
        Shape::Leaf | Shape::List(ListType::Atomic, _) => {
            if !path.is_empty() {
                out.put(path, Entry::Leaf(value));
            }
        }
        Shape::List(list_type, items) => {
            let Value::Array(list) = value else {
                out.put(path, Entry::Leaf(value));
                return Ok(());
            };
            for (i, item) in list.iter().enumerate() {
                let pe = item_element(item, i, &list_type, path)?;
                path.push(pe);
                item_entries(item, items, &list_type, path, out, skip)?;
                path.pop();
            }
        }
        Shape::Struct(schema) => {
            let Value::Object(map) = value else {
                if !path.is_empty() {
                    out.put(path, Entry::Leaf(value));
                }
                return Ok(());
            };
            for (key, child) in map {
                let (child_schema, declared) = member(schema, key, path)?;
                path.push(PathElement::Field(key.clone()));
                if !skip(path) {
                    member_entries(child, child_schema, declared, path, out, skip)?;
                }
                path.pop();
            }
            if is_map(schema) && !map.is_empty() && !path.is_empty() {
                out.put_if_absent(path, Entry::Map);
            }
        }
    }
    Ok(())
}

fn is_map(schema: Option<Schema<'_>>) -> bool {
    schema.is_some_and(|s| matches!(s.node(), Node::Map(_)))
}

/// The schema of a struct's or map's member `key`, and whether the schema
/// declares it as a field; an undeclared key of a closed struct is the
/// typed conversion's error.
pub(super) fn member<'s>(
    schema: Option<Schema<'s>>,
    key: &str,
    path: &[PathElement],
) -> Result<(Option<Schema<'s>>, bool), TypeError> {
    match schema {
        Some(s) => match s.member(key) {
            Some((c, meta)) => Ok((Some(c), meta.is_some())),
            None if s.accepts_unknown_fields() => Ok((None, false)),
            None => {
                let mut at = path.to_vec();
                at.push(PathElement::Field(key.to_string()));
                Err(TypeError(format!(
                    "{}: field not declared in schema",
                    Display(&at)
                )))
            }
        },
        None => Ok((None, false)),
    }
}

/// Everything a struct member contributes at and below `path` (its own
/// element already pushed): its subtree, then the member itself — a leaf
/// when empty, a member when the schema does not declare it as a field.
pub(super) fn member_entries<'v>(
    child: &'v Value,
    schema: Option<Schema<'_>>,
    declared: bool,
    path: &mut Path,
    out: &mut impl Sink<'v>,
    skip: Skip<'_>,
) -> Result<(), TypeError> {
    walk(child, schema, path, out, skip)?;
    if is_empty(child) {
        out.put(path, Entry::Leaf(child));
    } else if !declared {
        out.put_if_absent(path, Entry::Member);
    }
    Ok(())
}

/// Null and `{}` are owned as values themselves.
fn is_empty(v: &Value) -> bool {
    v.is_null() || v.as_object().is_some_and(|m| m.is_empty())
}

/// Everything a list item contributes at and below `path` (its element
/// already pushed): a set item is a leaf, any other item a member with
/// its subtree.
pub(super) fn item_entries<'v>(
    item: &'v Value,
    items: Option<Schema<'_>>,
    list_type: &ListType,
    path: &mut Path,
    out: &mut impl Sink<'v>,
    skip: Skip<'_>,
) -> Result<(), TypeError> {
    if matches!(list_type, ListType::Set) {
        out.put(path, Entry::Leaf(item));
    } else {
        walk(item, items, path, out, skip)?;
        out.put(path, Entry::Member);
    }
    Ok(())
}

/// What changed between two objects' fields.
#[derive(Debug, Default)]
pub struct Comparison {
    pub added: Vec<Path>,
    pub modified: Vec<Path>,
    pub removed: Vec<Path>,
}

pub fn compare(old: &Fields<'_>, new: &Fields<'_>) -> Comparison {
    let mut c = Comparison::default();
    for (path, entry) in new {
        match old.get(path) {
            None => c.added.push(path.clone()),
            Some(Entry::Member) if *entry == Entry::Member => {}
            Some(Entry::Map) if *entry == Entry::Map => {}
            Some(o) if o != entry => c.modified.push(path.clone()),
            Some(_) => {}
        }
    }
    for path in old.keys() {
        if !new.contains_key(path) {
            c.removed.push(path.clone());
        }
    }
    c
}
