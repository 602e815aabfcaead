//! The merge facts of the built-in definitions, overlaid on the schemas
//! k8s-openapi generates (which carry shapes and descriptions but not the
//! `x-kubernetes-*` merge extensions).

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One extension value: a string or a list of strings.
pub(super) enum Ext {
    S(&'static str),
    L(&'static [&'static str]),
}

/// (definition, field or "" for the definition itself, extensions).
pub(super) type Fact = (&'static str, &'static str, &'static [(&'static str, Ext)]);

#[path = "facts_generated.rs"]
#[rustfmt::skip]
mod generated;

/// Writes every known extension into `defs`, on the field's property (or on
/// the definition). Facts about definitions or fields that are not present
/// are skipped.
pub(super) fn overlay(defs: &mut BTreeMap<String, Value>) {
    for (def, field, exts) in generated::FACTS.iter() {
        let Some(d) = defs.get_mut(*def) else {
            continue;
        };
        let target = if field.is_empty() {
            Some(d)
        } else {
            d.get_mut("properties").and_then(|p| p.get_mut(*field))
        };
        let Some(Value::Object(target)) = target else {
            continue;
        };
        for (key, ext) in exts.iter() {
            let v = match ext {
                Ext::S(s) => json!(s),
                Ext::L(l) => json!(l),
            };
            target.insert((*key).to_string(), v);
        }
    }
}

#[cfg(test)]
pub(super) fn all() -> &'static [Fact] {
    &generated::FACTS
}
