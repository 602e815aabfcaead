//! `x-kubernetes-validations`: CEL rules compiled once with the CRD and
//! run against every custom resource written, with kube's variables
//! (`self`, `oldSelf`), the library functions rules commonly use (lists,
//! sets, regex, quantities, IPs and CIDRs, on top of CEL's strings and
//! lists extensions), kube's messages and a cost budget.
//!
//! The interpreter (the `cel` crate) counts nothing itself, so each
//! compiled rule carries a copy of its syntax tree whose comprehension
//! steps first call `tick()`: one unit per loop iteration, charged to the
//! evaluating thread, refused once kube's per-call limit is spent.

use super::structural::{Additional, Structural, Type};
use crate::status::{
    field_duplicate, field_forbidden, field_invalid_raw, field_required, StatusCause,
};
use cel::common::ast::{operators, CallExpr, Expr, IdedExpr};

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelOptional, CelString,
    CelTimestamp, CelUInt,
};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use serde_json::Value;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// kube's runtime limit per rule call (cost units; here loop iterations).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// kube's runtime budget for all rules of one object.
pub const PER_OBJECT_BUDGET: u64 = 10_000_000;

/// The rules of one schema node.
pub struct RuleSet {
    rules: Vec<Rule>,
    /// The node's type as kube names it in errors (`"object"`).
    type_name: &'static str,
    /// The fields of `self` and `oldSelf` the rules read, when they read
    /// them only field by field (`self.x`, `has(self.x)`): only those
    /// become CEL values, not the whole object. None: some rule uses the
    /// value whole.
    fields: Option<Vec<Box<str>>>,
}

impl std::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RuleSet({} rules)", self.rules.len())
    }
}

impl Clone for RuleSet {
    fn clone(&self) -> Self {
        Self {
            rules: self.rules.clone(),
            type_name: self.type_name,
            fields: self.fields.clone(),
        }
    }
}

#[derive(Clone)]
struct Rule {
    source: String,
    /// The counted syntax tree, or why the rule does not compile.
    program: Result<Arc<IdedExpr>, String>,
    message: Option<String>,
    message_expression: Option<Arc<IdedExpr>>,
    reason: Option<String>,
    field_path: Option<String>,
    transition: bool,
    optional_old_self: bool,
}

/// Why a rule is refused when the CRD is written: the rule's field the
/// error is about, and kube's message.
pub struct CheckError {
    pub field: &'static str,
    pub message: String,
}

/// The environment every rule compiles in: CEL's standard library with
/// the strings, lists and math extensions.
pub(super) fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        for ext in [
            cel::extensions::strings as fn(&mut Env) -> _,
            cel::extensions::lists,
            cel::extensions::math,
        ] {
            env.add_extension(ext)
                .expect("CEL extensions declare distinct names");
        }
        super::cel_library::extend(&mut env).expect("list overloads are new");
        super::cel_comprehensions::extension(&mut env)
            .expect("two-variable comprehensions are new macros");
        Arc::new(env)
    })
}

/// The root context: kube's library functions (declared once; each
/// evaluation opens a child scope for its variables).
pub(super) fn base() -> &'static Context<'static, 'static> {
    static BASE: OnceLock<Context<'static, 'static>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut ctx = Context::with_env(env().clone());
        super::cel_library::register(&mut ctx);
        ctx.add_function("tick", tick)
            .expect("tick is not a CEL name");
        ctx
    })
}

thread_local! {
    /// Cost units left for the rule running on this thread.
    static LEFT: Cell<u64> = const { Cell::new(0) };
}

/// Charges `units` of the running rule's budget for work a library
/// function does per element (copying a map it grows).
pub(super) fn charge(units: u64) -> Result<(), ExecutionError> {
    LEFT.with(|left| match left.get() {
        n if n >= units => {
            left.set(n - units);
            Ok(())
        }
        _ => {
            left.set(0);
            Err(ExecutionError::function_error(
                "cost",
                "call cost exceeds limit",
            ))
        }
    })
}

/// Runs `f` with `limit` cost units on this thread; answers its result
/// and the units it used.
pub(super) fn metered<R>(limit: u64, f: impl FnOnce() -> R) -> (R, u64) {
    LEFT.with(|l| l.set(limit));
    let r = f();
    (r, limit - LEFT.with(Cell::get))
}

fn tick() -> Result<bool, ExecutionError> {
    LEFT.with(|left| match left.get() {
        0 => Err(ExecutionError::function_error(
            "cost",
            "call cost exceeds limit",
        )),
        n => {
            left.set(n - 1);
            Ok(true)
        }
    })
}

/// A rule's syntax tree as written (macros expanded), if it parses.
pub(super) fn parse(source: &str) -> Option<IdedExpr> {
    env().compile(source).ok().map(|p| p.expression().clone())
}

/// A rule's source, compiled: its tree with every comprehension step
/// counted, or the compile error as kube words it.
fn compile(source: &str) -> Result<(Arc<IdedExpr>, bool), String> {
    let program: Program = env()
        .compile(source)
        .map_err(|e| format!("compilation failed: {e}"))?;
    let refs = program.references();
    let mut bound = Vec::new();
    loop_variables(program.expression(), &mut bound);
    for v in refs.variables() {
        // Namespaces of library functions kube 1.34 gives new rules
        // (`ip.isCanonical`, `format.named`, `sets.contains`,
        // `optional.of`, `strings.quote`), not variables.
        let namespace = matches!(v, "ip" | "format" | "sets" | "optional" | "strings");
        if v != "self" && v != "oldSelf" && !namespace && !bound.iter().any(|b| b == v) {
            return Err(format!(
                "compilation failed: ERROR: <input>:1:1: undeclared reference to '{v}' (in container '')"
            ));
        }
    }
    let transition = refs.has_variable("oldSelf");
    let mut expr = program.expression().clone();
    count_loops(&mut expr);
    Ok((Arc::new(expr), transition))
}

pub(super) fn loop_variables(e: &IdedExpr, out: &mut Vec<String>) {
    walk(e, &mut |e| {
        if let Expr::Comprehension(c) = &e.expr {
            out.push(c.iter_var.clone());
            out.push(c.accu_var.clone());
            out.extend(c.iter_var2.clone());
        }
    });
}

/// Calls `f` on each expression directly under `e` (a call's target and
/// arguments, a comprehension's parts, list items, map keys and values,
/// struct field values, a selection's operand): what rewrites of the
/// tree recurse through.
pub(super) fn for_each_child_mut(e: &mut IdedExpr, mut f: impl FnMut(&mut IdedExpr)) {
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                f(t);
            }
            c.args.iter_mut().for_each(f);
        }
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                f(x);
            }
        }
        Expr::List(l) => l.elements.iter_mut().for_each(f),
        Expr::Map(cel::common::ast::MapExpr { entries })
        | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
            for en in entries {
                match &mut en.expr {
                    cel::common::ast::EntryExpr::MapEntry(me) => {
                        f(&mut me.key);
                        f(&mut me.value);
                    }
                    cel::common::ast::EntryExpr::StructField(sf) => f(&mut sf.value),
                }
            }
        }
        Expr::Select(s) => f(&mut s.operand),
        _ => {}
    }
}

pub(super) fn walk(e: &IdedExpr, f: &mut impl FnMut(&IdedExpr)) {
    f(e);
    for_each_child(e, |x| walk(x, f));
}

/// Calls `f` on each expression directly under `e` (as
/// [`for_each_child_mut`], for reading).
pub(super) fn for_each_child(e: &IdedExpr, mut f: impl FnMut(&IdedExpr)) {
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                f(t);
            }
            c.args.iter().for_each(f);
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                f(x);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(f),
        Expr::Map(cel::common::ast::MapExpr { entries })
        | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
            for en in entries {
                match &en.expr {
                    cel::common::ast::EntryExpr::MapEntry(me) => {
                        f(&me.key);
                        f(&me.value);
                    }
                    cel::common::ast::EntryExpr::StructField(sf) => f(&sf.value),
                }
            }
        }
        Expr::Select(s) => f(&s.operand),
        _ => {}
    }
}

/// Adds the fields of `self`/`oldSelf` that `e` selects to `out`;
/// false when `e` uses either variable other than by selecting a field.
fn fields_read(e: &IdedExpr, out: &mut Vec<Box<str>>) -> bool {
    let whole = |n: &str| n == "self" || n == "oldSelf";
    match &e.expr {
        Expr::Select(sel) => match &sel.operand.expr {
            Expr::Ident(n) if whole(n) => {
                if !out.iter().any(|f| **f == *sel.field) {
                    out.push(sel.field.as_str().into());
                }
                true
            }
            _ => fields_read(&sel.operand, out),
        },
        Expr::Ident(n) => !whole(n),
        Expr::Call(c) => {
            c.target.iter().all(|t| fields_read(t, out))
                && c.args.iter().all(|a| fields_read(a, out))
        }
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .all(|x| fields_read(x, out)),
        Expr::List(l) => l.elements.iter().all(|x| fields_read(x, out)),
        Expr::Map(cel::common::ast::MapExpr { entries })
        | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
            entries.iter().all(|en| match &en.expr {
                cel::common::ast::EntryExpr::MapEntry(me) => {
                    fields_read(&me.key, out) && fields_read(&me.value, out)
                }
                cel::common::ast::EntryExpr::StructField(f) => fields_read(&f.value, out),
            })
        }
        _ => true,
    }
}

/// Rewrites every comprehension step `S` as `tick() ? S : @accu` — and a
/// guarded step `G ? X : @accu` as `(tick() ? G : false) ? X : @accu` —
/// so that `tick()` runs once per iteration and the step keeps the shape
/// the interpreter appends to a list in place for (`map`, `filter`):
/// otherwise every iteration copies the accumulated list.
pub(super) fn count_loops(e: &mut IdedExpr) {
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                count_loops(t);
            }
            c.args.iter_mut().for_each(count_loops);
        }
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.result,
            ] {
                count_loops(x);
            }
            count_loops(&mut c.loop_step);
            let step = std::mem::take(&mut c.loop_step);
            let expr = |expr: Expr| IdedExpr { id: 0, expr };
            let conditional = |args: Vec<IdedExpr>| {
                expr(Expr::Call(CallExpr {
                    func_name: operators::CONDITIONAL.into(),
                    target: None,
                    args,
                }))
            };
            let tick = expr(Expr::Call(CallExpr {
                func_name: "tick".into(),
                target: None,
                args: vec![],
            }));
            let accu = expr(Expr::Ident(c.accu_var.clone()));
            let id = step.id;
            let guarded = match &step.expr {
                Expr::Call(call) => {
                    call.func_name == operators::CONDITIONAL
                        && call.target.is_none()
                        && matches!(call.args.as_slice(), [_, _, otherwise] if otherwise.expr == accu.expr)
                }
                _ => false,
            };
            c.loop_step = match step.expr {
                Expr::Call(mut call) if guarded => {
                    let otherwise = call.args.pop().expect("three arguments");
                    let then = call.args.pop().expect("three arguments");
                    let guard = call.args.pop().expect("three arguments");
                    let never = expr(Expr::Literal(cel::common::ast::LiteralValue::Boolean(
                        false.into(),
                    )));
                    conditional(vec![conditional(vec![tick, guard, never]), then, otherwise])
                }
                other => conditional(vec![tick, IdedExpr { id, expr: other }, accu]),
            };
            c.loop_step.id = id;
        }
        Expr::List(l) => l.elements.iter_mut().for_each(count_loops),
        Expr::Map(m) => m.entries.iter_mut().for_each(|en| match &mut en.expr {
            cel::common::ast::EntryExpr::MapEntry(me) => {
                count_loops(&mut me.key);
                count_loops(&mut me.value);
            }
            cel::common::ast::EntryExpr::StructField(f) => count_loops(&mut f.value),
        }),
        Expr::Select(s) => count_loops(&mut s.operand),
        _ => {}
    }
}

impl RuleSet {
    /// Compiles a node's `x-kubernetes-validations`.
    pub fn compile(list: &[Value], node: &Structural) -> RuleSet {
        let rules: Vec<Rule> = list
            .iter()
            .map(|r| {
                let get = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
                let source = get("rule").unwrap_or_default();
                let (program, transition) = match compile(&source) {
                    Ok((p, t)) => (Ok(p), t),
                    Err(e) => (Err(e), false),
                };
                Rule {
                    message_expression: get("messageExpression")
                        .and_then(|m| compile(&m).ok())
                        .map(|(p, _)| p),
                    message: get("message"),
                    reason: get("reason"),
                    field_path: get("fieldPath"),
                    optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool)
                        == Some(true),
                    source,
                    program,
                    transition,
                }
            })
            .collect();
        let mut fields = Some(Vec::new());
        for rule in &rules {
            let trees = rule
                .program
                .as_ref()
                .ok()
                .into_iter()
                .chain(&rule.message_expression);
            for tree in trees {
                if let Some(list) = &mut fields {
                    if !fields_read(tree, list) {
                        fields = None;
                    }
                }
            }
        }
        RuleSet {
            rules,
            type_name: type_name(node),
            fields,
        }
    }
}

fn type_name(node: &Structural) -> &'static str {
    if node.int_or_string {
        return "integer";
    }
    match node.ty {
        Some(Type::Any) | None => "object",
        Some(t) => t.name(),
    }
}

/// Checks a rule as the CRD's validation does.
pub fn check(rule: &Value) -> Result<(), CheckError> {
    let get = |k: &str| rule.get(k).and_then(Value::as_str);
    let transition = match compile(get("rule").unwrap_or("")) {
        Err(message) => {
            return Err(CheckError {
                field: "rule",
                message,
            })
        }
        Ok((_, t)) => t,
    };
    if let Some(m) = get("messageExpression") {
        if let Err(message) = compile(m) {
            return Err(CheckError {
                field: "messageExpression",
                message: message.replacen(
                    "compilation failed",
                    "messageExpression compilation failed",
                    1,
                ),
            });
        }
    }
    if rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true) && !transition {
        return Err(CheckError {
            field: "optionalOldSelf",
            message: "may not be set if oldSelf is not used in rule".into(),
        });
    }
    Ok(())
}

/// A rule as Go prints kube's `ValidationRule` struct (the value of a
/// compile error).
pub fn go_rule(rule: &Value) -> String {
    let get = |k: &str| crate::status::go_quote(rule.get(k).and_then(Value::as_str).unwrap_or(""));
    let ptr = |k: &str, t: &str| match rule.get(k) {
        Some(Value::String(s)) => format!("&{s:?}"),
        Some(Value::Bool(b)) => format!("&{b}"),
        _ => format!("(*{t})(nil)"),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        get("rule"),
        get("message"),
        get("messageExpression"),
        ptr("reason", "apiextensions.FieldValueErrorReason"),
        get("fieldPath"),
        ptr("optionalOldSelf", "bool"),
    )
}

/// Runs every rule of `schema` (and its children) on `obj`, with `old`
/// for transition rules.
pub fn validate(schema: &Structural, obj: &Value, old: Option<&Value>, out: &mut Vec<StatusCause>) {
    let mut budget = PER_OBJECT_BUDGET;
    node(schema, obj, old, "", &mut budget, out);
}

fn node(
    s: &Structural,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    budget: &mut u64,
    out: &mut Vec<StatusCause>,
) {
    // Ratcheting, as for the schema's values: a value the update leaves
    // as it was is not judged again (a tightened rule does not lock out
    // objects that predate it).
    if old == Some(v) {
        return;
    }
    if let Some(rules) = &s.rules {
        run(rules, s, v, old, path, budget, out);
    }
    let child = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match v {
        Value::Object(map) => {
            // The schema's children with rules, found without hashing
            // every field of the object.
            for (k, sub) in s.properties.iter().filter(|(_, sub)| sub.has_rules()) {
                if let Some(child_v) = map.get(&**k) {
                    node(
                        sub,
                        child_v,
                        old.and_then(|o| o.get(&**k)),
                        &child(k),
                        budget,
                        out,
                    );
                }
            }
            if let Additional::Schema(sub) = &s.additional {
                if sub.has_rules() {
                    for (k, child_v) in map
                        .iter()
                        .filter(|(k, _)| !s.properties.contains_key(k.as_str()))
                    {
                        node(
                            sub,
                            child_v,
                            old.and_then(|o| o.get(k)),
                            &child(k),
                            budget,
                            out,
                        );
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = s.items.as_deref().filter(|i| i.has_rules()) {
                for (i, child_v) in items.iter().enumerate() {
                    let old_item = s.correlated(old, child_v);
                    node(
                        item,
                        child_v,
                        old_item,
                        &format!("{path}[{i}]"),
                        budget,
                        out,
                    );
                }
            }
        }
        _ => {}
    }
}

/// `self` and `oldSelf` for one node's rules: converted once, borrowed
/// by every rule's evaluation.
struct NodeVars<'a> {
    this: &'a (dyn Val + 'a),
    old: Option<&'a (dyn Val + 'a)>,
}

impl VariableResolver for NodeVars<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        match variable {
            "self" => Some(CowVal::Borrowed(self.this)),
            "oldSelf" => self.old.map(CowVal::Borrowed),
            _ => None,
        }
    }
}

fn run(
    rules: &RuleSet,
    s: &Structural,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    budget: &mut u64,
    out: &mut Vec<StatusCause>,
) {
    let fields = rules.fields.as_deref();
    let this = project(v, s, fields);
    let previous = old.map(|o| project(o, s, fields));
    for rule in &rules.rules {
        // Where a failure is reported, and the value kube shows: only
        // spelled out for a rule that fails.
        let field = || {
            let field = match &rule.field_path {
                Some(fp) => format!("{path}{fp}"),
                None => path.to_string(),
            };
            match field.trim_start_matches('.') {
                "" => "<nil>".to_string(),
                f => f.to_string(),
            }
        };
        let value = || crate::status::go_quote(rules.type_name);
        let program = match &rule.program {
            Ok(p) => p,
            Err(e) => {
                out.push(field_invalid_raw(&field(), &value(), e));
                continue;
            }
        };
        if rule.transition && previous.is_none() && !rule.optional_old_self {
            continue;
        }
        if *budget == 0 {
            out.push(field_invalid_raw(
                &field(),
                &value(),
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            return;
        }
        // `optionalOldSelf`: oldSelf is an optional (none on create).
        let optional: Option<Box<dyn Val + '_>> =
            (rule.transition && rule.optional_old_self).then(|| {
                let inner = old.map(|o| project(o, s, fields));
                Box::new(match inner {
                    Some(i) => CelOptional::of(i),
                    None => CelOptional::none(),
                }) as Box<dyn Val>
            });
        let vars = NodeVars {
            this: &*this,
            old: match &optional {
                Some(o) => Some(&**o),
                None if rule.transition => previous.as_deref(),
                None => None,
            },
        };
        let base: &Context<'_, '_> = base();
        let mut ctx = base.new_inner_scope();
        ctx.set_variable_resolver(&vars);
        let limit = PER_CALL_LIMIT.min(*budget);
        LEFT.with(|l| l.set(limit));
        let result = Cel::resolve(program, &ctx);
        let used = limit - LEFT.with(Cell::get);
        *budget -= used;
        if used >= limit {
            out.push(field_invalid_raw(
                &field(),
                &value(),
                &format!("call cost exceeds limit for rule: {}", rule.source.trim()),
            ));
            continue;
        }
        match result {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => {
                let detail = message(rule, &ctx);
                let field = field();
                out.push(match rule.reason.as_deref() {
                    Some("FieldValueForbidden") => field_forbidden(&field, &detail),
                    Some("FieldValueRequired") => field_required(&field, &detail),
                    Some("FieldValueDuplicate") => field_duplicate(&field, rules.type_name),
                    _ => field_invalid_raw(&field, &value(), &detail),
                });
            }
            Ok(other) => out.push(field_invalid_raw(
                &field(),
                &value(),
                &format!("rule result is not a boolean: {other:?}"),
            )),
            Err(e) => out.push(field_invalid_raw(&field(), &value(), &error_text(&e))),
        }
    }
}

/// The message of a failed rule: its messageExpression's result, its
/// message, or kube's default.
fn message(rule: &Rule, ctx: &Context<'_, '_>) -> String {
    if let Some(expr) = &rule.message_expression {
        LEFT.with(|l| l.set(PER_CALL_LIMIT));
        if let Ok(Cel::String(s)) = Cel::resolve(expr, ctx) {
            if !s.trim().is_empty() && !s.contains('\n') {
                return s.to_string();
            }
        }
    }
    match &rule.message {
        Some(m) => m.clone(),
        None => format!("failed rule: {}", rule.source.trim()),
    }
}

pub(super) fn error_text(e: &ExecutionError) -> String {
    let text = e.to_string();
    match text.strip_prefix("No such key: ") {
        Some(key) => format!("no such key: {key}"),
        None => text,
    }
}

/// A JSON value as CEL sees it under `schema` (integers as int, numbers
/// as double, date-times as timestamps), borrowing its strings: built
/// once per node, whatever its rules read.
/// `v` as a CEL value; an object only with `fields`, when given.
fn project<'a>(v: &'a Value, s: &Structural, fields: Option<&[Box<str>]>) -> Box<dyn Val + 'a> {
    match (v, fields) {
        (Value::Object(map), Some(fields)) => {
            let m: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = fields
                .iter()
                .filter_map(|f| map.get_key_value(&**f))
                .map(|(k, v)| (CelMapKey::from(k.as_str()), to_val(v, s.member(k))))
                .collect();
            Box::new(CelMap::from(m))
        }
        _ => to_val(v, Some(s)),
    }
}

pub(super) fn to_val<'a>(v: &'a Value, schema: Option<&Structural>) -> Box<dyn Val + 'a> {
    match v {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match schema.and_then(|s| s.ty) {
            Some(Type::Number) => Box::new(CelDouble::from(n.as_f64().unwrap_or(0.0))),
            _ => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Box::new(CelInt::from(i)),
                (None, Some(u)) => Box::new(CelUInt::from(u)),
                _ => Box::new(CelDouble::from(n.as_f64().unwrap_or(0.0))),
            },
        },
        Value::String(text) => match schema.and_then(|s| s.format.as_deref()) {
            Some("date-time") | Some("datetime") => {
                match chrono::DateTime::parse_from_rfc3339(text) {
                    Ok(t) => Box::new(CelTimestamp::from(t)),
                    Err(_) => Box::new(CelString::from(text.as_str())),
                }
            }
            _ => Box::new(CelString::from(text.as_str())),
        },
        Value::Array(items) => {
            let item = schema.and_then(|s| s.items.as_deref());
            Box::new(CelList::from(
                items.iter().map(|i| to_val(i, item)).collect::<Vec<_>>(),
            ))
        }
        Value::Object(map) => {
            let m: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = map
                .iter()
                .map(|(k, v)| {
                    (
                        CelMapKey::from(k.as_str()),
                        to_val(v, schema.and_then(|s| s.member(k))),
                    )
                })
                .collect();
            Box::new(CelMap::from(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(rules: Value) -> Option<Vec<Box<str>>> {
        let node = Structural::parse(&json!({"type": "object"}));
        RuleSet::compile(rules.as_array().unwrap(), &node).fields
    }

    /// Rules that read `self` field by field convert only those fields;
    /// one that uses it whole converts all of it.
    #[test]
    fn only_the_fields_rules_read_become_cel_values() {
        assert_eq!(
            fields(json!([{"rule": "self.a < self.b"},
                {"rule": "has(self.c) || oldSelf.a == 1", "messageExpression": "'d is ' + self.d"}])),
            Some(vec!["a".into(), "b".into(), "c".into(), "d".into()])
        );
        assert_eq!(
            fields(json!([{"rule": "self.a > 0"}, {"rule": "size(self) < 3"}])),
            None
        );
        assert_eq!(fields(json!([{"rule": "self.all(k, k != 'x')"}])), None);
        assert_eq!(fields(json!([{"rule": "self.?a.orValue(1) == 1"}])), None);
        // A projected object still answers has() and missing fields as
        // the whole one would.
        let node = Structural::parse(&json!({"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}, "z": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "!has(self.b) || self.a < self.b"}]}));
        let mut out = Vec::new();
        validate(&node, &json!({"a": 1, "z": "big"}), None, &mut out);
        assert!(out.is_empty(), "{out:?}");
        validate(&node, &json!({"a": 3, "b": 2}), None, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
    }
}
