//! Turns OpenAPI v3 schema JSON into the arena of [`Node`]s.
//!
//! Named definitions compile once (recursion is fine: a definition gets its
//! id before its body is compiled); inline schemas (arrays, maps, a field's
//! `allOf` wrapper) compile in place. The fallbacks follow kube's converter
//! from OpenAPI to structured-merge-diff: a list without
//! `x-kubernetes-list-type` but with patch strategy `merge` is keyed by its
//! patch merge key (or is a set of scalars), any other list is atomic.

use super::model::{
    Field, ListNode, ListType, MapNode, Node, NodeId, ObjectNode, PatchMeta, Scalar,
};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Where `$ref`s point in the documents this compiler reads.
pub const REF_PREFIX: &str = "#/components/schemas/";

/// The definition of resource quantities (`cpu: 500m`), which decode from
/// numbers and strings of their own syntax.
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

pub struct Compiler<'a> {
    defs: &'a BTreeMap<String, Value>,
    pub nodes: Vec<Node>,
    pub by_name: HashMap<String, NodeId>,
}

impl<'a> Compiler<'a> {
    pub fn new(defs: &'a BTreeMap<String, Value>) -> Self {
        Self {
            defs,
            nodes: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    /// The node of a named definition (Untyped when it does not exist).
    pub fn named(&mut self, name: &str) -> NodeId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = self.alloc(Node::Untyped);
        self.by_name.insert(name.to_string(), id);
        if let Some(schema) = self.defs.get(name) {
            let mut node = self.build(schema);
            match &mut node {
                Node::Object(o) => o.name = Some(Arc::from(name)),
                Node::IntOrString if name == QUANTITY => node = Node::Quantity,
                _ => {}
            }
            self.nodes[id as usize] = node;
        }
        id
    }

    /// Compiles an inline schema, following a `$ref` to its definition.
    pub fn schema(&mut self, schema: &Value) -> NodeId {
        if let Some(name) = ref_target(schema) {
            return self.named(name);
        }
        let node = self.build(schema);
        self.alloc(node)
    }

    fn alloc(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        (self.nodes.len() - 1) as NodeId
    }

    fn build(&mut self, schema: &Value) -> Node {
        let Some(s) = schema.as_object() else {
            return Node::Untyped;
        };
        if let Some(name) = ref_target(schema) {
            let id = self.named(name);
            return self.nodes[id as usize].clone();
        }
        if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Node::IntOrString;
        }
        let atomic = s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        let preserve = s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
        match type_of(s) {
            Some("array") => {
                let items = match s.get("items") {
                    Some(items) => self.schema(items),
                    None => self.alloc(Node::Untyped),
                };
                Node::List(ListNode {
                    items,
                    list_type: list_type(s),
                })
            }
            Some("string") => Node::Scalar(Scalar::String),
            Some("integer") if s.get("format").and_then(Value::as_str) == Some("int32") => {
                Node::Scalar(Scalar::Int32)
            }
            Some("integer") => Node::Scalar(Scalar::Integer),
            Some("number") => Node::Scalar(Scalar::Number),
            Some("boolean") => Node::Scalar(Scalar::Boolean),
            _ => {
                let props = s.get("properties").and_then(Value::as_object);
                let additional = match s.get("additionalProperties") {
                    Some(Value::Object(a)) => Some(self.schema(&Value::Object(a.clone()))),
                    Some(Value::Bool(true)) => Some(self.alloc(Node::Untyped)),
                    _ => None,
                };
                match (props, additional) {
                    (None, Some(values)) => Node::Map(MapNode { values, atomic }),
                    (Some(props), additional) => {
                        let mut obj = ObjectNode::default();
                        obj.atomic = atomic;
                        obj.preserve_unknown = preserve;
                        obj.additional = additional;
                        for (name, prop) in props {
                            let field = self.field(prop);
                            obj.push(name, field);
                        }
                        Node::Object(obj)
                    }
                    (None, None) => {
                        // An inline wrapper (`allOf: [$ref]`) or a schemaless object.
                        match s.get("allOf").and_then(Value::as_array) {
                            Some(all) if all.len() == 1 => self.build(&all[0]),
                            _ => Node::Untyped,
                        }
                    }
                }
            }
        }
    }

    fn field(&mut self, prop: &Value) -> Field {
        let strategy = prop
            .get("x-kubernetes-patch-strategy")
            .and_then(Value::as_str);
        let key = prop
            .get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str);
        let wrapped = prop
            .get("allOf")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 1);
        let node = match wrapped {
            // A field-level map-type on a referenced struct: compile a copy
            // of the definition marked atomic.
            Some(all)
                if prop.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") =>
            {
                let mut node = self.build(&all[0]);
                if let Node::Object(o) = &mut node {
                    o.atomic = true;
                }
                self.alloc(node)
            }
            Some(all) => self.schema(&all[0]),
            None => self.schema(prop),
        };
        Field {
            node,
            patch: PatchMeta::parse(strategy, key),
        }
    }
}

/// The definition name a `{"$ref": …}` schema points at.
pub fn ref_target(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(REF_PREFIX))
}

fn type_of(s: &Map<String, Value>) -> Option<&str> {
    match s.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        // JSON-schema style `["array", "null"]`.
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

fn list_type(s: &Map<String, Value>) -> ListType {
    let keys = |v: Option<&Value>| -> Vec<Arc<str>> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(Arc::from).collect())
            .unwrap_or_default()
    };
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => return ListType::Set,
        Some("map") => return ListType::Map(keys(s.get("x-kubernetes-list-map-keys"))),
        Some(_) => return ListType::Atomic,
        None => {}
    }
    let meta = PatchMeta::parse(
        s.get("x-kubernetes-patch-strategy").and_then(Value::as_str),
        s.get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str),
    );
    match (meta.merge, meta.merge_key) {
        (true, Some(key)) => ListType::Map(vec![key]),
        (true, None) => ListType::Set,
        _ => ListType::Atomic,
    }
}
