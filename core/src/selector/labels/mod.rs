//! Label selectors with kube's string syntax, matching semantics and
//! error texts.
//!
//! Parse errors are returned as the bare message kube produces; the HTTP
//! layer wraps them into a 400 `BadRequest` exactly as kube does.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;

use serde_json::Value;

use crate::status::{aggregate_messages, go_quote};
use crate::validation::{is_qualified_name, is_valid_label_value};

mod parse;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

/// Anything labels can be looked up in. A missing key and a key with an
/// empty value are different things to label selectors.
pub trait Labels {
    fn get(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<&str> {
        BTreeMap::get(self, key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn get(&self, key: &str) -> Option<&str> {
        HashMap::get(self, key).map(String::as_str)
    }
}

/// An object's `metadata.labels` as JSON (values that are not strings
/// are no labels).
impl Labels for serde_json::Map<String, Value> {
    fn get(&self, key: &str) -> Option<&str> {
        serde_json::Map::get(self, key).and_then(Value::as_str)
    }
}

/// Pairs in any order; the first pair with the key wins.
impl Labels for [(String, String)] {
    fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl Labels for Vec<(String, String)> {
    fn get(&self, key: &str) -> Option<&str> {
        Labels::get(self.as_slice(), key)
    }
}

/// kube's `selection.Operator` as far as label selectors use it. `=` and
/// `==` mean the same but are kept apart so a selector prints back as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

impl Operator {
    /// kube's spelling of the operator (`selection.Operator` values).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One AND-ed term. `values` are kept sorted and de-duplicated so that two
/// selectors meaning the same thing compare equal and print the same.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub op: Operator,
    pub values: Vec<String>,
}

/// Go's `%#v` of a `[]string`, which kube prints for bad value lists.
fn go_string_slice(vals: &[String]) -> String {
    if vals.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = vals.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

impl Requirement {
    /// kube's `NewRequirement`: validates key, operator arity, integer
    /// operands and label values, and reports every problem in kube's
    /// aggregated `field.ErrorList` form (paths relative to an unnamed root).
    pub fn new(key: &str, op: Operator, values: Vec<String>) -> Result<Self, String> {
        let mut errs: Vec<String> = Vec::new();
        let key_errs = is_qualified_name(key);
        if !key_errs.is_empty() {
            errs.push(format!(
                "key: Invalid value: {}: {}",
                go_quote(key),
                key_errs.join("; ")
            ));
        }
        let bad_list = |detail: &str| {
            format!(
                "values: Invalid value: {}: {detail}",
                go_string_slice(&values)
            )
        };
        match op {
            Operator::In | Operator::NotIn if values.is_empty() => {
                errs.push(bad_list(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(bad_list(
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(bad_list(
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(bad_list(
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(format!(
                            "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                            go_quote(v)
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = is_valid_label_value(v);
            if !value_errs.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    go_quote(v),
                    value_errs.join("; ")
                ));
            }
        }
        if let Some(msg) = aggregate_messages(&errs) {
            return Err(msg);
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// kube's `Requirement.Matches`: negative operators match when the key
    /// is absent, and `gt`/`lt` never match a non-integer label.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let got = labels.get(&self.key);
        match self.op {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                got.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => got.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => got.is_some(),
            Operator::DoesNotExist => got.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(v), [bound]) = (got, self.values.as_slice()) else {
                    return false;
                };
                match (v.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(have), Ok(want)) if self.op == Operator::GreaterThan => have > want,
                    (Ok(have), Ok(want)) => have < want,
                    _ => false,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, open, close) = match self.op {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::In => (" in ", "(", ")"),
            Operator::NotIn => (" notin ", "(", ")"),
            Operator::GreaterThan => (">", "", ""),
            Operator::LessThan => ("<", "", ""),
            other => (other.as_str(), "", ""),
        };
        f.write_str(op)?;
        f.write_str(open)?;
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        f.write_str(close)
    }
}

/// A parsed label selector: the AND of its requirements, or — only from a
/// `null` `metav1.LabelSelector` — a selector that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// Parses kube's selector syntax. Requirements come out sorted by key
    /// so equal selectors compare and print identically.
    pub fn parse(s: &str) -> Result<Self, String> {
        let requirements = parse::parse(s)?;
        Ok(Self::from_requirements(requirements))
    }

    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            nothing: false,
        }
    }

    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// What kube turns a `null` `metav1.LabelSelector` into.
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// True when the selector does not restrict anything (kube's `Empty`).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The single value `key` must have, if the selector pins it — lets
    /// callers use a label index instead of a scan (kube's
    /// `RequiresExactMatch`).
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.op, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }

    /// kube's `LabelSelectorAsSelector` for a JSON `metav1.LabelSelector`:
    /// `null` selects nothing, `{}` selects everything.
    pub fn from_metav1(v: &Value) -> Result<Self, String> {
        let obj = match v {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(o) => o,
            _ => return Err("label selector must be an object".to_string()),
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    let Some(Value::String(val)) = m.get(k) else {
                        return Err(format!("matchLabels[{k}] must be a string"));
                    };
                    requirements.push(Requirement::new(k, Operator::Equals, vec![val.clone()])?);
                }
            }
            Some(_) => return Err("matchLabels must be an object".to_string()),
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for e in exprs {
                    requirements.push(expression_requirement(e)?);
                }
            }
            Some(_) => return Err("matchExpressions must be an array".to_string()),
        }
        Ok(Self::from_requirements(requirements))
    }
}

fn string_field<'a>(o: &'a serde_json::Map<String, Value>, name: &str) -> Result<&'a str, String> {
    match o.get(name) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("matchExpressions[].{name} must be a string")),
    }
}

fn expression_requirement(e: &Value) -> Result<Requirement, String> {
    let Value::Object(o) = e else {
        return Err("matchExpressions entries must be objects".to_string());
    };
    let key = string_field(o, "key")?;
    let op_name = string_field(o, "operator")?;
    let op = match op_name {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(format!(
                "{} is not a valid label selector operator",
                go_quote(other)
            ))
        }
    };
    let values = match o.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err("matchExpressions[].values must be strings".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("matchExpressions[].values must be an array".to_string()),
    };
    Requirement::new(key, op, values)
}

/// kube's `String()`: requirements joined by `,`, values sorted, which
/// parses back to an equal selector.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}
