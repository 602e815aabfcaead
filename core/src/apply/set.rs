//! Sets of field paths (what a manager owns), stored as a trie and encoded
//! as FieldsV1: every node a JSON object keyed by its children's path
//! elements, `"."` marking a node that is itself in the set.

use super::path::{Path, PathElement};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

/// FieldsV1 encodings each thread remembers (see [`FieldSet::to_fields_v1`]).
const RECENT_SETS: usize = 8;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    children: BTreeMap<PathElement, Node>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    /// The path ending here is in the set.
    member: bool,
    set: FieldSet,
}

impl FieldSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        // Most inserts pass through nodes that exist: clone the element
        // (owned strings) only for a new one.
        let node = match self.children.get_mut(first) {
            Some(n) => n,
            None => self.children.entry(first.clone()).or_default(),
        };
        if rest.is_empty() {
            node.member = true;
        } else {
            node.set.insert(rest);
        }
    }

    pub fn contains(&self, path: &[PathElement]) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        match self.children.get(first) {
            Some(n) if rest.is_empty() => n.member,
            Some(n) => n.set.contains(rest),
            None => false,
        }
    }

    /// Whether any path of the set starts with `prefix` (or is it).
    pub fn has_prefix(&self, prefix: &[PathElement]) -> bool {
        let Some((first, rest)) = prefix.split_first() else {
            return !self.is_empty();
        };
        match self.children.get(first) {
            Some(_) if rest.is_empty() => true,
            Some(n) => n.set.has_prefix(rest),
            None => false,
        }
    }

    /// Every path in the set, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (pe, node) in &self.children {
            prefix.push(pe.clone());
            if node.member {
                out.push(prefix.clone());
            }
            node.set.collect(prefix, out);
            prefix.pop();
        }
    }

    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Self {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// Every path in either set (merged node by node, no path is built).
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_in(other);
        out
    }

    fn union_in(&mut self, other: &FieldSet) {
        for (pe, theirs) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => {
                    mine.member |= theirs.member;
                    mine.set.union_in(&theirs.set);
                }
                None => {
                    self.children.insert(pe.clone(), theirs.clone());
                }
            }
        }
    }

    /// Paths of `self` not in `other` (exact paths; children of a removed
    /// path stay).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.subtract(other);
        out
    }

    /// Removes the paths of `other` in place (as [`FieldSet::difference`]);
    /// whether anything was removed.
    pub fn subtract(&mut self, other: &FieldSet) -> bool {
        let mut changed = false;
        self.children.retain(|pe, mine| {
            let Some(theirs) = other.children.get(pe) else {
                return true;
            };
            if mine.member && theirs.member {
                mine.member = false;
                changed = true;
            }
            changed |= mine.set.subtract(&theirs.set);
            mine.member || !mine.set.is_empty()
        });
        changed
    }

    /// Paths in both sets (walked node by node, no path is built).
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, mine) in &self.children {
            let Some(theirs) = other.children.get(pe) else {
                continue;
            };
            let node = Node {
                member: mine.member && theirs.member,
                set: mine.set.intersection(&theirs.set),
            };
            if node.member || !node.set.is_empty() {
                out.children.insert(pe.clone(), node);
            }
        }
        out
    }

    /// The FieldsV1 JSON of the set. Objects of one shape own the same
    /// set (every create of a kind from one client, typically), and
    /// building the JSON — a map and a key string per node — cost more
    /// than copying a recent result, so each thread keeps a few.
    pub fn to_fields_v1(&self) -> Value {
        thread_local! {
            static RECENT: RefCell<VecDeque<(FieldSet, Value)>> = const { RefCell::new(VecDeque::new()) };
        }
        RECENT.with_borrow_mut(|recent| {
            if let Some(i) = recent.iter().position(|(set, _)| set == self) {
                let hit = recent.remove(i).expect("found above");
                let out = hit.1.clone();
                recent.push_front(hit);
                return out;
            }
            let out = self.encode_fields_v1();
            if recent.len() == RECENT_SETS {
                recent.pop_back();
            }
            recent.push_front((self.clone(), out.clone()));
            out
        })
    }

    pub(super) fn encode_fields_v1(&self) -> Value {
        let mut m = Map::new();
        for (pe, node) in &self.children {
            let mut child = match node.set.encode_fields_v1() {
                Value::Object(c) => c,
                _ => Map::new(),
            };
            if node.member && !child.is_empty() {
                let mut with_dot = Map::new();
                with_dot.insert(".".into(), Value::Object(Map::new()));
                with_dot.extend(child);
                child = with_dot;
            }
            m.insert(pe.fields_v1_key(), Value::Object(child));
        }
        Value::Object(m)
    }

    /// Parses FieldsV1; None when it is not well formed.
    pub fn from_fields_v1(v: &Value) -> Option<FieldSet> {
        let m = v.as_object()?;
        let mut out = FieldSet::new();
        for (key, child) in m {
            if key == "." {
                continue;
            }
            let pe = PathElement::parse_fields_v1_key(key)?;
            let c = child.as_object()?;
            let set = FieldSet::from_fields_v1(child)?;
            let member = c.is_empty() || c.contains_key(".");
            out.children.insert(pe, Node { member, set });
        }
        Some(out)
    }
}
