//! Object construction in CEL (`Object{spec: Object.spec{replicas: 3}}`,
//! `JSONPatch{op: "add", path: "/x", value: 1}`), which mutating
//! admission policies build their patches with, and the way back from a
//! CEL result to JSON.
//!
//! The interpreter knows no message types, and what a patch needs is the
//! JSON its initializers spell, so each initializer is rewritten into the
//! map literal of its fields when the expression is compiled. kube
//! checks, when it applies a patch, that a nested `Object` initializer is
//! named after the field it fills (`Object.spec.template` under
//! `template` of `Object.spec`); a misnamed one here evaluates to that
//! error.

use cel::common::ast::{
    CallExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, MapEntryExpr, MapExpr,
};
use cel::{Context, ExecutionError, Value as Cel};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The function a misnamed initializer becomes: it fails with its
/// argument.
const MISMATCH: &str = "@typeMismatch";

/// Declares the functions rewritten expressions call, and kube's
/// `jsonpatch.escapeKey`.
pub(super) fn register(
    ctx: &mut Context<'static, 'static>,
    add: &dyn Fn(&str, Result<(), cel::DeclarationError>),
) {
    add(
        MISMATCH,
        ctx.add_function(
            MISMATCH,
            |message: Arc<String>| -> Result<Cel, ExecutionError> {
                Err(ExecutionError::function_error("type mismatch", message))
            },
        ),
    );
    add(
        "jsonpatch.escapeKey",
        ctx.add_function("jsonpatch.escapeKey", |key: Arc<String>| {
            Cel::String(Arc::new(key.replace('~', "~0").replace('/', "~1")))
        }),
    );
}

/// Rewrites every initializer in `e` into a map literal.
pub(super) fn structs_to_maps(e: &mut IdedExpr) {
    let mut next_id = max_id(e) + 1;
    rewrite(e, None, &mut next_id);
}

fn max_id(e: &IdedExpr) -> u64 {
    let mut max = e.id;
    super::cel::walk(e, &mut |x| max = max.max(x.id));
    max
}

fn string(id: &mut u64, s: String) -> IdedExpr {
    *id += 1;
    IdedExpr {
        id: *id,
        expr: Expr::Literal(LiteralValue::String(s.into())),
    }
}

/// `expected`: the type name an `Object` initializer must have here.
fn rewrite(e: &mut IdedExpr, expected: Option<&str>, next_id: &mut u64) {
    match &mut e.expr {
        Expr::Struct(s) => {
            if let Some(want) = expected.filter(|w| *w != s.type_name) {
                let message = format!(
                    "field type name mismatch: expected {want}, got {}",
                    s.type_name
                );
                e.expr = Expr::Call(CallExpr {
                    func_name: MISMATCH.into(),
                    target: None,
                    args: vec![string(next_id, message)],
                });
                return;
            }
            let typed = s.type_name == "Object" || s.type_name.starts_with("Object.");
            let type_name = s.type_name.clone();
            let mut entries = Vec::with_capacity(s.entries.len());
            for entry in std::mem::take(&mut s.entries) {
                let EntryExpr::StructField(mut f) = entry.expr else {
                    continue;
                };
                let field_type = typed.then(|| format!("{type_name}.{}", f.field));
                rewrite(&mut f.value, field_type.as_deref(), next_id);
                entries.push(IdedEntryExpr {
                    id: entry.id,
                    expr: EntryExpr::MapEntry(MapEntryExpr {
                        key: string(next_id, f.field),
                        value: f.value,
                        optional: f.optional,
                    }),
                });
            }
            e.expr = Expr::Map(MapExpr { entries });
        }
        // The items of a list field have the field's type name.
        Expr::List(l) => {
            for x in &mut l.elements {
                rewrite(x, expected, next_id);
            }
        }
        _ => super::cel::for_each_child_mut(e, |x| rewrite(x, None, next_id)),
    }
}

/// A CEL result as JSON: maps with their keys in order, timestamps in
/// RFC 3339, durations as Go prints them; what JSON cannot hold is an
/// error.
pub fn to_json(v: &Cel) -> Result<Value, String> {
    Ok(match v {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} cannot be represented in JSON"))?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Bytes(b) => {
            use base64::Engine;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        Cel::List(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Cel::Map(m) => {
            let mut sorted = BTreeMap::new();
            for (k, v) in m.map.iter() {
                sorted.insert(k.to_string(), to_json(v)?);
            }
            Value::Object(sorted.into_iter().collect::<Map<String, Value>>())
        }
        Cel::Timestamp(t) => Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        Cel::Duration(d) => Value::String(format!("{}s", d.num_milliseconds() as f64 / 1000.0)),
        other => return Err(format!("{} cannot be represented in JSON", other.type_of())),
    })
}
