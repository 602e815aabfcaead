//! CEL expressions outside a CRD's schema: admission webhooks'
//! `matchConditions` (and the admission policies that share their
//! environment). Each is compiled once, when its configuration is read,
//! against the variables its kind declares (`object`, `oldObject`,
//! `request`, …), and evaluated over JSON values with the same library,
//! loop counting and cost limit as `x-kubernetes-validations` rules.

use super::cel::{base, count_loops, env, error_text, loop_variables, metered, to_val};
use cel::common::ast::{Expr, IdedExpr};
use cel::common::types::CelNull;
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, Value as Cel};
use serde_json::Value;
use std::sync::Arc;

/// kube's runtime cost limit for one object's match conditions.
pub const MATCH_CONDITIONS_BUDGET: u64 = 7_000_000;

/// A compiled expression.
#[derive(Clone)]
pub struct Expression {
    source: Arc<str>,
    /// As parsed (variables substituted), for other expressions that
    /// read it as a variable.
    raw: Arc<IdedExpr>,
    /// With every loop step counted.
    tree: Arc<IdedExpr>,
    /// The declared variables it reads (those of defined expressions it
    /// reads included), so callers bind only what is read.
    reads: Arc<[Box<str>]>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expression({:?})", self.source)
    }
}

/// Namespaces of library functions (`ip.isCanonical`, `sets.contains`, …),
/// which the parser reports as variables.
const LIBRARY_NAMESPACES: &[&str] = &["ip", "format", "sets", "optional", "strings", "jsonpatch"];

impl Expression {
    /// Compiles `source`, which may read only `variables` (and the
    /// library's namespaces); the error is worded as kube's compiler
    /// words it.
    pub fn compile(source: &str, variables: &[&str]) -> Result<Self, String> {
        Self::compile_with(source, variables, &[])
    }

    /// Compiles `source`, which may also read the `defined` expressions
    /// as `variables.<name>` (admission policies' `variables`): each such
    /// read is the defined expression itself, evaluated where it is read.
    pub fn compile_with(
        source: &str,
        variables: &[&str],
        defined: &[(String, Expression)],
    ) -> Result<Self, String> {
        let program = env()
            .compile(source)
            .map_err(|e| format!("compilation failed: {e}"))?;
        let mut bound = Vec::new();
        loop_variables(program.expression(), &mut bound);
        for v in program.references().variables() {
            let known = variables.contains(&v)
                || LIBRARY_NAMESPACES.contains(&v)
                || bound.iter().any(|b| b == v)
                || (v == "variables" && !defined.is_empty());
            if !known {
                return Err(format!(
                    "compilation failed: ERROR: <input>:1:1: undeclared reference to '{v}' (in container '')"
                ));
            }
        }
        let refs = program.references();
        let mut reads: Vec<Box<str>> = variables
            .iter()
            .filter(|v| refs.has_variable(v))
            .map(|v| Box::from(*v))
            .collect();
        let mut raw = program.expression().clone();
        super::cel_objects::structs_to_maps(&mut raw);
        super::cel_authz::rewrite(&mut raw);
        if !defined.is_empty() {
            let mut used = Vec::new();
            substitute(&mut raw, defined, &mut used)?;
            for e in used {
                for r in e.reads.iter() {
                    if !reads.contains(r) {
                        reads.push(r.clone());
                    }
                }
            }
        }
        let mut tree = raw.clone();
        count_loops(&mut tree);
        let mut next_id = u64::MAX / 2;
        cheaper(&mut tree, &mut next_id);
        Ok(Self {
            source: source.into(),
            raw: Arc::new(raw),
            tree: Arc::new(tree),
            reads: reads.into(),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// What the expression reads of the variable `name`.
    pub fn access(&self, name: &str) -> super::access::Access {
        super::access::Access::of(&self.raw, name)
    }

    /// Whether the expression reads the declared variable `name`.
    pub fn reads(&self, name: &str) -> bool {
        self.reads.iter().any(|r| &**r == name)
    }

    /// Evaluates with `vars`, spending at most `*budget` cost units (what
    /// is spent is taken off).
    pub fn evaluate(&self, vars: &Variables<'_>, budget: &mut u64) -> Result<Cel, String> {
        if *budget == 0 {
            return Err("operation cancelled: actual cost limit exceeded".into());
        }
        let base: &Context<'_, '_> = base();
        let mut ctx = base.new_inner_scope();
        ctx.set_variable_resolver(vars);
        let (result, used) = metered(*budget, || Cel::resolve(&self.tree, &ctx));
        *budget -= used;
        if *budget == 0 {
            return Err("operation cancelled: actual cost limit exceeded".into());
        }
        result.map_err(|e| error_text(&e))
    }

    /// Evaluates an expression that answers a string or null (audit
    /// annotations, messages); another type is an error naming it.
    pub fn evaluate_text(
        &self,
        vars: &Variables<'_>,
        budget: &mut u64,
    ) -> Result<Option<String>, String> {
        match self.evaluate(vars, budget)? {
            Cel::String(s) => Ok(Some(s.to_string())),
            Cel::Null => Ok(None),
            other => Err(format!("{other:?}")),
        }
    }

    /// Evaluates an expression whose result is data (a patch): as JSON.
    pub fn evaluate_json(&self, vars: &Variables<'_>, budget: &mut u64) -> Result<Value, String> {
        super::cel_objects::to_json(&self.evaluate(vars, budget)?)
    }

    /// Evaluates an expression that must answer a boolean.
    pub fn evaluate_bool(&self, vars: &Variables<'_>, budget: &mut u64) -> Result<bool, String> {
        match self.evaluate(vars, budget)? {
            Cel::Bool(b) => Ok(b),
            other => Err(format!(
                "expression {:?} resulted in a non-boolean value: {other:?}",
                &*self.source
            )),
        }
    }
}

/// Rewrites `e` into forms the interpreter evaluates with less work and
/// the same results: `!x` as `x ? false : true` (its `!` builds an
/// overload error before it looks at the operand), `x.size()` as
/// `size(x)` (no member overload search).
fn cheaper(e: &mut IdedExpr, next_id: &mut u64) {
    super::cel::for_each_child_mut(e, |x| cheaper(x, next_id));
    let Expr::Call(c) = &mut e.expr else {
        return;
    };
    let mut literal = |b: bool| {
        *next_id += 1;
        IdedExpr {
            id: *next_id,
            expr: Expr::Literal(cel::common::ast::LiteralValue::Boolean(b.into())),
        }
    };
    if c.func_name == cel::common::ast::operators::LOGICAL_NOT
        && c.target.is_none()
        && c.args.len() == 1
    {
        c.func_name = cel::common::ast::operators::CONDITIONAL.into();
        c.args.push(literal(false));
        c.args.push(literal(true));
    } else if c.func_name == "size" && c.args.is_empty() {
        if let Some(target) = c.target.take() {
            c.args.push(*target);
        }
    }
}

/// Replaces each `variables.<name>` in `e` with the defined expression.
fn substitute<'d>(
    e: &mut IdedExpr,
    defined: &'d [(String, Expression)],
    used: &mut Vec<&'d Expression>,
) -> Result<(), String> {
    if let Expr::Select(sel) = &e.expr {
        if matches!(&sel.operand.expr, Expr::Ident(n) if n == "variables") {
            let Some((_, found)) = defined.iter().find(|(n, _)| *n == sel.field) else {
                return Err(format!(
                    "compilation failed: ERROR: <input>:1:1: undefined field '{}'",
                    sel.field
                ));
            };
            *e = (*found.raw).clone();
            used.push(found);
            return Ok(());
        }
    }
    if matches!(&e.expr, Expr::Ident(n) if n == "variables") {
        return Err("compilation failed: ERROR: <input>:1:1: variables may only be read by name (variables.<name>)".into());
    }
    let mut result = Ok(());
    super::cel::for_each_child_mut(e, |x| {
        if result.is_ok() {
            result = substitute(x, defined, used);
        }
    });
    result
}

/// The variables of one evaluation: JSON values seen as CEL values
/// (converted once, shared by every expression evaluated with them).
#[derive(Default)]
pub struct Variables<'a> {
    values: Vec<(&'a str, Box<dyn Val + 'a>)>,
}

impl<'a> Variables<'a> {
    /// Binds `name` to `value` (null when absent, as kube binds a missing
    /// `oldObject`).
    pub fn bind(mut self, name: &'a str, value: Option<&'a Value>) -> Self {
        let v: Box<dyn Val + 'a> = match value {
            Some(v) => to_val(v, None),
            None => Box::new(CelNull),
        };
        self.values.push((name, v));
        self
    }

    /// Binds `name` to as much of `value` as `access` reads (null when
    /// absent).
    pub fn bind_read(
        mut self,
        name: &'a str,
        value: Option<&'a Value>,
        access: &super::access::Access,
    ) -> Self {
        let v: Box<dyn Val + 'a> = match value {
            Some(v) => access.project(v),
            None => Box::new(CelNull),
        };
        self.values.push((name, v));
        self
    }

    /// Binds `name` to a CEL value (the `authorizer`).
    pub fn bind_value(mut self, name: &'a str, value: Cel) -> Self {
        let v: Box<dyn Val + 'a> = match Box::<dyn Val>::try_from(value) {
            Ok(v) => v,
            Err(_) => Box::new(CelNull),
        };
        self.values.push((name, v));
        self
    }
}

impl VariableResolver for Variables<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        self.values
            .iter()
            .find(|(n, _)| *n == variable)
            .map(|(_, v)| CowVal::Borrowed(&**v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VARS: &[&str] = &["object", "oldObject", "request"];

    #[test]
    fn expressions_read_their_variables() {
        let e = Expression::compile(
            "object.metadata.name.startsWith('a') && request.operation == 'CREATE' && oldObject == null",
            VARS,
        )
        .unwrap();
        let obj = json!({"metadata": {"name": "abc"}});
        let req = json!({"operation": "CREATE"});
        let vars = Variables::default()
            .bind("object", Some(&obj))
            .bind("oldObject", None)
            .bind("request", Some(&req));
        let mut budget = MATCH_CONDITIONS_BUDGET;
        assert!(e.evaluate_bool(&vars, &mut budget).unwrap());
        let other = json!({"metadata": {"name": "b"}});
        let vars = Variables::default()
            .bind("object", Some(&other))
            .bind("oldObject", None)
            .bind("request", Some(&req));
        assert!(!e.evaluate_bool(&vars, &mut budget).unwrap());
    }

    #[test]
    fn undeclared_variables_and_non_booleans_are_errors() {
        let err = Expression::compile("self.x == 1", VARS).unwrap_err();
        assert!(err.contains("undeclared reference to 'self'"), "{err}");
        assert!(Expression::compile("object.(", VARS).is_err());
        let e = Expression::compile("object.metadata.name", VARS).unwrap();
        let obj = json!({"metadata": {"name": "n"}});
        let vars = Variables::default().bind("object", Some(&obj));
        let mut budget = 10;
        assert!(e.evaluate_bool(&vars, &mut budget).is_err());
        // A missing key is an evaluation error, as in kube.
        let e = Expression::compile("object.spec.x == 1", VARS).unwrap();
        assert!(e
            .evaluate_bool(&vars, &mut 10)
            .unwrap_err()
            .contains("no such key"));
    }

    #[test]
    fn defined_variables_are_read_by_name() {
        let base = ["object"];
        let name = Expression::compile("object.metadata.name", &base).unwrap();
        let long = Expression::compile_with(
            "size(variables.name) > 3",
            &base,
            &[("name".to_string(), name.clone())],
        )
        .unwrap();
        let defined = [
            ("name".to_string(), name),
            ("long".to_string(), long.clone()),
        ];
        let e = Expression::compile_with(
            "variables.long && variables.name.startsWith('a')",
            &base,
            &defined,
        )
        .unwrap();
        let obj = json!({"metadata": {"name": "abcd"}});
        let vars = Variables::default().bind("object", Some(&obj));
        assert!(e.evaluate_bool(&vars, &mut 100).unwrap());
        assert!(e.reads("object"), "read through the variables");
        let err = Expression::compile_with("variables.nope", &base, &defined).unwrap_err();
        assert!(err.contains("undefined field 'nope'"), "{err}");
    }

    #[test]
    fn object_initializers_evaluate_to_their_json() {
        let obj = json!({"spec": {"replicas": 2}});
        let vars = Variables::default().bind("object", Some(&obj));
        let e = Expression::compile(
            "Object{spec: Object.spec{replicas: object.spec.replicas + 1, template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'c'}]}}}}",
            VARS,
        )
        .unwrap();
        assert_eq!(
            e.evaluate_json(&vars, &mut 100).unwrap(),
            json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}})
        );
        let e = Expression::compile(
            r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/a~b"), value: {"x": [1, true, null]}}]"#,
            VARS,
        )
        .unwrap();
        assert_eq!(
            e.evaluate_json(&vars, &mut 100).unwrap(),
            json!([{"op": "add", "path": "/metadata/labels/example.com~1a~0b", "value": {"x": [1, true, null]}}])
        );
        let e = Expression::compile("Object{spec: Object.spex{replicas: 1}}", VARS).unwrap();
        let err = e.evaluate_json(&vars, &mut 100).unwrap_err();
        assert!(
            err.contains("field type name mismatch: expected Object.spec, got Object.spex"),
            "{err}"
        );
    }

    #[test]
    fn rewritten_negations_and_sizes_answer_the_same() {
        let obj = json!({"metadata": {"name": "abc", "labels": {"a": "1"}}, "items": [1, 2]});
        let vars = Variables::default().bind("object", Some(&obj));
        for (source, want) in [
            ("!(object.metadata.name == 'x')", true),
            ("!has(object.metadata.labels)", false),
            ("!!true", true),
            (
                "object.metadata.name.size() == 3 && object.items.size() == 2",
                true,
            ),
            (
                "object.metadata.labels.size() == 1 && size(object.items) == 2",
                true,
            ),
            ("object.items.all(i, !(i > 2))", true),
        ] {
            let e = Expression::compile(source, VARS).unwrap();
            assert_eq!(e.evaluate_bool(&vars, &mut 100).unwrap(), want, "{source}");
        }
        let e = Expression::compile("!object.metadata.name", VARS).unwrap();
        assert!(e.evaluate_bool(&vars, &mut 100).is_err());
        let e = Expression::compile("!object.metadata.nope", VARS).unwrap();
        let err = e.evaluate_bool(&vars, &mut 100).unwrap_err();
        assert!(err.contains("no such key"), "{err}");
    }

    #[test]
    fn loops_are_charged_to_the_budget() {
        let e = Expression::compile("object.items.all(i, i > 0)", VARS).unwrap();
        let obj = json!({"items": (1..=100).collect::<Vec<_>>()});
        let vars = Variables::default().bind("object", Some(&obj));
        let mut budget = 1000;
        assert!(e.evaluate_bool(&vars, &mut budget).unwrap());
        assert!(budget <= 900, "{budget}");
        let mut small = 50;
        let err = e.evaluate_bool(&vars, &mut small).unwrap_err();
        assert!(err.contains("cost limit exceeded"), "{err}");
    }
}
