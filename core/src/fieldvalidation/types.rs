//! Type checking of a decoded object against its kind's schema — what Go's
//! typed decoding refuses in kube-apiserver (a number where a string
//! belongs, `containers` given as an object, `cpu: lots`). kube never
//! stores such an object: its create and update answer 400 ("cannot be
//! handled as a …"), its patches 422, its apply a typed-conversion error.
//! Storing one would break every typed client reading it afterwards
//! (client-go informers, `kubectl describe`).
//!
//! Integers given as whole floats (`3.0`, which YAML decoders produce)
//! are stored as integers so typed clients can read them back, and
//! quantities in kube's canonical form (`1024Mi` as `1Gi`).

use crate::schema::{Node, Scalar, Schema};
use serde_json::Value;
use std::fmt::Write;

/// The first place a value does not fit its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMismatch {
    /// The innermost struct holding the field (`EnvVar`).
    owner: String,
    /// The path from the root: field names, list indices, map keys.
    path: Vec<Step>,
    /// What was found, in Go's words (`number`, `number 1.5`, `object`).
    got: String,
    /// The Go type that did not accept it (`string`, `[]v1.Container`).
    go_type: String,
    /// What structured-merge-diff expected there (`numeric (int or float)`).
    expected: &'static str,
    /// A quantity that does not parse: Go reports the quantity syntax.
    bad_quantity: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(usize),
    Key(String),
}

/// A step of the walk's current path, borrowing its key from the object:
/// only a mismatch needs the path owned, and copying every key on the way
/// down cost an allocation per field of every write.
#[derive(Clone, Copy)]
enum At<'v> {
    Field(&'v str),
    Index(usize),
    Key(&'v str),
}

impl At<'_> {
    fn to_step(self) -> Step {
        match self {
            At::Field(f) => Step::Field(f.to_string()),
            At::Index(i) => Step::Index(i),
            At::Key(k) => Step::Key(k.to_string()),
        }
    }
}

/// The syntax kube's quantity parser reports when a quantity is malformed.
const QUANTITY_SYNTAX: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl TypeMismatch {
    /// Go's `encoding/json` message: `json: cannot unmarshal number into
    /// Go struct field EnvVar.spec.containers.env.value of type string`
    /// (the path names fields only, as Go's does).
    pub fn decode_message(&self) -> String {
        if self.bad_quantity {
            return QUANTITY_SYNTAX.to_string();
        }
        let fields: Vec<&str> = self
            .path
            .iter()
            .filter_map(|s| match s {
                Step::Field(f) => Some(f.as_str()),
                _ => None,
            })
            .collect();
        if fields.is_empty() {
            return format!(
                "json: cannot unmarshal {} into Go value of type {}",
                self.got, self.go_type
            );
        }
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
            self.got,
            self.owner,
            fields.join("."),
            self.go_type
        )
    }

    /// structured-merge-diff's wording, for server-side apply:
    /// `.spec.replicas: expected numeric (int or float), got string`.
    pub fn apply_message(&self) -> String {
        let mut path = String::new();
        for s in &self.path {
            let _ = match s {
                Step::Field(f) => write!(path, ".{f}"),
                Step::Index(i) => write!(path, "[{i}]"),
                Step::Key(k) => write!(path, "[{k:?}]"),
            };
        }
        if self.bad_quantity {
            return format!("{path}: {QUANTITY_SYNTAX}");
        }
        format!("{path}: expected {}, got {}", self.expected, self.got)
    }
}

/// Checks `value` against `schema`, normalising whole floats in integer
/// fields; the first mismatch in document order is the error.
pub fn check_types(value: &mut Value, schema: Schema<'_>) -> Result<(), Box<TypeMismatch>> {
    let mut path = Vec::new();
    walk(value, schema, "", &mut path)
}

fn walk<'v>(
    value: &'v mut Value,
    schema: Schema<'_>,
    owner: &str,
    path: &mut Vec<At<'v>>,
) -> Result<(), Box<TypeMismatch>> {
    if value.is_null() {
        // Go leaves the zero value: null fits everything.
        return Ok(());
    }
    let mismatch = |got: String, bad_quantity: bool, path: &[At<'_>]| {
        Err(Box::new(TypeMismatch {
            owner: owner.to_string(),
            path: path.iter().map(|a| a.to_step()).collect(),
            got,
            go_type: go_type(schema),
            expected: expected(schema),
            bad_quantity,
        }))
    };
    if matches!(schema.node(), Node::Quantity) {
        // kube stores every quantity it decodes in canonical form.
        let canonical = match &*value {
            Value::Number(n) => crate::quantity::canonical_number(n),
            Value::String(s) if is_quantity(s.trim()) => {
                crate::quantity::canonical(s).filter(|c| c != s)
            }
            _ => None,
        };
        if let Some(c) = canonical {
            *value = Value::String(c);
            return Ok(());
        }
    }
    let int32 = match schema.node() {
        Node::Scalar(Scalar::Int32) | Node::IntOrString => Some(true),
        Node::Scalar(Scalar::Integer) => Some(false),
        _ => None,
    };
    if let (Some(int32), Value::Number(n)) = (int32, &*value) {
        let stored_whole = n.is_i64();
        return match whole(n, int32) {
            Some(i) => {
                if !stored_whole {
                    *value = Value::from(i);
                }
                Ok(())
            }
            None => mismatch(format!("number {n}"), false, path),
        };
    }
    match (schema.node(), value) {
        (Node::Untyped, _) => Ok(()),
        (Node::Object(o), Value::Object(map)) => {
            let name = o.name.as_deref().map(short_name).unwrap_or(owner);
            for (key, child) in map.iter_mut() {
                let Some((child_schema, declared)) = schema.member(key) else {
                    continue; // unknown: pruning's business
                };
                // A declared field is owned by this struct; an extra key of
                // an object with additionalProperties behaves as a map value.
                path.push(if declared.is_some() {
                    At::Field(key)
                } else {
                    At::Key(key)
                });
                let r = walk(child, child_schema, name, path);
                path.pop();
                r?;
            }
            Ok(())
        }
        (Node::Map(_), Value::Object(map)) => {
            for (key, child) in map.iter_mut() {
                let Some((child_schema, _)) = schema.member(key) else {
                    continue;
                };
                path.push(At::Key(key));
                let r = walk(child, child_schema, owner, path);
                path.pop();
                r?;
            }
            Ok(())
        }
        (Node::List(_), Value::Array(items)) => {
            let Some(item_schema) = schema.items() else {
                return Ok(());
            };
            for (i, item) in items.iter_mut().enumerate() {
                path.push(At::Index(i));
                let r = walk(item, item_schema, owner, path);
                path.pop();
                r?;
            }
            Ok(())
        }
        (Node::Scalar(Scalar::String), Value::String(_))
        | (Node::Scalar(Scalar::Boolean), Value::Bool(_))
        | (Node::Scalar(Scalar::Number), Value::Number(_))
        | (Node::IntOrString, Value::String(_)) => Ok(()),
        (Node::Quantity, Value::Number(_)) => Ok(()),
        (Node::Quantity, Value::String(s)) if is_quantity(s.trim()) => Ok(()),
        (Node::Quantity, _) => mismatch(String::new(), true, path),
        (_, other) => mismatch(json_kind(other).to_string(), false, path),
    }
}

/// The whole number `n` holds, if it holds one that fits.
fn whole(n: &serde_json::Number, int32: bool) -> Option<i64> {
    let i = match n.as_i64() {
        Some(i) => i,
        None => {
            let f = n.as_f64()?;
            if f.fract() != 0.0 || f < i64::MIN as f64 || f >= i64::MAX as f64 {
                return None;
            }
            f as i64
        }
    };
    (!int32 || i32::try_from(i).is_ok()).then_some(i)
}

/// Go's names for what a JSON value is.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `io.k8s.api.core.v1.Container` → `Container`.
fn short_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// The Go type kube decodes a node into, as its errors print it.
fn go_type(schema: Schema<'_>) -> String {
    match schema.node() {
        Node::Object(o) => match o.name.as_deref() {
            Some(def) => {
                let mut parts = def.rsplit('.');
                let name = parts.next().unwrap_or(def);
                match parts.next() {
                    Some(pkg) => format!("{pkg}.{name}"),
                    None => name.to_string(),
                }
            }
            None => "struct".to_string(),
        },
        Node::Map(_) => format!(
            "map[string]{}",
            schema
                .member("")
                .map_or_else(|| "interface {}".to_string(), |(v, _)| go_type(v))
        ),
        Node::List(_) => format!(
            "[]{}",
            schema
                .items()
                .map_or_else(|| "interface {}".to_string(), go_type)
        ),
        Node::Scalar(Scalar::String) => "string".into(),
        Node::Scalar(Scalar::Int32) => "int32".into(),
        Node::Scalar(Scalar::Integer) => "int64".into(),
        Node::Scalar(Scalar::Number) => "float64".into(),
        Node::Scalar(Scalar::Boolean) => "bool".into(),
        Node::IntOrString => "intstr.IntOrString".into(),
        Node::Quantity => "resource.Quantity".into(),
        Node::Untyped => "interface {}".into(),
    }
}

/// structured-merge-diff's name for what a node holds.
fn expected(schema: Schema<'_>) -> &'static str {
    match schema.node() {
        Node::Object(_) | Node::Map(_) => "map",
        Node::List(_) => "list",
        Node::Scalar(Scalar::String) => "string",
        Node::Scalar(Scalar::Boolean) => "boolean",
        Node::Scalar(_) => "numeric (int or float)",
        Node::IntOrString | Node::Quantity | Node::Untyped => "string or number",
    }
}

/// kube's quantity syntax: a signed decimal number, then an optional
/// binary (`Ki`…`Ei`), decimal (`n`…`E`) or exponent (`e3`) suffix.
fn is_quantity(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(digits);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    let suffix_ok = match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "n" | "u" | "m" | "k" | "M" | "G" | "T"
        | "P" | "E" => true,
        exp => {
            let e = exp.strip_prefix(['e', 'E']);
            e.is_some_and(|rest| {
                let d = rest.strip_prefix(['+', '-']).unwrap_or(rest);
                !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())
            })
        }
    };
    number_ok && suffix_ok
}

#[cfg(test)]
pub(super) fn quantity_ok(s: &str) -> bool {
    is_quantity(s)
}
