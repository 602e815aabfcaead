//! The compiled form of a kind's schema: what strategic merge patch,
//! server-side apply, field validation and pruning walk.
//!
//! OpenAPI schemas are JSON documents full of `$ref`s, `allOf` wrappers and
//! vendor extensions; every consumer here only wants to know "what is this
//! node and how do its children merge". Compiling once into an arena of
//! [`Node`]s answers that with an index lookup per step.

use std::sync::Arc;

/// Index of a node in its registry's arena.
pub type NodeId = u32;

/// What a value at some place in an object is.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A struct: known fields, each with how it patches.
    Object(ObjectNode),
    /// A string-keyed map (`additionalProperties`).
    Map(MapNode),
    /// A list, with how its items are identified.
    List(ListNode),
    Scalar(Scalar),
    /// A number or a string (IntOrString).
    IntOrString,
    /// A resource quantity: a number or a string such as `500m` or `1Gi`.
    Quantity,
    /// Anything goes (RawExtension, FieldsV1, preserved unknown fields).
    Untyped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    String,
    /// `format: int32`.
    Int32,
    /// Any other integer (`int64`).
    Integer,
    Number,
    Boolean,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectNode {
    /// The definition this struct was compiled from
    /// (`io.k8s.api.core.v1.Container`); None for inline objects.
    pub name: Option<Arc<str>>,
    /// Fields in schema order.
    pub fields: Vec<(Arc<str>, Field)>,
    /// Looked up for every field of every object a write walks (types,
    /// ownership): hashed with hashbrown's fast default rather than
    /// SipHash; the keys are the schema's own, fixed at compile time.
    index: hashbrown::HashMap<Arc<str>, usize>,
    /// `x-kubernetes-map-type: atomic`: the struct is replaced as a whole
    /// by server-side apply and owned as one field.
    pub atomic: bool,
    /// Unknown fields are kept (`x-kubernetes-preserve-unknown-fields`).
    pub preserve_unknown: bool,
    /// Extra keys beyond `fields` follow this schema (objects that have
    /// both properties and additionalProperties).
    pub additional: Option<NodeId>,
}

impl ObjectNode {
    pub fn push(&mut self, name: &str, field: Field) {
        let name: Arc<str> = Arc::from(name);
        self.index.insert(name.clone(), self.fields.len());
        self.fields.push((name, field));
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.index.get(name).map(|&i| &self.fields[i].1)
    }
}

/// One field of a struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub node: NodeId,
    pub patch: PatchMeta,
}

/// How strategic merge patch treats a field (`x-kubernetes-patch-strategy`
/// and `x-kubernetes-patch-merge-key`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PatchMeta {
    /// Lists merge by key (or as sets of scalars) instead of being replaced.
    pub merge: bool,
    /// The patch replaces the value whole.
    pub replace: bool,
    /// `$retainKeys` directives apply to this struct (or the list's items).
    pub retain_keys: bool,
    pub merge_key: Option<Arc<str>>,
}

impl PatchMeta {
    pub fn parse(strategy: Option<&str>, merge_key: Option<&str>) -> Self {
        let mut meta = PatchMeta {
            merge_key: merge_key.map(Arc::from),
            ..PatchMeta::default()
        };
        for s in strategy.unwrap_or("").split(',').map(str::trim) {
            match s {
                "merge" => meta.merge = true,
                "replace" => meta.replace = true,
                "retainKeys" => meta.retain_keys = true,
                _ => {}
            }
        }
        meta
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MapNode {
    pub values: NodeId,
    /// `x-kubernetes-map-type: atomic`.
    pub atomic: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListNode {
    pub items: NodeId,
    pub list_type: ListType,
}

/// How server-side apply identifies list items (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The list is one value, replaced whole.
    Atomic,
    /// Scalars identified by their value.
    Set,
    /// Objects identified by these key fields.
    Map(Vec<Arc<str>>),
}
