//! What changed between two versions of an object, field by field — the
//! same answer as comparing both objects' full field lists, found by
//! walking only the parts that differ. A write usually changes a handful
//! of fields of a large object; every create, update and patch records
//! ownership from this comparison, so it must not cost a walk of both
//! objects.
//!
//! Equal subtrees are skipped whole (a deep equality check, no
//! allocation). Where the two sides do not have the same shape — a struct
//! replaced by a scalar, a list with repeated keys — the subtree falls
//! back to listing both sides' fields and comparing them.

use super::path::{Path, PathElement};
use super::typed::{
    self, compare, item_element, item_entries, member, member_entries, shape, Comparison, Fields,
    Shape, Skip, TypeError,
};
use crate::schema::{ListType, Schema};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The fields added, modified and removed from `old` to `new`.
pub fn diff(
    old: &Value,
    new: &Value,
    schema: Option<Schema<'_>>,
    skip: Skip<'_>,
) -> Result<Comparison, TypeError> {
    let mut d = Differ {
        out: Comparison::default(),
        skip,
    };
    let mut path = Vec::new();
    match (old, new, shape(new, schema)) {
        (Value::Object(o), Value::Object(n), Shape::Struct(s)) => {
            d.members(o, n, s, &mut path)?;
        }
        _ => {
            let (a, b) = (
                typed::fields(old, schema, skip)?,
                typed::fields(new, schema, skip)?,
            );
            d.absorb(compare(&a, &b));
        }
    }
    Ok(d.out)
}

struct Differ<'s> {
    out: Comparison,
    skip: Skip<'s>,
}

impl Differ<'_> {
    fn absorb(&mut self, c: Comparison) {
        self.out.added.extend(c.added);
        self.out.modified.extend(c.modified);
        self.out.removed.extend(c.removed);
    }

    /// The members of two versions of one struct or map.
    fn members(
        &mut self,
        old: &Map<String, Value>,
        new: &Map<String, Value>,
        schema: Option<Schema<'_>>,
        path: &mut Path,
    ) -> Result<(), TypeError> {
        let keys = old
            .keys()
            .chain(new.keys().filter(|k| !old.contains_key(*k)));
        for key in keys {
            let (o, n) = (old.get(key), new.get(key));
            if o == n {
                continue;
            }
            let (child_schema, declared) = member(schema, key, path)?;
            path.push(PathElement::Field(key.clone()));
            if !(self.skip)(path) {
                self.member(o, n, child_schema, declared, path)?;
            }
            path.pop();
        }
        Ok(())
    }

    /// One member at `path`, present on either side.
    fn member(
        &mut self,
        old: Option<&Value>,
        new: Option<&Value>,
        schema: Option<Schema<'_>>,
        declared: bool,
        path: &mut Path,
    ) -> Result<(), TypeError> {
        let whole = Unit::Member(schema, declared);
        let (Some(o), Some(n)) = (old, new) else {
            return self.fallback(path, &whole, old, new);
        };
        match (o, n, shape(o, schema)) {
            // Two non-empty structs (or maps) own the same entry themselves
            // (a map entry, a member, or nothing for a declared field):
            // only their members can differ.
            (Value::Object(om), Value::Object(nm), Shape::Struct(s))
                if !om.is_empty() && !nm.is_empty() =>
            {
                self.members(om, nm, s, path)
            }
            (Value::Array(ol), Value::Array(nl), Shape::List(lt, items))
                if lt != ListType::Atomic =>
            {
                if self.items(ol, nl, &lt, items, path)? {
                    Ok(())
                } else {
                    self.fallback(path, &whole, old, new)
                }
            }
            _ => self.fallback(path, &whole, old, new),
        }
    }

    /// The items of two versions of an associative list or set, matched by
    /// their path elements; false (nothing done) when a side repeats an
    /// element, which only a full comparison gets right.
    fn items(
        &mut self,
        old: &[Value],
        new: &[Value],
        lt: &ListType,
        items: Option<Schema<'_>>,
        path: &mut Path,
    ) -> Result<bool, TypeError> {
        let index = |list: &'_ [Value],
                     path: &Path|
         -> Result<Option<BTreeMap<PathElement, usize>>, TypeError> {
            let mut m = BTreeMap::new();
            for (i, item) in list.iter().enumerate() {
                if m.insert(item_element(item, i, lt, path)?, i).is_some() {
                    return Ok(None); // repeated keys: compare in full
                }
            }
            Ok(Some(m))
        };
        let (Some(oi), Some(ni)) = (index(old, path)?, index(new, path)?) else {
            return Ok(false);
        };
        let item = Unit::Item(items, lt);
        let elements = oi.keys().chain(ni.keys().filter(|k| !oi.contains_key(*k)));
        for pe in elements {
            let (o, n) = (oi.get(pe).map(|&i| &old[i]), ni.get(pe).map(|&i| &new[i]));
            if o == n {
                continue;
            }
            path.push(pe.clone());
            let r = match (o, n) {
                // An item on both sides is a member on both: only its
                // content can differ.
                (Some(Value::Object(om)), Some(Value::Object(nm))) => {
                    match shape(&old[oi[pe]], items) {
                        Shape::Struct(s) => self.members(om, nm, s, path),
                        _ => self.fallback(path, &item, o, n),
                    }
                }
                _ => self.fallback(path, &item, o, n),
            };
            path.pop();
            r?;
        }
        Ok(true)
    }

    /// Lists what each side contributes at and below `path` and compares.
    fn fallback(
        &mut self,
        path: &mut Path,
        unit: &Unit<'_, '_>,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Result<(), TypeError> {
        let (mut a, mut b) = (Fields::new(), Fields::new());
        for (side, out) in [(old, &mut a), (new, &mut b)] {
            let Some(v) = side else { continue };
            match *unit {
                Unit::Member(schema, declared) => {
                    member_entries(v, schema, declared, path, out, self.skip)?
                }
                Unit::Item(items, lt) => item_entries(v, items, lt, path, out, self.skip)?,
            }
        }
        // A side that is absent contributes nothing: the other side's
        // fields are all added (every field of a create) or all removed,
        // and need no comparison or copy.
        match (old, new) {
            (None, _) => self.out.added.extend(b.into_keys()),
            (_, None) => self.out.removed.extend(a.into_keys()),
            _ => self.absorb(compare(&a, &b)),
        }
        Ok(())
    }
}

/// What sits at a path: a struct member (its schema, whether declared) or
/// a list item (the items' schema, the list's type).
enum Unit<'s, 'l> {
    Member(Option<Schema<'s>>, bool),
    Item(Option<Schema<'s>>, &'l ListType),
}
