//! kube's static cost check of `x-kubernetes-validations`: a CRD is
//! refused when a rule's estimated worst-case cost, times the number of
//! places in an object it runs at, exceeds kube's per-rule limit, or when
//! all of one schema's rules together exceed the per-CRD limit — so a
//! rule that loops over an unbounded list of unbounded strings is refused
//! when the CRD is written, not when an object happens to be big.
//!
//! Sizes come from the schema as kube derives them (`maxItems`,
//! `maxLength`, `maxProperties`, else what fits in the largest request
//! at each type's smallest serialized size), and costs follow CEL's cost
//! model (loops cost their size times their body, string functions a
//! tenth of the bytes they traverse, regexes their length). Where this
//! estimate cannot tell, it takes the smaller figure: a CRD kube accepts
//! is never refused here.

use super::definition::Findings;
use crate::status::field_forbidden;
use cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

/// kube's largest request: what an unbounded list, map or string is
/// assumed to fill.
const MAX_REQUEST: u64 = 3 * 1024 * 1024;
/// kube's estimated-cost limit of one rule (times its cardinality).
pub const RULE_LIMIT: u64 = 10_000_000;
/// kube's estimated-cost limit of all rules of one schema.
pub const SCHEMA_LIMIT: u64 = 100_000_000;

/// Checks the rules of one version's schema at `path`
/// (`spec.versions[0].schema.openAPIV3Schema`); `unchanged` when an
/// update keeps the version's schema as it was (kube reports no rule of
/// an unchanged schema, which an older limit may have let in).
pub fn check(schema: &Value, path: &str, unchanged: bool, f: &mut Findings) {
    let mut rules = Vec::new();
    walk(schema, path, Some(1), &mut rules);
    let mut total = 0u64;
    for (rule_path, cost) in &rules {
        total = total.saturating_add(*cost);
        if *cost > RULE_LIMIT && !unchanged {
            f.causes.push(field_forbidden(
                rule_path,
                &exceeds("estimated rule cost", *cost, RULE_LIMIT),
            ));
        }
    }
    if total > SCHEMA_LIMIT && !unchanged {
        let mut expensive: Vec<&(String, u64)> = rules
            .iter()
            .filter(|(_, c)| *c >= SCHEMA_LIMIT / 100)
            .collect();
        expensive.sort_by_key(|r| std::cmp::Reverse(r.1));
        for (rule_path, _) in expensive.into_iter().take(4) {
            f.causes.push(field_forbidden(
                rule_path,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        f.causes.push(field_forbidden(
            path,
            &exceeds(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                SCHEMA_LIMIT,
            ),
        ));
    }
}

fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!("{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

/// Every rule under `node` with its estimated cost times the number of
/// times it can run in one object (`cardinality`; None: unbounded).
fn walk(node: &Value, path: &str, cardinality: Option<u64>, out: &mut Vec<(String, u64)>) {
    let Some(s) = node.as_object() else {
        return;
    };
    if let Some(list) = s.get("x-kubernetes-validations").and_then(Value::as_array) {
        let times = cardinality.unwrap_or_else(|| MAX_REQUEST / (min_size(node) + 1));
        for (i, rule) in list.iter().enumerate() {
            let Some(expr) = rule
                .get("rule")
                .and_then(Value::as_str)
                .and_then(super::cel::parse)
            else {
                continue;
            };
            let cost = Estimator::default().cost(&expr, node);
            out.push((
                format!("{path}.x-kubernetes-validations[{i}].rule"),
                cost.saturating_mul(times),
            ));
        }
    }
    let limit = |key: &str| s.get(key).and_then(Value::as_u64);
    if let Some(Value::Object(props)) = s.get("properties") {
        for (k, v) in props {
            walk(v, &format!("{path}.properties[{k}]"), cardinality, out);
        }
    }
    if let Some(items) = s.get("items") {
        let times = cardinality
            .zip(limit("maxItems"))
            .map(|(c, m)| c.saturating_mul(m));
        walk(items, &format!("{path}.items"), times, out);
    }
    if let Some(values @ Value::Object(_)) = s.get("additionalProperties") {
        let times = cardinality
            .zip(limit("maxProperties"))
            .map(|(c, m)| c.saturating_mul(m));
        walk(values, &format!("{path}.additionalProperties"), times, out);
    }
}

/// What two-variable loops expand to.
use super::cel_comprehensions::{KEYS as TWO_VAR_KEYS, TARGET as TWO_VAR_TARGET};

/// `@t[i]`: a two-variable loop's value.
fn is_two_var_value(e: &IdedExpr) -> bool {
    matches!(&e.expr, Expr::Call(c) if c.func_name == operators::INDEX
        && matches!(c.args.first().map(|a| &a.expr), Some(Expr::Ident(n)) if n == TWO_VAR_TARGET))
}

fn ty(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or("")
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn format(node: &Value) -> &str {
    node.get("format").and_then(Value::as_str).unwrap_or("")
}

/// The fewest bytes a value of the node's type serializes to.
fn min_size(node: &Value) -> u64 {
    if flag(node, "x-kubernetes-int-or-string") {
        return 1;
    }
    match ty(node) {
        "string" => match format(node) {
            "date" => 12,
            "date-time" => 21,
            "duration" => 3,
            _ => 2,
        },
        "boolean" => 4,
        "integer" | "number" => 1,
        "array" => 2,
        "object" => {
            let Some(props) = node.get("properties").and_then(Value::as_object) else {
                return 2;
            };
            let required = node.get("required").and_then(Value::as_array);
            let mut size = 2u64;
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                if let Some(child) = props.get(name).filter(|c| c.get("default").is_none()) {
                    size = size.saturating_add(name.len() as u64 + min_size(child) + 4);
                }
            }
            size
        }
        _ => 1,
    }
}

/// The most elements (lists, maps) or bytes (strings) a value of the
/// node can have; 0 where size means nothing.
fn max_size(node: &Value) -> u64 {
    let limit = |key: &str| node.get(key).and_then(Value::as_u64);
    let unbounded_string = MAX_REQUEST - 2;
    if flag(node, "x-kubernetes-int-or-string") {
        return limit("maxLength").map_or(unbounded_string, |l| l.saturating_mul(4));
    }
    match ty(node) {
        "array" => limit("maxItems").unwrap_or_else(|| {
            let item = node.get("items").map_or(1, min_size);
            (MAX_REQUEST - 2) / (item + 1)
        }),
        "object" if map_values(node).is_some() => limit("maxProperties").unwrap_or_else(|| {
            let value = map_values(node).map_or(1, min_size);
            (MAX_REQUEST - 2) / (value + 6)
        }),
        "string" => match format(node) {
            "byte" => limit("maxLength").unwrap_or(unbounded_string),
            "duration" | "date-time" => 32,
            "date" => 12,
            _ => match limit("maxLength") {
                Some(l) => l.saturating_mul(4),
                None => match node.get("enum").and_then(Value::as_array) {
                    Some(values) => values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as u64)
                        .max()
                        .unwrap_or(0),
                    None => unbounded_string,
                },
            },
        },
        _ => 0,
    }
}

/// A map's value schema (`additionalProperties` with a schema).
fn map_values(node: &Value) -> Option<&Value> {
    node.get("additionalProperties").filter(|v| v.is_object())
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    String,
    List,
    Map,
    Object,
    Other,
}

/// What the estimate knows of a value: its greatest size and, when it
/// is a part of `self`, its schema.
#[derive(Clone, Copy)]
struct Shape<'s> {
    size: u64,
    kind: Kind,
    node: Option<&'s Value>,
}

impl<'s> Shape<'s> {
    fn of(node: &'s Value) -> Self {
        let kind = match ty(node) {
            // Timestamps and durations compare and add at unit cost.
            "string" if matches!(format(node), "date" | "date-time" | "duration") => Kind::Other,
            "string" => Kind::String,
            "array" => Kind::List,
            "object" if map_values(node).is_some() => Kind::Map,
            "object" => Kind::Object,
            _ => Kind::Other,
        };
        Shape {
            size: max_size(node),
            kind,
            node: Some(node),
        }
    }

    fn scalar(size: u64) -> Self {
        Shape {
            size,
            kind: Kind::Other,
            node: None,
        }
    }

    fn sized(size: u64, kind: Kind) -> Self {
        Shape {
            size,
            kind,
            node: None,
        }
    }

    /// An element of a list, or a value of a map.
    fn element(self) -> Shape<'s> {
        let node = self.node.and_then(|n| match self.kind {
            Kind::List => n.get("items"),
            Kind::Map => map_values(n),
            _ => None,
        });
        node.map_or(Shape::scalar(0), Shape::of)
    }

    /// What a loop over this value binds: list elements, map keys.
    fn iterated(self) -> Shape<'s> {
        match self.kind {
            Kind::List => self.element(),
            _ => Shape::sized(0, Kind::String),
        }
    }

    fn field(self, name: &str) -> Shape<'s> {
        let node = self.node.and_then(|n| match self.kind {
            Kind::Object => n.get("properties").and_then(|p| p.get(name)),
            Kind::Map => map_values(n),
            _ => None,
        });
        node.map_or(Shape::scalar(0), Shape::of)
    }
}

/// A tenth (or another factor) of a size, rounded up, as CEL charges
/// traversals.
fn factor(size: u64, f: f64) -> u64 {
    (size as f64 * f).ceil() as u64
}

#[derive(Default)]
struct Estimator<'s> {
    /// Variables in scope, innermost last.
    scope: Vec<(String, Shape<'s>)>,
}

impl<'s> Estimator<'s> {
    fn bound(&self, name: &str) -> bool {
        self.scope.iter().any(|(n, _)| n == name)
    }

    fn cost(&mut self, e: &IdedExpr, node: &'s Value) -> u64 {
        let root = Shape::of(node);
        self.scope.push(("self".into(), root));
        self.scope.push(("oldSelf".into(), root));
        self.estimate(e).0
    }

    /// (cost, shape of the result).
    fn estimate(&mut self, e: &IdedExpr) -> (u64, Shape<'s>) {
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => {
                // CEL sizes strings in characters.
                (
                    0,
                    Shape::sized(s.inner().chars().count() as u64, Kind::String),
                )
            }
            Expr::Literal(_) => (0, Shape::scalar(1)),
            Expr::Ident(name) => {
                let shape = self
                    .scope
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map_or(Shape::scalar(0), |(_, s)| *s);
                (1, shape)
            }
            Expr::Select(s) => {
                let (cost, operand) = self.estimate(&s.operand);
                let hop = u64::from(!s.test && matches!(operand.kind, Kind::Object | Kind::Map));
                (cost.saturating_add(hop), operand.field(&s.field))
            }
            Expr::List(l) => {
                let cost = l
                    .elements
                    .iter()
                    .map(|x| self.estimate(x).0)
                    .fold(10, u64::saturating_add);
                (cost, Shape::sized(l.elements.len() as u64, Kind::List))
            }
            Expr::Map(m) => {
                let mut cost = 30u64;
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        cost = cost
                            .saturating_add(self.estimate(&me.key).0)
                            .saturating_add(self.estimate(&me.value).0);
                    }
                }
                (cost, Shape::sized(m.entries.len() as u64, Kind::Map))
            }
            Expr::Struct(s) => {
                let mut cost = 40u64;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost = cost.saturating_add(self.estimate(&f.value).0);
                    }
                }
                (cost, Shape::scalar(1))
            }
            Expr::Comprehension(c) => {
                let (init_cost, init) = self.estimate(&c.accu_init);
                let binding = matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty());
                if binding {
                    // A variable binding: nothing to loop over. The value
                    // of a two-variable loop (`@t[i]`) is kube's loop
                    // variable, at no cost.
                    let init_cost = if is_two_var_value(&c.accu_init) {
                        0
                    } else {
                        init_cost
                    };
                    self.scope.push((c.accu_var.clone(), init));
                    let (result_cost, result) = self.estimate(&c.result);
                    self.scope.pop();
                    return (init_cost.saturating_add(result_cost), result);
                }
                let (range_cost, range) = self.estimate(&c.iter_range);
                let n = range.size;
                let accumulated = match init.kind {
                    Kind::List | Kind::Map => Shape::sized(n, init.kind),
                    _ => init,
                };
                self.scope.push((c.iter_var.clone(), range.iterated()));
                self.scope.push((c.accu_var.clone(), accumulated));
                let (cond, _) = self.estimate(&c.loop_cond);
                let (step, _) = self.estimate(&c.loop_step);
                let (result_cost, result) = self.estimate(&c.result);
                self.scope.pop();
                self.scope.pop();
                let cost = range_cost
                    .saturating_add(init_cost)
                    .saturating_add(result_cost)
                    .saturating_add(n.saturating_mul(cond.saturating_add(step)));
                (cost, result)
            }
            Expr::Call(call) => self.call(&call.func_name, call.target.as_deref(), &call.args),
            Expr::Unspecified => (0, Shape::scalar(0)),
        }
    }

    fn call(
        &mut self,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> (u64, Shape<'s>) {
        if name == operators::CONDITIONAL && args.len() == 3 {
            let (c, _) = self.estimate(&args[0]);
            let (a, sa) = self.estimate(&args[1]);
            let (b, sb) = self.estimate(&args[2]);
            let shape = if sa.size >= sb.size { sa } else { sb };
            return (c.saturating_add(a.max(b)), shape);
        }
        // `format.named(..)`, `ip.isCanonical(..)`, `sets.contains(..)`:
        // a library's namespace, not a receiver (and not charged).
        const NAMESPACES: [&str; 6] = ["format", "ip", "sets", "optional", "strings", "lists"];
        let namespace = target.and_then(|t| match &t.expr {
            Expr::Ident(n) if NAMESPACES.contains(&n.as_str()) && !self.bound(n) => {
                Some(n.as_str())
            }
            _ => None,
        });
        let qualified;
        let (name, target) = match namespace {
            Some(ns) => {
                qualified = format!("{ns}.{name}");
                (qualified.as_str(), None)
            }
            None => (name, target),
        };
        if name == TWO_VAR_KEYS {
            // The expansion of a two-variable loop: its range is the bound
            // target's indices or keys, at no cost kube would charge.
            let (_, over) = args
                .first()
                .map_or((0, Shape::scalar(0)), |a| self.estimate(a));
            return (
                0,
                Shape {
                    kind: Kind::List,
                    node: None,
                    ..over
                },
            );
        }
        let this = target.map(|t| self.estimate(t));
        let given: Vec<(u64, Shape<'s>)> = args.iter().map(|a| self.estimate(a)).collect();
        let base = this
            .iter()
            .chain(&given)
            .map(|(c, _)| *c)
            .fold(0u64, u64::saturating_add);
        // The receiver, or a global function's first argument.
        let subject = this.or_else(|| given.first().copied()).map(|(_, s)| s);
        let arg = |i: usize| {
            let i = if this.is_some() { i } else { i + 1 };
            given.get(i).map(|(_, s)| *s)
        };
        let size_of = |s: Option<Shape<'s>>| s.map_or(0, |s| s.size);
        let strings = |s: Option<Shape<'s>>| s.is_some_and(|s| s.kind == Kind::String);
        let (own, shape): (u64, Shape<'s>) = match name {
            operators::LOGICAL_AND | operators::LOGICAL_OR => (0, Shape::scalar(1)),
            operators::EQUALS | operators::NOT_EQUALS => {
                let l = given.first().map_or(0, |(_, s)| s.size);
                let r = given.get(1).map_or(0, |(_, s)| s.size);
                (factor(l.min(r), 0.1), Shape::scalar(1))
            }
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => match (given.first(), given.get(1)) {
                (Some((_, l)), Some((_, r)))
                    if l.kind == Kind::String && r.kind == Kind::String =>
                {
                    (factor(l.size.min(r.size), 0.1), Shape::scalar(1))
                }
                _ => (1, Shape::scalar(1)),
            },
            operators::ADD => match (given.first(), given.get(1)) {
                (Some((_, l)), Some((_, r)))
                    if l.kind == Kind::String || r.kind == Kind::String =>
                {
                    let size = l.size.saturating_add(r.size);
                    (factor(size, 0.1), Shape::sized(size, Kind::String))
                }
                (Some((_, l)), Some((_, r))) if l.kind == Kind::List || r.kind == Kind::List => {
                    let size = l.size.saturating_add(r.size);
                    let mut shape = Shape::sized(size, Kind::List);
                    shape.node = l.node.or(r.node);
                    (1, shape)
                }
                _ => (1, Shape::scalar(1)),
            },
            operators::IN => match given.get(1) {
                Some((_, r)) if r.kind == Kind::List => (r.size, Shape::scalar(1)),
                _ => (1, Shape::scalar(1)),
            },
            operators::INDEX => (
                1,
                given.first().map_or(Shape::scalar(0), |(_, s)| s.element()),
            ),
            "startsWith" | "endsWith" => (factor(size_of(arg(0)), 0.1), Shape::scalar(1)),
            "contains" if strings(subject) => (
                factor(size_of(subject), 0.1).saturating_mul(factor(size_of(arg(0)), 0.1)),
                Shape::scalar(1),
            ),
            "matches" | "find" | "findAll" => (
                factor(size_of(subject).saturating_add(1), 0.1)
                    .saturating_mul(factor(size_of(arg(0)), 0.25)),
                Shape::sized(size_of(subject), Kind::String),
            ),
            "lowerAscii" | "upperAscii" | "substring" | "trim" => (
                factor(size_of(subject), 0.1),
                Shape::sized(size_of(subject), Kind::String),
            ),
            "split"
                if matches!(
                    args.get(1).map(|a| &a.expr),
                    Some(Expr::Literal(LiteralValue::Int(_)))
                ) =>
            {
                let limit = match args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(n))) => {
                        u64::try_from(*n.inner()).unwrap_or(0)
                    }
                    _ => 0,
                };
                (
                    factor(size_of(subject), 0.2),
                    Shape::sized(limit, Kind::List),
                )
            }
            "replace" | "split" => (
                factor(size_of(subject), 0.2),
                Shape::sized(size_of(subject), Kind::String),
            ),
            "join" => {
                let list = subject.unwrap_or(Shape::scalar(0));
                let n = list.size;
                let each = list.element().size;
                let sep = size_of(arg(0));
                let size = n
                    .saturating_mul(each)
                    .saturating_add(sep.saturating_mul(n.saturating_sub(1)));
                (factor(size, 0.1), Shape::sized(size, Kind::String))
            }
            "isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf" => match subject {
                Some(s) if s.kind == Kind::List => {
                    let each = s.element();
                    let per = 1 + if each.kind == Kind::String {
                        factor(each.size, 0.1)
                    } else {
                        0
                    };
                    (s.size.saturating_mul(per), Shape::scalar(1))
                }
                Some(s) if s.kind == Kind::String => (factor(s.size, 0.1), Shape::scalar(1)),
                _ => (1, Shape::scalar(1)),
            },
            "url" | "quantity" | "isQuantity" | "semver" | "isSemver" | "cidr" | "isIP"
            | "isCIDR" => (
                factor(size_of(given.first().map(|(_, s)| *s)), 0.1),
                Shape::scalar(1),
            ),
            "ip" if this.is_none() => (
                factor(size_of(given.first().map(|(_, s)| *s)), 0.1),
                Shape::scalar(1),
            ),
            "ip.isCanonical" => (
                factor(size_of(given.first().map(|(_, s)| *s)), 0.2),
                Shape::scalar(1),
            ),
            "sets.contains" | "sets.intersects" | "sets.equivalent" => {
                let a = given.first().map_or(0, |(_, s)| s.size);
                let b = given.get(1).map_or(0, |(_, s)| s.size);
                let times = if name == "sets.equivalent" { 2 } else { 1 };
                (
                    a.saturating_mul(b).saturating_mul(times).saturating_add(1),
                    Shape::scalar(1),
                )
            }
            "validate" => (factor(factor(size_of(arg(0)), 0.1), 32.0), Shape::scalar(1)),
            _ => (1, Shape::scalar(1)),
        };
        (base.saturating_add(own), shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cost(rule: &str, node: Value) -> u64 {
        let expr = super::super::cel::parse(rule).expect("compiles");
        Estimator::default().cost(&expr, &node)
    }

    /// The figures kube's own estimator gives for the same rules.
    #[test]
    fn estimates_match_kubes_model() {
        let unbounded_strings = json!({"type": "array", "items": {"type": "string"}});
        // 3145726 / 3 elements, each `all` step 3 + the predicate.
        let n = (MAX_REQUEST - 2) / 3;
        assert_eq!(
            cost("self.all(x, x == 'a')", unbounded_strings.clone()),
            1 + 1 + n * (3 + 2)
        );
        let bounded = json!({"type": "array", "maxItems": 10,
            "items": {"type": "string", "maxLength": 5}});
        // size 10; each step 3 + (1 ident + 0 literal + ceil(min(20,1)*0.1)).
        assert_eq!(
            cost("self.all(x, x == 'a')", bounded.clone()),
            2 + 10 * (3 + 2)
        );
        assert_eq!(cost("self.size() <= 10", bounded), 1 + 1 + 1);
        // matches: ceil((20+1)*0.1) * ceil(3*0.25).
        let s = json!({"type": "string", "maxLength": 5});
        assert_eq!(cost("self.matches('a+b')", s), 1 + 3);
    }

    #[test]
    fn unbounded_rules_are_refused_with_kubes_words() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]},
                "small": {"type": "array", "maxItems": 4,
                    "items": {"type": "string", "maxLength": 10},
                    "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]}}}}});
        let mut f = Findings::default();
        check(&schema, "spec.validation.openAPIV3Schema", false, &mut f);
        let text: Vec<String> = f
            .causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(text.len(), 3, "{text:?}");
        assert!(text[0].starts_with(
            "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule"
        ), "{text:?}");
        assert!(
            text[1].contains("contributed to estimated rule cost total exceeding cost limit"),
            "{text:?}"
        );
        assert!(text[2].starts_with("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of"), "{text:?}");
        let mut f = Findings::default();
        check(&schema, "spec.validation.openAPIV3Schema", true, &mut f);
        assert!(
            f.causes.is_empty(),
            "an unchanged schema is not checked again"
        );
    }

    /// Estimates kube would not exceed: timestamps compare at unit cost,
    /// a split with a literal limit has that many parts, a library's
    /// namespace is not charged, and a two-variable loop's value is free.
    #[test]
    fn estimates_never_exceed_kubes_in_these_cases() {
        let schema = json!({"type": "object", "properties": {"items": {"type": "array",
            "items": {"type": "object", "properties": {
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "n": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.start < self.end && self.n == 1"}]}}}});
        let mut f = Findings::default();
        check(&schema, "s", false, &mut f);
        assert!(
            f.causes.is_empty(),
            "kube: 7 x 1,048,576 = 7.3M: {:?}",
            f.causes
        );
        let s = json!({"type": "string"});
        // ceil(3145726 * 0.2) for the split, 2 parts of 6 each.
        assert_eq!(
            cost("self.split('/', 2).all(p, p.size() > 0)", s.clone()),
            1 + 629_146 + 1 + 2 * 6
        );
        assert_eq!(
            cost("format.named('dns1123Label').hasValue()", s.clone()),
            1 + 1
        );
        let bounded = json!({"type": "array", "maxItems": 1, "items": {"type": "integer"}});
        assert_eq!(
            cost("self.all(i, v, v > 0)", bounded.clone()),
            cost("self.all(v, v > 0)", bounded),
            "the two-variable form costs what the one-variable one does"
        );
    }

    /// A rule under an unbounded list runs once per item: its cost is
    /// multiplied by how many items fit in a request.
    #[test]
    fn rules_under_unbounded_lists_count_once_per_item() {
        let schema = json!({"type": "object", "properties": {"items": {"type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.name.startsWith('a')"}]}}}});
        let mut rules = Vec::new();
        walk(&schema, "s", Some(1), &mut rules);
        assert_eq!(rules.len(), 1);
        // startsWith costs ceil(1*0.1) = 1; self 1, .name 1: 3 per item,
        // items of at least 2 bytes ("{}"): 3 MiB / 3.
        assert_eq!(rules[0].1, 3 * (MAX_REQUEST / 3));
        assert_eq!(
            exceeds("x", 15_000_000, RULE_LIMIT),
            "x exceeds budget by factor of 1.5x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(exceeds("x", 12_000_000, RULE_LIMIT).contains("factor of 1.200000x"));
    }
}
