//! kube's static type check of CEL expressions against the schema of the
//! objects they read: what an admission policy's status reports
//! (`found no matching overload for '_>_' applied to '(int, string)'`,
//! `undefined field 'maxRetries'`), worded and located as cel-go words
//! and locates it.
//!
//! The check is deliberately one-sided: where the schema or the library
//! leaves a type open (int-or-string, quantities, preserved unknown
//! fields, functions outside CEL's standard library, a string field that
//! may hold a timestamp) the type is `dyn`, which matches everything, so
//! an expression kube accepts is never reported here; what is reported
//! is an error in kube too.

use super::cel::env;
use crate::schema::{Node, Scalar, Schema};
use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use std::fmt;
use std::rc::Rc;

/// A CEL type as the checker infers it.
#[derive(Clone)]
pub enum Type<'a> {
    /// Unknown until run time; also what an expression with an error
    /// continues as, so one mistake is reported once.
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    /// A schema's string: its format (date-time, duration, byte) may make
    /// it a timestamp, duration or bytes in kube, which the compiled
    /// schema does not record, so it passes for any of them.
    SchemaString,
    List(Rc<Type<'a>>),
    Map(Rc<Type<'a>>, Rc<Type<'a>>),
    /// An object with the fields of a schema node.
    Object(Schema<'a>),
    /// An object with declared fields (`request`, `variables`).
    Record(Rc<[(Rc<str>, Type<'a>)]>),
    /// A type value (`int`, `string`, … as identifiers; `type(x)`).
    TypeValue,
}

impl fmt::Display for Type<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null_type"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String | Type::SchemaString => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::List(t) => write!(f, "list({t})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(_) | Type::Record(_) => f.write_str("object"),
            Type::TypeValue => f.write_str("type"),
        }
    }
}

impl<'a> Type<'a> {
    /// The type of values a schema node describes, as kube declares it.
    pub fn of(schema: Schema<'a>) -> Type<'a> {
        match schema.node() {
            Node::Object(o) if o.fields.is_empty() => match schema.member("") {
                Some((values, _)) => Type::Map(Rc::new(Type::String), Rc::new(Type::of(values))),
                None => Type::Dyn,
            },
            Node::Object(_) => Type::Object(schema),
            Node::Map(_) => match schema.member("") {
                Some((values, _)) => Type::Map(Rc::new(Type::String), Rc::new(Type::of(values))),
                None => Type::Dyn,
            },
            Node::List(_) => match schema.items() {
                Some(items) => Type::List(Rc::new(Type::of(items))),
                None => Type::Dyn,
            },
            Node::Scalar(Scalar::String) => Type::SchemaString,
            Node::Scalar(Scalar::Int32 | Scalar::Integer) => Type::Int,
            Node::Scalar(Scalar::Number) => Type::Double,
            Node::Scalar(Scalar::Boolean) => Type::Bool,
            Node::IntOrString | Node::Quantity | Node::Untyped => Type::Dyn,
        }
    }

    /// The type of values a CRD's structural schema node describes (as
    /// JSON), as kube declares it for `self` in `x-kubernetes-validations`:
    /// int-or-string, preserved unknown fields and nodes without a type
    /// are open (`dyn`); strings take their format's type; an object with
    /// properties is a record of them, one with `additionalProperties` a
    /// map. At the root and in embedded resources `apiVersion`, `kind` and
    /// `metadata` are open whatever the schema spells out.
    pub fn of_json_schema(s: &serde_json::Value, envelope: bool) -> Type<'static> {
        let flag = |k: &str| s.get(k).and_then(serde_json::Value::as_bool) == Some(true);
        if flag("x-kubernetes-int-or-string") || flag("x-kubernetes-preserve-unknown-fields") {
            return Type::Dyn;
        }
        match s.get("type").and_then(serde_json::Value::as_str) {
            Some("object") => {
                let envelope = envelope || flag("x-kubernetes-embedded-resource");
                if let Some(values) = s.get("additionalProperties").filter(|v| v.is_object()) {
                    return Type::map(Type::String, Type::of_json_schema(values, false));
                }
                let Some(props) = s.get("properties").and_then(serde_json::Value::as_object) else {
                    return Type::Dyn;
                };
                let mut fields: Vec<(&str, Type<'static>)> = props
                    .iter()
                    .filter(|(k, _)| !(envelope && ENVELOPE.contains(&k.as_str())))
                    .map(|(k, v)| (k.as_str(), Type::of_json_schema(v, false)))
                    .collect();
                if envelope {
                    fields.extend(ENVELOPE.iter().map(|k| (*k, Type::Dyn)));
                }
                Type::record(fields)
            }
            Some("array") => match s.get("items").filter(|i| i.is_object()) {
                Some(items) => Type::list(Type::of_json_schema(items, false)),
                None => Type::list(Type::Dyn),
            },
            Some("string") => match s.get("format").and_then(serde_json::Value::as_str) {
                Some("date-time" | "datetime") => Type::Timestamp,
                Some("duration") => Type::Duration,
                Some("byte") => Type::Bytes,
                _ => Type::String,
            },
            Some("integer") => Type::Int,
            Some("number") => Type::Double,
            Some("boolean") => Type::Bool,
            _ => Type::Dyn,
        }
    }

    /// A record of named fields.
    pub fn record(fields: Vec<(&str, Type<'a>)>) -> Type<'a> {
        Type::Record(fields.into_iter().map(|(k, t)| (Rc::from(k), t)).collect())
    }

    /// A list of `item`.
    pub fn list(item: Type<'a>) -> Type<'a> {
        Type::List(Rc::new(item))
    }

    /// A map from `key` to `value`.
    pub fn map(key: Type<'a>, value: Type<'a>) -> Type<'a> {
        Type::Map(Rc::new(key), Rc::new(value))
    }

    /// kube's `request` variable of admission expressions.
    pub fn admission_request() -> Type<'a> {
        let gvk = |last: &str| {
            Type::record(vec![
                ("group", Type::String),
                ("version", Type::String),
                (last, Type::String),
            ])
        };
        Type::record(vec![
            ("kind", gvk("kind")),
            ("resource", gvk("resource")),
            ("subResource", Type::String),
            ("requestKind", gvk("kind")),
            ("requestResource", gvk("resource")),
            ("requestSubResource", Type::String),
            ("name", Type::String),
            ("namespace", Type::String),
            ("operation", Type::String),
            (
                "userInfo",
                Type::record(vec![
                    ("username", Type::String),
                    ("uid", Type::String),
                    ("groups", Type::list(Type::String)),
                    ("extra", Type::map(Type::String, Type::list(Type::String))),
                ]),
            ),
            ("dryRun", Type::Bool),
            ("options", Type::Dyn),
        ])
    }

    fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn)
    }
}

/// The fields every kube object has, open in the types of CRD roots and
/// embedded resources.
const ENVELOPE: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Whether a value of one type may stand where the other is expected
/// (they unify): `dyn` and null unify with anything, a schema string with
/// the types a string format gives, containers element by element, and
/// objects with objects and maps (a record may be compared with a map
/// literal in kube's typed objects too).
fn unify(a: &Type<'_>, b: &Type<'_>) -> bool {
    use Type::*;
    match (a, b) {
        (Dyn, _) | (_, Dyn) | (Null, _) | (_, Null) => true,
        (SchemaString, String | Timestamp | Duration | Bytes | SchemaString)
        | (String | Timestamp | Duration | Bytes, SchemaString) => true,
        (List(x), List(y)) => unify(x, y),
        (Map(k1, v1), Map(k2, v2)) => unify(k1, k2) && unify(v1, v2),
        (Object(_) | Record(_) | Map(..), Object(_) | Record(_) | Map(..)) => true,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The more precise of two unifying types (the one that is not `dyn`).
fn narrower<'a>(a: &Type<'a>, b: &Type<'a>) -> Type<'a> {
    match (a, b) {
        (Type::Dyn | Type::Null, _) => b.clone(),
        (Type::SchemaString, Type::String | Type::Timestamp | Type::Duration | Type::Bytes) => {
            b.clone()
        }
        _ => a.clone(),
    }
}

/// One parameter of an overload's signature.
#[derive(Clone, Copy)]
enum P {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    /// The overload's type parameter.
    A,
    ListA,
    /// A map keyed by the type parameter (its values open).
    MapA,
    /// Any list or map (`size`, …): the element type is not returned.
    Sized,
}

/// Overloads as (parameters, result).
type Overloads = &'static [(&'static [P], P)];

const NUMERIC_ARITHMETIC: Overloads = &[
    (&[P::Int, P::Int], P::Int),
    (&[P::Uint, P::Uint], P::Uint),
    (&[P::Double, P::Double], P::Double),
];

/// Comparisons: same-typed ordered values, and numbers across types
/// (kube turns on cross-type numeric comparisons).
const ORDERING: Overloads = &[
    (&[P::Int, P::Int], P::Bool),
    (&[P::Uint, P::Uint], P::Bool),
    (&[P::Double, P::Double], P::Bool),
    (&[P::Int, P::Uint], P::Bool),
    (&[P::Int, P::Double], P::Bool),
    (&[P::Uint, P::Int], P::Bool),
    (&[P::Uint, P::Double], P::Bool),
    (&[P::Double, P::Int], P::Bool),
    (&[P::Double, P::Uint], P::Bool),
    (&[P::String, P::String], P::Bool),
    (&[P::Bytes, P::Bytes], P::Bool),
    (&[P::Bool, P::Bool], P::Bool),
    (&[P::Timestamp, P::Timestamp], P::Bool),
    (&[P::Duration, P::Duration], P::Bool),
];

/// The standard library's functions and operators (global calls).
fn global(name: &str) -> Option<Overloads> {
    Some(match name {
        operators::ADD => &[
            (&[P::Int, P::Int], P::Int),
            (&[P::Uint, P::Uint], P::Uint),
            (&[P::Double, P::Double], P::Double),
            (&[P::String, P::String], P::String),
            (&[P::Bytes, P::Bytes], P::Bytes),
            (&[P::ListA, P::ListA], P::ListA),
            (&[P::Timestamp, P::Duration], P::Timestamp),
            (&[P::Duration, P::Timestamp], P::Timestamp),
            (&[P::Duration, P::Duration], P::Duration),
        ],
        operators::SUBSTRACT => &[
            (&[P::Int, P::Int], P::Int),
            (&[P::Uint, P::Uint], P::Uint),
            (&[P::Double, P::Double], P::Double),
            (&[P::Timestamp, P::Timestamp], P::Duration),
            (&[P::Timestamp, P::Duration], P::Timestamp),
            (&[P::Duration, P::Duration], P::Duration),
        ],
        operators::MULTIPLY | operators::DIVIDE => NUMERIC_ARITHMETIC,
        operators::MODULO => &[(&[P::Int, P::Int], P::Int), (&[P::Uint, P::Uint], P::Uint)],
        operators::LESS
        | operators::LESS_EQUALS
        | operators::GREATER
        | operators::GREATER_EQUALS => ORDERING,
        operators::EQUALS | operators::NOT_EQUALS => &[(&[P::A, P::A], P::Bool)],
        operators::LOGICAL_AND | operators::LOGICAL_OR => &[(&[P::Bool, P::Bool], P::Bool)],
        operators::LOGICAL_NOT => &[(&[P::Bool], P::Bool)],
        operators::NEGATE => &[(&[P::Int], P::Int), (&[P::Double], P::Double)],
        operators::CONDITIONAL => &[(&[P::Bool, P::A, P::A], P::A)],
        operators::IN => &[(&[P::A, P::ListA], P::Bool), (&[P::A, P::MapA], P::Bool)],
        "size" => &[
            (&[P::String], P::Int),
            (&[P::Bytes], P::Int),
            (&[P::Sized], P::Int),
        ],
        _ => return None,
    })
}

/// The standard library's member functions (`x.f(…)`, target first).
fn member(name: &str) -> Option<Overloads> {
    Some(match name {
        "contains" | "startsWith" | "endsWith" | "matches" => &[(&[P::String, P::String], P::Bool)],
        "size" => &[
            (&[P::String], P::Int),
            (&[P::Bytes], P::Int),
            (&[P::Sized], P::Int),
        ],
        _ => return None,
    })
}

/// Conversions (and other global functions of one fixed result type)
/// that accept any argument as far as this check goes.
fn conversion<'a>(name: &str) -> Option<Type<'a>> {
    Some(match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "bool" => Type::Bool,
        "timestamp" => Type::Timestamp,
        "duration" => Type::Duration,
        "type" => Type::TypeValue,
        "dyn" => Type::Dyn,
        _ => return None,
    })
}

/// Bindings of an overload's type parameter while its arguments are
/// matched.
#[derive(Default)]
struct Binding<'a> {
    a: Option<Type<'a>>,
}

impl<'a> Binding<'a> {
    fn bind(&mut self, t: &Type<'a>) -> bool {
        match &self.a {
            None => {
                self.a = Some(t.clone());
                true
            }
            Some(bound) if unify(bound, t) => {
                self.a = Some(narrower(bound, t));
                true
            }
            Some(_) => false,
        }
    }

    fn accepts(&mut self, p: P, t: &Type<'a>) -> bool {
        use Type::*;
        if t.is_dyn() {
            return true;
        }
        if matches!(t, Null) {
            return matches!(p, P::A) && self.bind(t);
        }
        match p {
            P::Bool => matches!(t, Bool),
            P::Int => matches!(t, Int),
            P::Uint => matches!(t, Uint),
            P::Double => matches!(t, Double),
            P::String => matches!(t, String | SchemaString),
            P::Bytes => matches!(t, Bytes | SchemaString),
            P::Timestamp => matches!(t, Timestamp | SchemaString),
            P::Duration => matches!(t, Duration | SchemaString),
            P::A => self.bind(t),
            P::ListA => match t {
                List(item) => self.bind(item),
                _ => false,
            },
            P::MapA => match t {
                Map(key, _) => self.bind(key),
                Object(_) | Record(_) => self.bind(&String),
                _ => false,
            },
            P::Sized => matches!(t, List(_) | Map(..) | Object(_) | Record(_)),
        }
    }

    fn result(&self, p: P) -> Type<'a> {
        let a = || self.a.clone().unwrap_or(Type::Dyn);
        match p {
            P::Bool => Type::Bool,
            P::Int => Type::Int,
            P::Uint => Type::Uint,
            P::Double => Type::Double,
            P::String => Type::String,
            P::Bytes => Type::Bytes,
            P::Timestamp => Type::Timestamp,
            P::Duration => Type::Duration,
            P::A => a(),
            P::ListA => Type::list(a()),
            P::MapA | P::Sized => Type::Dyn,
        }
    }
}

/// Picks the first overload the argument types match and answers its
/// result; None when none does. An argument of type `dyn` matches every
/// overload, so when it leaves a choice between results the answer is
/// `dyn`.
fn resolve<'a>(overloads: Overloads, args: &[Type<'a>]) -> Option<Type<'a>> {
    let mut found: Option<Type<'a>> = None;
    for (params, result) in overloads {
        if params.len() != args.len() {
            continue;
        }
        let mut b = Binding::default();
        if params.iter().zip(args).all(|(p, t)| b.accepts(*p, t)) {
            let r = b.result(*result);
            found = Some(match found {
                None => r,
                Some(prev) if std::mem::discriminant(&prev) == std::mem::discriminant(&r) => prev,
                Some(_) => Type::Dyn,
            });
            if !args.iter().any(Type::is_dyn) {
                break;
            }
        }
    }
    found
}

/// The variables an expression may read, with their types.
pub type Declarations<'d, 'a> = &'d [(&'d str, Type<'a>)];

/// Checks `source` with `declared` variables: the type it evaluates to,
/// or cel-go's report of every error (`ERROR: <input>:1:22: …` with the
/// source line and a caret under the place), sorted by place.
pub fn check<'a>(source: &str, declared: Declarations<'_, 'a>) -> Result<Type<'a>, String> {
    let program = env()
        .compile(source)
        .map_err(|e| format!("ERROR: <input>:1:1: {e}"))?;
    let mut checker = Checker {
        info: program.source_info(),
        declared,
        scopes: Vec::new(),
        errors: Vec::new(),
    };
    let t = checker.check(program.expression());
    if checker.errors.is_empty() {
        return Ok(t);
    }
    checker.errors.sort_by_key(|e| e.0);
    Err(checker
        .errors
        .iter()
        .map(|(at, message)| located(source, *at, message))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// One error as cel-go prints it: place (line, 1-based column in
/// characters), message, the line and a caret under the place.
fn located(source: &str, at: usize, message: &str) -> String {
    let at = at.min(source.len());
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_no = source[..line_start].matches('\n').count() + 1;
    let line = source[line_start..].lines().next().unwrap_or("");
    let column = source[line_start..at].chars().count();
    format!(
        "ERROR: <input>:{line_no}:{}: {message}\n | {line}\n | {}^",
        column + 1,
        ".".repeat(column)
    )
}

struct Checker<'s, 'a> {
    info: &'s SourceInfo,
    declared: Declarations<'s, 'a>,
    /// Comprehension variables, innermost last.
    scopes: Vec<(String, Type<'a>)>,
    /// (byte offset, message).
    errors: Vec<(usize, String)>,
}

/// Functions the interpreter's extensions offer that kube 1.34 does not
/// let a new expression use (its lists extension arrives at compatibility
/// version 1.34, a 1.34 server compiles new expressions at 1.33; it has no
/// math extension): refused as kube refuses them.
const NOT_IN_KUBE: &[&str] = &[
    "slice", "flatten", "distinct", "reverse", "sort", "first", "last",
];

/// Namespaces of such functions (`math.abs`, `lists.range`).
const NAMESPACES_NOT_IN_KUBE: &[&str] = &["math", "lists"];

/// Identifiers that name types.
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

impl<'a> Checker<'_, 'a> {
    fn error(&mut self, id: u64, message: String) -> Type<'a> {
        let at = self
            .info
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        self.errors.push((at, message));
        Type::Dyn
    }

    fn check(&mut self, e: &IdedExpr) -> Type<'a> {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Type::Bool,
                LiteralValue::Bytes(_) => Type::Bytes,
                LiteralValue::Double(_) => Type::Double,
                LiteralValue::Int(_) => Type::Int,
                LiteralValue::Null => Type::Null,
                LiteralValue::String(_) => Type::String,
                LiteralValue::UInt(_) => Type::Uint,
            },
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(s) => {
                let operand = self.check(&s.operand);
                let field = self.select(e.id, &operand, &s.field);
                if s.test {
                    Type::Bool
                } else {
                    field
                }
            }
            Expr::Call(c) => {
                let target = c.target.as_deref().map(|t| match &t.expr {
                    Expr::Ident(n) if NAMESPACES_NOT_IN_KUBE.contains(&n.as_str()) => {
                        self.undeclared(t.id, n);
                        None
                    }
                    // `sets.contains(…)`: a library namespace, not a value.
                    Expr::Ident(n) if !self.is_variable(n) => None,
                    _ => Some(self.check(t)),
                });
                let args: Vec<Type<'a>> = c.args.iter().map(|a| self.check(a)).collect();
                match target {
                    Some(None) => Type::Dyn,
                    Some(Some(t)) => self.member_call(e.id, &c.func_name, t, args),
                    None => self.global_call(e.id, &c.func_name, args),
                }
            }
            Expr::List(l) => {
                let items: Vec<Type<'a>> = l.elements.iter().map(|x| self.check(x)).collect();
                Type::list(common(&items))
            }
            Expr::Map(m) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        keys.push(self.check(&me.key));
                        values.push(self.check(&me.value));
                    }
                }
                Type::map(common(&keys), common(&values))
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.check(&f.value);
                    }
                }
                Type::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.check(&c.iter_range);
                let (first, second) = match &range {
                    Type::List(item) => match c.iter_var2 {
                        Some(_) => (Type::Int, (**item).clone()),
                        None => ((**item).clone(), Type::Dyn),
                    },
                    Type::Map(k, v) => ((**k).clone(), (**v).clone()),
                    Type::Object(_) | Type::Record(_) => (Type::String, Type::Dyn),
                    Type::Dyn => (Type::Dyn, Type::Dyn),
                    other => {
                        let message = format!(
                            "expression of type '{other}' cannot be the range of a comprehension (must be list, map, or dynamic)"
                        );
                        self.error(c.iter_range.id, message);
                        (Type::Dyn, Type::Dyn)
                    }
                };
                let mut accu = self.check(&c.accu_init);
                let depth = self.scopes.len();
                self.scopes.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), second));
                }
                self.scopes.push((c.accu_var.clone(), accu.clone()));
                self.check(&c.loop_cond);
                let step = self.check(&c.loop_step);
                self.scopes.truncate(depth);
                if unify(&accu, &step) {
                    accu = refine(&accu, &step);
                }
                self.scopes.push((c.accu_var.clone(), accu));
                let result = self.check(&c.result);
                self.scopes.truncate(depth);
                result
            }
            Expr::Unspecified => Type::Dyn,
        }
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scopes.iter().any(|(n, _)| n == name) || self.declared.iter().any(|(n, _)| *n == name)
    }

    fn undeclared(&mut self, id: u64, name: &str) -> Type<'a> {
        self.error(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        )
    }

    fn ident(&mut self, id: u64, name: &str) -> Type<'a> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return t.clone();
        }
        if let Some((_, t)) = self.declared.iter().find(|(n, _)| *n == name) {
            return t.clone();
        }
        if TYPE_NAMES.contains(&name) {
            return Type::TypeValue;
        }
        self.undeclared(id, name)
    }

    fn select(&mut self, id: u64, operand: &Type<'a>, field: &str) -> Type<'a> {
        match operand {
            Type::Dyn | Type::Null => Type::Dyn,
            Type::Map(_, v) => (**v).clone(),
            Type::Record(fields) => match fields.iter().find(|(n, _)| &**n == field) {
                Some((_, t)) => t.clone(),
                None => self.error(id, format!("undefined field '{field}'")),
            },
            Type::Object(schema) => match schema.member(field) {
                Some((s, _)) => Type::of(s),
                // Every object kube types carries these, whatever its
                // schema spells out; preserved unknown fields are open.
                None if matches!(field, "apiVersion" | "kind" | "metadata")
                    || schema.accepts_unknown_fields() =>
                {
                    Type::Dyn
                }
                None => self.error(id, format!("undefined field '{field}'")),
            },
            other => {
                let message = format!("type '{other}' does not support field selection");
                self.error(id, message)
            }
        }
    }

    fn global_call(&mut self, id: u64, name: &str, args: Vec<Type<'a>>) -> Type<'a> {
        if name == operators::INDEX {
            return self.index(id, &args);
        }
        if let Some(t) = conversion(name) {
            return t;
        }
        // What the math extension's macros expand to.
        if let Some(ns) = name.split_once('.').map(|(ns, _)| ns) {
            if NAMESPACES_NOT_IN_KUBE.contains(&ns) {
                return self.undeclared(id, ns);
            }
        }
        let Some(overloads) = global(name) else {
            return Type::Dyn;
        };
        match resolve(overloads, &args) {
            Some(t) => t,
            None => {
                let types: Vec<String> = args.iter().map(ToString::to_string).collect();
                self.error(
                    id,
                    format!(
                        "found no matching overload for '{name}' applied to '({})'",
                        types.join(", ")
                    ),
                )
            }
        }
    }

    fn member_call(
        &mut self,
        id: u64,
        name: &str,
        target: Type<'a>,
        args: Vec<Type<'a>>,
    ) -> Type<'a> {
        if NOT_IN_KUBE.contains(&name) {
            return self.undeclared(id, name);
        }
        // What the lists extension's `sortBy` macro expands to.
        if name == "@sortByAssociatedKeys" {
            return self.undeclared(id, "sortBy");
        }
        let Some(overloads) = member(name) else {
            return Type::Dyn;
        };
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(target);
        all.extend(args);
        match resolve(overloads, &all) {
            Some(t) => t,
            None => {
                let types: Vec<String> = all[1..].iter().map(ToString::to_string).collect();
                self.error(
                    id,
                    format!(
                        "found no matching overload for '{name}' applied to '{}.({})'",
                        all[0],
                        types.join(", ")
                    ),
                )
            }
        }
    }

    /// `x[i]`: lists by int, maps by their key type, objects by field
    /// name.
    fn index(&mut self, id: u64, args: &[Type<'a>]) -> Type<'a> {
        let [container, key] = args else {
            return Type::Dyn;
        };
        let fits = |want: &Type<'_>| unify(want, key);
        match container {
            Type::Dyn => Type::Dyn,
            Type::List(item) if fits(&Type::Int) || matches!(key, Type::Uint) => (**item).clone(),
            Type::Map(k, v) if fits(k) => (**v).clone(),
            Type::Object(_) | Type::Record(_) if fits(&Type::String) => Type::Dyn,
            _ => self.error(
                id,
                format!("found no matching overload for '_[_]' applied to '({container}, {key})'"),
            ),
        }
    }
}

/// The type every one of `types` unifies to: the first precise one when
/// they all agree, `dyn` when they differ (cel-go types a mixed list
/// literal as `list(dyn)`).
fn common<'a>(types: &[Type<'a>]) -> Type<'a> {
    let mut out = Type::Dyn;
    for t in types {
        if !unify(&out, t) {
            return Type::Dyn;
        }
        out = narrower(&out, t);
    }
    out
}

/// A comprehension's accumulator once its step is known: `[]` (a
/// `list(dyn)`) that the step extends with `list(int)` is a `list(int)`.
fn refine<'a>(accu: &Type<'a>, step: &Type<'a>) -> Type<'a> {
    match (accu, step) {
        (Type::List(a), Type::List(s)) if a.is_dyn() => Type::List(s.clone()),
        (Type::Map(k, v), Type::Map(..)) if k.is_dyn() && v.is_dyn() => step.clone(),
        _ => narrower(accu, step),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::builtin;

    fn deployment() -> Type<'static> {
        Type::of(builtin().kind("apps", "v1", "Deployment").unwrap())
    }

    fn check_object(source: &str) -> Result<String, String> {
        let declared = [
            ("object", deployment()),
            ("oldObject", deployment()),
            ("request", Type::admission_request()),
            ("params", Type::Dyn),
        ];
        check(source, &declared).map(|t| t.to_string())
    }

    #[test]
    fn reports_what_kube_reports() {
        assert_eq!(
            check_object("object.spec.replicas > '1'").unwrap_err(),
            "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^"
        );
        for (source, says) in [
            (
                "'wants replicas > 1, got ' + object.spec.replicas",
                "found no matching overload for '_+_' applied to '(string, int)'",
            ),
            (
                "object.spec.maxRetries < 10",
                "undefined field 'maxRetries'",
            ),
            (
                "object.spec.replicas.foo == 1",
                "type 'int' does not support field selection",
            ),
            (
                "object.metadata.name.startsWith(1)",
                "found no matching overload for 'startsWith' applied to 'string.(int)'",
            ),
            ("request.userInfo.nobody == ''", "undefined field 'nobody'"),
        ] {
            let e = check_object(source).unwrap_err();
            assert!(e.contains(says), "{source}: {e}");
        }
        // Both errors, in source order.
        let e = check_object("object.nope == 1 && 1 + 'a' == 2").unwrap_err();
        assert_eq!(e.matches("ERROR:").count(), 2, "{e}");
        assert!(e.find("nope").unwrap() < e.find("'_+_'").unwrap(), "{e}");
    }

    #[test]
    fn accepts_what_kube_accepts() {
        for ok in [
            "object.spec.replicas > 1",
            "object.spec.replicas > 1.5",
            "object.metadata.name.startsWith('a') && size(object.metadata.name) < 10",
            "has(object.spec.template.spec.hostNetwork)",
            "object.spec.template.spec.containers.all(c, c.image.contains(':'))",
            "object.spec.template.spec.containers.map(c, c.name).exists(n, n == 'x')",
            "object.spec.template.spec.containers.filter(c, c.name == 'x').size() == 0",
            "object.metadata.labels['app'] == 'web'",
            "'app' in object.metadata.labels",
            "object.metadata.?labels.orValue({}).size() >= 0",
            "object.metadata.creationTimestamp < timestamp('2020-01-01T00:00:00Z')",
            "params.anything.goes == 3",
            "oldObject == null || object.spec.replicas >= oldObject.spec.replicas",
            "object.spec.template.spec.containers.all(c, c.resources.limits['cpu'] == '1')",
            "object.spec.strategy.rollingUpdate.maxSurge == 1",
            "request.operation == 'CREATE' && request.userInfo.groups.exists(g, g == 'x')",
            "[1, 'a'].size() == 2",
            "int(object.metadata.generation) + 1 > 0",
            "object.metadata.name.lowerAscii().split('-').size() > 0",
            "object.spec.template.spec.containers.exists_one(c, c.name == 'a')",
            "object.spec.template.spec.containers.all(i, c, i >= 0 && c.name != '')",
            "type(object.spec.replicas) == int",
            "object.spec.replicas < 5u && object.spec.replicas in [1, 2, 3]",
            "object.spec.selector.matchLabels == {'a': 'b'}",
            "object.spec.template.metadata.labels.all(k, k.startsWith('a'))",
            "object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
            "duration('1s') < duration('2s') && object.metadata.name > 'a'",
            "object.metadata.annotations[?'x'].orValue('') == 'y'",
            "quantity(object.spec.template.spec.containers[0].resources.limits['cpu']).isLessThan(quantity('2'))",
            "sets.contains(['a'], object.metadata.finalizers)",
            "object.spec.replicas == null ? true : object.spec.replicas % 2 == 1",
        ] {
            assert!(check_object(ok).is_ok(), "{ok}: {:?}", check_object(ok));
        }
        assert_eq!(check_object("object.spec.replicas * 2").unwrap(), "int");
        assert_eq!(
            check_object("object.spec.template.spec.containers.map(c, c.name)").unwrap(),
            "list(string)"
        );
    }
}

#[cfg(test)]
mod crd_rules {
    use super::*;
    use serde_json::json;

    /// Rules of the kind Gateway API and other operators' CRDs carry, on
    /// a list of matches: none is refused.
    #[test]
    fn operator_style_rules_check() {
        let schema = json!({"type": "array", "maxItems": 8, "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "port": {"type": "integer", "format": "int32"},
            "type": {"type": "string", "enum": ["Exact", "PathPrefix", "RegularExpression"]},
            "value": {"type": "string"},
            "weight": {"type": "integer"},
            "headers": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "value": {"type": "string"}}},
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            "timeout": {"type": "string", "format": "duration"},
            "ips": {"type": "array", "items": {"type": "string"}}}}});
        let this = Type::of_json_schema(&schema, false);
        let declared = [("self", this.clone()), ("oldSelf", this)];
        for rule in [
            "self.all(p1, self.exists_one(p2, p1.name == p2.name))",
            "self.size() > 0 ? self[0].name != '' : true",
            "self.filter(f, f.type == 'Exact').size() <= 1",
            "self.all(m, !has(m.port) || (m.port >= 1 && m.port <= 65535))",
            r#"self.all(m, m.type == 'Exact' ? m.value.matches(r"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$") : true)"#,
            "self.all(m, m.type in ['RegularExpression'] || !has(m.value) || m.value.startsWith('/'))",
            "self.all(m, !has(m.headers) || m.headers.all(h, h.name.size() > 0))",
            "self.all(m, !has(m.timeout) || m.timeout <= duration('1h'))",
            "self.all(m, !has(m.ips) || m.ips.all(i, isIP(i) && ip(i).family() == 4))",
            "self.map(m, m.weight).sum() <= 1000 || self.size() == 0",
            "self.exists(m, m.name == 'default') ? self.size() == 1 : true",
            "oldSelf.all(o, self.exists(n, n.name == o.name))",
            "self.all(m, m.name.matches('^[a-z]+$') && url('https://' + m.name).getHost() != '')",
            "self.all(m, format.dns1123Label().validate(m.name).hasValue() == false)",
            "size(self) == size(self.map(m, m.name))",
        ] {
            assert!(check(rule, &declared).is_ok(), "{rule}: {:?}", check(rule, &declared).err());
        }
        // What kube 1.34 does not offer new expressions.
        for (rule, name) in [
            (
                "self.map(m, m.name).distinct().size() == self.size()",
                "distinct",
            ),
            ("self.map(m, m.ips).flatten().size() < 10", "flatten"),
            ("self.sortBy(m, m.name).size() >= 0", "sortBy"),
            ("math.greatest(1, 2) == 2", "math"),
            ("math.abs(-1) == 1", "math"),
            ("lists.range(3).size() == 3", "lists"),
        ] {
            let e = check(rule, &declared).err().unwrap_or_default();
            assert!(
                e.contains(&format!("undeclared reference to '{name}'")),
                "{rule}: {e}"
            );
        }
    }
}
