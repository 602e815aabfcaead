//! The schema registry: one place that knows the shape of every kind, keyed
//! by group/version/kind.
//!
//! Strategic merge patch reads its merge keys and strategies here,
//! server-side apply its list and map types, field validation its known
//! fields, and the OpenAPI endpoints render the same definitions. Built-in
//! kinds come from k8s-openapi plus the merge facts ([`facts`]); a CRD will
//! register its `openAPIV3Schema` through [`SchemaRegistry::new`] the same way.

mod builtin;
mod compile;
mod facts;
pub mod model;
pub mod openapi;

#[cfg(test)]
mod tests;

pub use compile::REF_PREFIX;
pub use model::{ListType, Node, NodeId, ObjectNode, PatchMeta, Scalar};

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// (group, version, kind).
pub type Gvk = (String, String, String);

/// Compiled schemas plus their source definitions.
pub struct SchemaRegistry {
    defs: BTreeMap<String, Value>,
    nodes: Vec<Node>,
    by_name: HashMap<String, NodeId>,
    kinds: HashMap<Gvk, String>,
    /// `kinds` by kind name: looked up on every write with borrowed
    /// strings, where the tuple key needed three new strings per lookup.
    by_kind: HashMap<String, Vec<(Gvk, NodeId)>>,
    /// Unique among every registry this process builds (see
    /// [`Schema::identity`]).
    uid: u64,
}

/// A borrowed position in a compiled schema.
#[derive(Clone, Copy)]
pub struct Schema<'a> {
    reg: &'a SchemaRegistry,
    id: NodeId,
}

impl std::fmt::Debug for Schema<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Schema#{}", self.id)
    }
}

/// The registry of the built-in kinds, built on first use.
pub fn builtin() -> &'static SchemaRegistry {
    static REGISTRY: OnceLock<SchemaRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let (defs, kinds) = builtin::definitions();
        let kinds = kinds
            .into_iter()
            .map(|k| {
                (
                    (
                        k.group.to_string(),
                        k.version.to_string(),
                        k.kind.to_string(),
                    ),
                    k.definition,
                )
            })
            .collect();
        SchemaRegistry::new(defs, kinds)
    })
}

impl SchemaRegistry {
    /// Compiles `defs` (OpenAPI v3 schemas whose `$ref`s point at
    /// [`REF_PREFIX`]) and maps each kind to its definition.
    pub fn new(defs: BTreeMap<String, Value>, kinds: HashMap<Gvk, String>) -> Self {
        let mut c = compile::Compiler::new(&defs);
        for name in defs.keys() {
            c.named(name);
        }
        let (nodes, by_name) = (c.nodes, c.by_name);
        let mut by_kind: HashMap<String, Vec<(Gvk, NodeId)>> = HashMap::new();
        for (gvk, def) in &kinds {
            if let Some(&id) = by_name.get(def) {
                by_kind
                    .entry(gvk.2.clone())
                    .or_default()
                    .push((gvk.clone(), id));
            }
        }
        Self {
            defs,
            nodes,
            by_name,
            kinds,
            by_kind,
            uid: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    /// Forgets the source of definitions that were only compiled in (a
    /// CRD's copy of the built-in ObjectMeta): their nodes stay, and the
    /// OpenAPI renderer documents them from the built-in registry.
    pub fn drop_sources(mut self, names: &[String]) -> Self {
        for n in names {
            self.defs.remove(n);
        }
        self
    }

    /// A kind's full name and schema node, found by borrowed strings.
    fn kind_entry(&self, group: &str, version: &str, kind: &str) -> Option<&(Gvk, NodeId)> {
        self.by_kind
            .get(kind)?
            .iter()
            .find(|((g, v, _), _)| g == group && v == version)
    }

    /// Unique among every registry this process builds.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// The schema of a kind, if registered.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<Schema<'_>> {
        self.kind_entry(group, version, kind)
            .map(|&(_, id)| Schema { reg: self, id })
    }

    /// The definition name of a kind (`io.k8s.api.core.v1.Pod`).
    pub fn kind_definition(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kind_entry(group, version, kind)
            .and_then(|(gvk, _)| self.kinds.get(gvk))
            .map(String::as_str)
    }

    pub fn named(&self, definition: &str) -> Option<Schema<'_>> {
        self.by_name
            .get(definition)
            .map(|&id| Schema { reg: self, id })
    }

    /// Source definitions (OpenAPI v3 JSON, facts applied), by name.
    pub fn definitions(&self) -> &BTreeMap<String, Value> {
        &self.defs
    }

    /// Every registered kind and its definition.
    pub fn kinds(&self) -> impl Iterator<Item = (&Gvk, &str)> {
        self.kinds.iter().map(|(k, d)| (k, d.as_str()))
    }
}

impl<'a> Schema<'a> {
    /// Which registry and node this is, for memos that outlive the borrow:
    /// registries are numbered, so a new one never reuses an old one's
    /// identity (as a reused address would).
    pub fn identity(&self) -> (u64, NodeId) {
        (self.reg.uid, self.id)
    }

    pub fn node(&self) -> &'a Node {
        &self.reg.nodes[self.id as usize]
    }

    fn at(&self, id: NodeId) -> Schema<'a> {
        Schema { reg: self.reg, id }
    }

    /// A struct field and its patch metadata.
    pub fn field(&self, name: &str) -> Option<(Schema<'a>, &'a PatchMeta)> {
        match self.node() {
            Node::Object(o) => o.field(name).map(|f| (self.at(f.node), &f.patch)),
            _ => None,
        }
    }

    /// What a key of this object or map holds: a known field, an
    /// additional property, or nothing known (None).
    pub fn member(&self, name: &str) -> Option<(Schema<'a>, Option<&'a PatchMeta>)> {
        match self.node() {
            Node::Object(o) => match o.field(name) {
                Some(f) => Some((self.at(f.node), Some(&f.patch))),
                None => o.additional.map(|a| (self.at(a), None)),
            },
            Node::Map(m) => Some((self.at(m.values), None)),
            _ => None,
        }
    }

    /// A list's item schema.
    pub fn items(&self) -> Option<Schema<'a>> {
        match self.node() {
            Node::List(l) => Some(self.at(l.items)),
            _ => None,
        }
    }

    pub fn list_type(&self) -> Option<&'a ListType> {
        match self.node() {
            Node::List(l) => Some(&l.list_type),
            _ => None,
        }
    }

    /// Keys this node does not declare are still fine here: maps, untyped
    /// values, objects that keep unknown fields, and non-objects (a type
    /// mismatch is not an unknown field).
    pub fn accepts_unknown_fields(&self) -> bool {
        match self.node() {
            Node::Object(o) => o.preserve_unknown || o.additional.is_some(),
            _ => true,
        }
    }

    pub fn is_untyped(&self) -> bool {
        matches!(self.node(), Node::Untyped)
    }

    /// A struct or map replaced whole by server-side apply.
    pub fn is_atomic_map(&self) -> bool {
        match self.node() {
            Node::Object(o) => o.atomic,
            Node::Map(m) => m.atomic,
            _ => false,
        }
    }
}

/// Calls `f` on every schema directly under a JSONSchemaProps node: the
/// named ones (properties, definitions, dependencies), the junctors'
/// and the single-or-list ones (items, additionalProperties, not).
pub fn for_each_child_schema(
    node: &mut serde_json::Map<String, Value>,
    mut f: impl FnMut(&mut Value),
) {
    for (k, v) in node.iter_mut() {
        match (k.as_str(), v) {
            (
                "properties" | "patternProperties" | "definitions" | "dependencies",
                Value::Object(m),
            ) => m.values_mut().for_each(&mut f),
            ("allOf" | "anyOf" | "oneOf", Value::Array(a)) => a.iter_mut().for_each(&mut f),
            ("items" | "additionalProperties" | "not" | "additionalItems", v) => match v {
                Value::Array(a) => a.iter_mut().for_each(&mut f),
                other => f(other),
            },
            _ => {}
        }
    }
}
