//! A CRD's `openAPIV3Schema` parsed once into the tree every custom
//! resource is validated, pruned and defaulted against (kube's structural
//! schema): types and extensions per node, value validations beside them,
//! and the CEL rules compiled where they are declared.
//!
//! Parsing is lenient — whatever a stored CRD carries parses — because
//! the CRD's own validation (`definition`) has already refused schemas
//! kube refuses; a node that names no type accepts any value.

use super::cel::RuleSet;
use indexmap::IndexMap;
use serde_json::{Map, Value};

/// What JSON type a node holds (`type:`; `Any` when unset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Any,
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl Type {
    fn parse(s: Option<&str>) -> Type {
        match s {
            Some("object") => Type::Object,
            Some("array") => Type::Array,
            Some("string") => Type::String,
            Some("integer") => Type::Integer,
            Some("number") => Type::Number,
            Some("boolean") => Type::Boolean,
            _ => Type::Any,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Type::Any => "",
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
        }
    }
}

/// What keys of an object beyond `properties` hold.
#[derive(Debug, Clone, Default)]
pub enum Additional {
    /// No `additionalProperties`: unknown keys are pruned (unless kept).
    #[default]
    Unset,
    /// `additionalProperties: false`.
    Denied,
    /// `additionalProperties: true` (any value, kept).
    Any,
    Schema(Box<Structural>),
}

/// A node of the schema.
#[derive(Debug, Clone, Default)]
pub struct Structural {
    pub ty: Option<Type>,
    pub format: Option<Box<str>>,
    pub nullable: bool,
    pub default: Option<Value>,
    /// In schema order; looked up for every field of every object written
    /// (hashed with hashbrown's fast default, not SipHash: the keys are
    /// the CRD's own).
    pub properties: IndexMap<Box<str>, Structural, hashbrown::DefaultHashBuilder>,
    pub items: Option<Box<Structural>>,
    pub additional: Additional,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub int_or_string: bool,
    pub list_type: Option<Box<str>>,
    pub list_map_keys: Vec<Box<str>>,
    pub checks: Checks,
    /// This node's `x-kubernetes-validations`, compiled.
    pub rules: Option<Box<RuleSet>>,
    /// Rules here or below (decided once: every write asks, per node).
    rules_below: bool,
    /// Defaults here or below.
    defaults_below: bool,
}

/// The value validations of a node (kube's `ValueValidation`).
#[derive(Debug, Clone, Default)]
pub struct Checks {
    pub enumeration: Vec<Value>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub pattern: Option<Pattern>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub unique_items: bool,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
    pub required: Vec<Box<str>>,
    pub all_of: Vec<Structural>,
    pub any_of: Vec<Structural>,
    pub one_of: Vec<Structural>,
    pub not: Option<Box<Structural>>,
}

/// A `pattern`, kept with its source for messages. A pattern the regex
/// engine cannot take was refused with the CRD; one that slips through
/// matches nothing rather than everything.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: Box<str>,
    pub regex: Option<regex::Regex>,
}

impl Structural {
    /// Parses a schema node. `rules` compiles `x-kubernetes-validations`
    /// (errors are the CRD validation's business; here a rule that does
    /// not compile is kept as one that always fails with its error).
    pub fn parse(v: &Value) -> Structural {
        let Some(s) = v.as_object() else {
            return Structural::default();
        };
        let mut out = Structural {
            ty: s
                .get("type")
                .and_then(Value::as_str)
                .map(|t| Type::parse(Some(t))),
            format: str_of(s, "format").map(Box::from),
            nullable: bool_of(s, "nullable"),
            default: s.get("default").cloned(),
            preserve_unknown: bool_of(s, "x-kubernetes-preserve-unknown-fields"),
            embedded: bool_of(s, "x-kubernetes-embedded-resource"),
            int_or_string: bool_of(s, "x-kubernetes-int-or-string"),
            list_type: str_of(s, "x-kubernetes-list-type").map(Box::from),
            list_map_keys: boxed(s.get("x-kubernetes-list-map-keys")),
            checks: Checks::parse(s),
            ..Structural::default()
        };
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            out.properties = props
                .iter()
                .map(|(k, v)| (Box::from(k.as_str()), Structural::parse(v)))
                .collect();
        }
        out.items = match s.get("items") {
            Some(Value::Array(a)) => a.first().map(|i| Box::new(Structural::parse(i))),
            Some(i) => Some(Box::new(Structural::parse(i))),
            None => None,
        };
        out.additional = match s.get("additionalProperties") {
            Some(Value::Bool(false)) => Additional::Denied,
            Some(Value::Bool(true)) => Additional::Any,
            Some(a @ Value::Object(_)) => Additional::Schema(Box::new(Structural::parse(a))),
            _ => Additional::Unset,
        };
        if let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) {
            if !rules.is_empty() {
                out.rules = Some(Box::new(RuleSet::compile(rules, &out)));
            }
        }
        let children = || {
            out.properties
                .values()
                .chain(out.items.as_deref())
                .chain(match &out.additional {
                    Additional::Schema(s) => Some(&**s),
                    _ => None,
                })
        };
        let rules_below = out.rules.is_some() || children().any(|c| c.rules_below);
        let defaults_below = out.default.is_some() || children().any(|c| c.defaults_below);
        out.rules_below = rules_below;
        out.defaults_below = defaults_below;
        out
    }

    /// The schema of an object member `key`: a property or the
    /// additionalProperties schema.
    pub fn member(&self, key: &str) -> Option<&Structural> {
        self.properties.get(key).or(match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        })
    }

    /// The item of `old` (this list's previous value) an update's `item`
    /// corresponds to: for a map list, the one with the same keys; other
    /// lists correlate nothing (kube's ratcheting does the same).
    pub fn correlated<'a>(&self, old: Option<&'a Value>, item: &Value) -> Option<&'a Value> {
        if self.list_type.as_deref() != Some("map") {
            return None;
        }
        old?.as_array()?
            .iter()
            .find(|o| same_keys(o, item, &self.list_map_keys))
    }

    /// Whether a node (or anything under it) carries a default.
    pub fn has_defaults(&self) -> bool {
        self.defaults_below
    }

    /// Whether a node (or anything under it) carries CEL rules.
    pub fn has_rules(&self) -> bool {
        self.rules_below
    }
}

impl Checks {
    fn parse(s: &Map<String, Value>) -> Checks {
        let sub = |key: &str| -> Vec<Structural> {
            s.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Structural::parse).collect())
                .unwrap_or_default()
        };
        Checks {
            enumeration: s
                .get("enum")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            maximum: s.get("maximum").and_then(Value::as_f64),
            exclusive_maximum: bool_of(s, "exclusiveMaximum"),
            minimum: s.get("minimum").and_then(Value::as_f64),
            exclusive_minimum: bool_of(s, "exclusiveMinimum"),
            multiple_of: s.get("multipleOf").and_then(Value::as_f64),
            max_length: s.get("maxLength").and_then(Value::as_u64),
            min_length: s.get("minLength").and_then(Value::as_u64),
            pattern: str_of(s, "pattern").map(|p| Pattern {
                source: Box::from(p),
                regex: regex::Regex::new(p).ok(),
            }),
            max_items: s.get("maxItems").and_then(Value::as_u64),
            min_items: s.get("minItems").and_then(Value::as_u64),
            unique_items: bool_of(s, "uniqueItems"),
            max_properties: s.get("maxProperties").and_then(Value::as_u64),
            min_properties: s.get("minProperties").and_then(Value::as_u64),
            required: boxed(s.get("required")),
            all_of: sub("allOf"),
            any_of: sub("anyOf"),
            one_of: sub("oneOf"),
            not: s.get("not").map(|n| Box::new(Structural::parse(n))),
        }
    }
}

/// Two map-list items with the same key fields.
pub fn same_keys(a: &Value, b: &Value, keys: &[Box<str>]) -> bool {
    keys.iter().all(|k| a.get(&**k) == b.get(&**k))
}

fn str_of<'a>(s: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    s.get(key).and_then(Value::as_str)
}

fn bool_of(s: &Map<String, Value>, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn boxed(v: Option<&Value>) -> Vec<Box<str>> {
    super::str_list(v).map(Box::from).collect()
}
