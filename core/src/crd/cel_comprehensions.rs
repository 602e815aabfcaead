//! CEL's two-variable comprehensions, which kube's rules may use since
//! 1.32: `all`, `exists` and `existsOne`/`exists_one` over an index (or
//! key) and a value, and `transformList`, `transformMap` and
//! `transformMapEntry` with an optional filter.
//!
//! The interpreter loops with one variable, so each macro expands to a
//! one-variable loop over the target's indices (a list) or keys (a map)
//! with the value bound beside it, the target evaluated once:
//! `T.all(i, v, p)` is `bind(@t, T, @keys(@t).all(i, bind(v, @t[i], p)))`,
//! where `bind(x, e, body)` is a loop over nothing whose accumulator `x`
//! starts as `e` and whose result is `body`.

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
};
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{Context, DeclarationError, Env, ExecutionError, Value as Cel};
use std::collections::HashMap;
use std::sync::Arc;

/// The variable the target is bound to (no rule can name it).
pub(super) const TARGET: &str = "@__two_var_target__";
const RESULT: &str = "@result";
/// A list's indices or a map's keys.
pub(super) const KEYS: &str = "@twoVarKeys";
/// The accumulated map with one more entry.
const MAP_INSERT: &str = "@twoVarMapInsert";
/// The accumulated map with another map's entries.
const MAP_MERGE: &str = "@twoVarMapMerge";

#[derive(Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

/// Declares the macros on the compile environment.
pub fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    use Kind::*;
    let macros: [(&'static str, usize, Kind); 10] = [
        ("all", 3, All),
        ("exists", 3, Exists),
        ("existsOne", 3, ExistsOne),
        ("exists_one", 3, ExistsOne),
        ("transformList", 3, TransformList),
        ("transformList", 4, TransformList),
        ("transformMap", 3, TransformMap),
        ("transformMap", 4, TransformMap),
        ("transformMapEntry", 3, TransformMapEntry),
        ("transformMapEntry", 4, TransformMapEntry),
    ];
    for (name, arity, kind) in macros {
        env.add_macro(Macro::receiver(name, arity, move |h, t, a| {
            expand(kind, h, t, a).map(Some)
        }))?;
    }
    Ok(())
}

/// Declares the functions the expansions call on the root context.
pub fn register(
    ctx: &mut Context<'static, 'static>,
    add: &dyn Fn(&str, Result<(), DeclarationError>),
) {
    add(KEYS, ctx.add_function(KEYS, |v: Cel| keys(&v)));
    add(
        MAP_INSERT,
        ctx.add_function(MAP_INSERT, |m: Cel, k: Cel, v: Cel| {
            let mut map = entries(&m)?;
            super::cel::charge(map.len() as u64)?;
            insert(&mut map, key(&k)?, v)?;
            Ok::<_, ExecutionError>(to_map(map))
        }),
    );
    add(
        MAP_MERGE,
        ctx.add_function(MAP_MERGE, |m: Cel, more: Cel| {
            let mut map = entries(&m)?;
            super::cel::charge(map.len() as u64)?;
            for (k, v) in entries(&more)? {
                insert(&mut map, k, v)?;
            }
            Ok::<_, ExecutionError>(to_map(map))
        }),
    );
}

fn keys(v: &Cel) -> Result<Cel, ExecutionError> {
    match v {
        Cel::List(items) => Ok(Cel::List(Arc::new(
            (0..items.len() as i64).map(Cel::Int).collect(),
        ))),
        Cel::Map(m) => Ok(Cel::List(Arc::new(m.map.keys().map(Cel::from).collect()))),
        other => Err(ExecutionError::function_error(
            "comprehension",
            format!("cannot iterate over {}", other.type_of()),
        )),
    }
}

fn entries(m: &Cel) -> Result<HashMap<Key, Cel>, ExecutionError> {
    match m {
        Cel::Map(m) => Ok((*m.map).clone()),
        other => Err(ExecutionError::function_error(
            "transformMapEntry",
            format!("expected a map, got {}", other.type_of()),
        )),
    }
}

fn key(k: &Cel) -> Result<Key, ExecutionError> {
    match k {
        Cel::Int(i) => Ok(Key::Int(*i)),
        Cel::UInt(u) => Ok(Key::Uint(*u)),
        Cel::Bool(b) => Ok(Key::Bool(*b)),
        Cel::String(s) => Ok(Key::String(s.clone())),
        other => Err(ExecutionError::function_error(
            "transformMap",
            format!("unsupported map key type: {}", other.type_of()),
        )),
    }
}

/// cel-go refuses a key the map already has.
fn insert(map: &mut HashMap<Key, Cel>, k: Key, v: Cel) -> Result<(), ExecutionError> {
    if map.contains_key(&k) {
        return Err(ExecutionError::function_error(
            "transformMap",
            format!("insert failed: key {} already exists", key_text(&k)),
        ));
    }
    map.insert(k, v);
    Ok(())
}

/// A key as Go's `%v` prints it.
fn key_text(k: &Key) -> String {
    match k {
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
        Key::String(s) => s.to_string(),
    }
}

fn to_map(map: HashMap<Key, Cel>) -> Cel {
    Cel::Map(Map { map: Arc::new(map) })
}

fn expand(
    kind: Kind,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<IdedExpr, ParseError> {
    let range = target.take().expect("a receiver macro has a target");
    let first = simple_name(h, args.remove(0))?;
    let second = simple_name(h, args.remove(0))?;
    if first == second {
        return Err(h.new_error(range.id, format!("duplicate variable name: {first}")));
    }
    let body = args.pop().expect("the macro's arity leaves a body");
    let filter = args.pop();
    // `e` with the value variable bound to `@t[first]`.
    let with_value = |h: &mut MacroExprHelper<'_>, e: IdedExpr| {
        let target = ident(h, TARGET);
        let index = ident(h, &first);
        let value = call(h, operators::INDEX, vec![target, index]);
        bind(h, &second, value, e)
    };
    let result = |h: &mut MacroExprHelper<'_>| ident(h, RESULT);
    let (init, cond, step, out) = match kind {
        Kind::All | Kind::Exists => {
            let (init, op) = match kind {
                Kind::All => (true, operators::LOGICAL_AND),
                _ => (false, operators::LOGICAL_OR),
            };
            let acc = result(h);
            let cond = match kind {
                Kind::All => call(h, operators::NOT_STRICTLY_FALSE, vec![acc]),
                _ => {
                    let not = call(h, operators::LOGICAL_NOT, vec![acc]);
                    call(h, operators::NOT_STRICTLY_FALSE, vec![not])
                }
            };
            let acc = result(h);
            let predicate = with_value(h, body);
            let step = call(h, op, vec![acc, predicate]);
            (
                literal(h, LiteralValue::Boolean(init.into())),
                cond,
                step,
                result(h),
            )
        }
        Kind::ExistsOne => {
            let predicate = with_value(h, body);
            let acc = result(h);
            let one = literal(h, LiteralValue::Int(1.into()));
            let more = call(h, operators::ADD, vec![acc, one]);
            let same = result(h);
            let step = call(h, operators::CONDITIONAL, vec![predicate, more, same]);
            let acc = result(h);
            let one = literal(h, LiteralValue::Int(1.into()));
            let out = call(h, operators::EQUALS, vec![acc, one]);
            let init = literal(h, LiteralValue::Int(0.into()));
            (
                init,
                literal(h, LiteralValue::Boolean(true.into())),
                step,
                out,
            )
        }
        Kind::TransformList => {
            // `@result + [x]` (or `f ? @result + [x] : @result`), the
            // value bound inside: the shape the interpreter appends to in
            // place.
            let acc = result(h);
            let item = with_value(h, body);
            let item = h.next_expr(Expr::List(ListExpr::new(vec![item])));
            let grown = call(h, operators::ADD, vec![acc, item]);
            let step = match filter {
                Some(f) => {
                    let keep = with_value(h, f);
                    let same = result(h);
                    call(h, operators::CONDITIONAL, vec![keep, grown, same])
                }
                None => grown,
            };
            let init = h.next_expr(Expr::List(ListExpr::new(Vec::new())));
            (
                init,
                literal(h, LiteralValue::Boolean(true.into())),
                step,
                result(h),
            )
        }
        Kind::TransformMap | Kind::TransformMapEntry => {
            let acc = result(h);
            let (init, grown) = match kind {
                Kind::TransformMap => {
                    let k = ident(h, &first);
                    let init = h.next_expr(Expr::Map(MapExpr {
                        entries: Vec::new(),
                    }));
                    (init, call(h, MAP_INSERT, vec![acc, k, body]))
                }
                _ => {
                    let init = h.next_expr(Expr::Map(MapExpr {
                        entries: Vec::new(),
                    }));
                    (init, call(h, MAP_MERGE, vec![acc, body]))
                }
            };
            let step = match filter {
                Some(f) => {
                    let same = result(h);
                    call(h, operators::CONDITIONAL, vec![f, grown, same])
                }
                None => grown,
            };
            let step = with_value(h, step);
            (
                init,
                literal(h, LiteralValue::Boolean(true.into())),
                step,
                result(h),
            )
        }
    };
    let over = ident(h, TARGET);
    let keys = call(h, KEYS, vec![over]);
    let fold = h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: keys,
        iter_var: first,
        iter_var2: None,
        accu_var: RESULT.into(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result: out,
    })));
    Ok(bind(h, TARGET, range, fold))
}

/// `body` with `name` bound to `value`: a loop over nothing whose
/// accumulator is the binding.
fn bind(h: &mut MacroExprHelper<'_>, name: &str, value: IdedExpr, body: IdedExpr) -> IdedExpr {
    let nothing = h.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let never = literal(h, LiteralValue::Boolean(false.into()));
    let same = ident(h, name);
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: nothing,
        iter_var: "#unused".into(),
        iter_var2: None,
        accu_var: name.into(),
        accu_init: value,
        loop_cond: never,
        loop_step: same,
        result: body,
    })))
}

fn simple_name(h: &mut MacroExprHelper<'_>, e: IdedExpr) -> Result<String, ParseError> {
    match e.expr {
        Expr::Ident(name) => Ok(name),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.into()))
}

fn literal(h: &mut MacroExprHelper<'_>, v: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(v))
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr {
        func_name: name.into(),
        target: None,
        args,
    }))
}
