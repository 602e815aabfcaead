//! Field paths as server-side apply names them: a struct field or map key,
//! a list item by its key fields, a set item by its value, or a list item
//! by index. They print two ways: as FieldsV1 keys (`f:spec`,
//! `k:{"name":"app"}`, `v:"x"`, `i:0`) and as conflict paths
//! (`.spec.containers[name="app"].image`).

use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::fmt;

/// One step of a path. Ordered as structured-merge-diff orders them
/// (fields, then keys, then values, then indices), which is the order
/// FieldsV1 lists them in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathElement {
    Field(String),
    /// Key fields and their values, sorted by field name.
    Key(Vec<(String, Value)>),
    Value(Value),
    Index(usize),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key of this element.
    pub fn fields_v1_key(&self) -> String {
        match self {
            // Most keys are fields: joined directly, as format! costs
            // more than the copy on a path every write takes.
            PathElement::Field(f) => {
                let mut key = String::with_capacity(f.len() + 2);
                key.push_str("f:");
                key.push_str(f);
                key
            }
            PathElement::Key(k) => {
                let m: Map<String, Value> = k.iter().cloned().collect();
                format!("k:{}", Value::Object(m))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a FieldsV1 key; None for anything malformed.
    pub fn parse_fields_v1_key(key: &str) -> Option<PathElement> {
        let (kind, rest) = key.split_at_checked(2)?;
        match kind {
            "f:" => Some(PathElement::Field(rest.to_string())),
            "k:" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(m) => {
                    let mut k: Vec<(String, Value)> = m.into_iter().collect();
                    k.sort_by(|a, b| a.0.cmp(&b.0));
                    Some(PathElement::Key(k))
                }
                _ => None,
            },
            "v:" => serde_json::from_str(rest).ok().map(PathElement::Value),
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    let c = ka.cmp(kb).then_with(|| compare_values(va, vb));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A total order on JSON values (by type, then value), for sorting keys.
fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
        }
    }
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&y.as_f64().unwrap_or(0.0)),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ if rank(a) != rank(b) => rank(a).cmp(&rank(b)),
        _ => a.to_string().cmp(&b.to_string()),
    }
}

/// A path from the object's root.
pub type Path = Vec<PathElement>;

/// `.spec.containers[name="app"].image`, as kube prints conflict paths.
pub struct Display<'a>(pub &'a [PathElement]);

impl fmt::Display for Display<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in self.0 {
            match pe {
                PathElement::Field(name) => write!(f, ".{name}")?,
                PathElement::Key(k) => {
                    let parts: Vec<String> = k.iter().map(|(n, v)| format!("{n}={v}")).collect();
                    write!(f, "[{}]", parts.join(","))?
                }
                PathElement::Value(v) => write!(f, "[={v}]")?,
                PathElement::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}
