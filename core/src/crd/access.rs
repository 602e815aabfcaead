//! Which parts of a variable a set of expressions reads, so that only
//! those become CEL values: a policy whose rules read
//! `object.metadata.name` and `object.data` does not convert the object's
//! managed fields, annotations and status on every write it judges.
//! A variable read in any way other than field by field (compared whole,
//! passed to a function, iterated) is converted whole.

use super::cel::{for_each_child, to_val};
use cel::common::ast::{Expr, IdedExpr};
use cel::common::types::{CelMap, CelMapKey, CelNull};
use cel::common::value::Val;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// How much of a value is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Access {
    /// Nothing.
    #[default]
    None,
    /// All of it.
    Whole,
    /// Only these fields, each as much as its own access says.
    Fields(BTreeMap<Box<str>, Access>),
}

impl Access {
    /// What `e` reads of the variable `var`.
    pub fn of(e: &IdedExpr, var: &str) -> Access {
        let mut out = Access::None;
        visit(e, var, &mut out);
        out
    }

    /// What either reads.
    pub fn union(self, other: Access) -> Access {
        match (self, other) {
            (Access::None, x) | (x, Access::None) => x,
            (Access::Whole, _) | (_, Access::Whole) => Access::Whole,
            (Access::Fields(mut a), Access::Fields(b)) => {
                for (k, v) in b {
                    let merged = a.remove(&k).unwrap_or_default().union(v);
                    a.insert(k, merged);
                }
                Access::Fields(a)
            }
        }
    }

    fn add_path(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Access::Whole;
            return;
        };
        match self {
            Access::Whole => {}
            Access::None => {
                *self = Access::Fields(BTreeMap::new());
                self.add_path(path);
            }
            Access::Fields(m) => m.entry((*first).into()).or_default().add_path(rest),
        }
    }

    /// `v` as CEL sees it, as far as this access reads it.
    pub(super) fn project<'a>(&self, v: &'a Value) -> Box<dyn Val + 'a> {
        match (self, v) {
            (Access::None, _) => Box::new(CelNull),
            (Access::Fields(fields), Value::Object(map)) => {
                let m: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = fields
                    .iter()
                    .filter_map(|(f, access)| map.get_key_value(&**f).map(|kv| (kv, access)))
                    .map(|((k, v), access)| (CelMapKey::from(k.as_str()), access.project(v)))
                    .collect();
                Box::new(CelMap::from(m))
            }
            _ => to_val(v, None),
        }
    }
}

/// The fields a chain of selections on `var` reads (`var.a.b` → a, b),
/// if `e` is one.
fn chain<'e>(e: &'e IdedExpr, var: &str) -> Option<Vec<&'e str>> {
    let mut fields = Vec::new();
    let mut at = e;
    loop {
        match &at.expr {
            Expr::Select(s) => {
                fields.push(s.field.as_str());
                at = &s.operand;
            }
            Expr::Ident(n) if n == var => {
                fields.reverse();
                return Some(fields);
            }
            _ => return None,
        }
    }
}

fn visit(e: &IdedExpr, var: &str, out: &mut Access) {
    if let Some(path) = chain(e, var) {
        out.add_path(&path);
        return;
    }
    match &e.expr {
        Expr::Ident(n) if n == var => *out = Access::Whole,
        _ => for_each_child(e, |x| visit(x, var, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::expression::{Expression, Variables};
    use serde_json::json;

    const VARS: &[&str] = &["object", "oldObject"];

    fn access(source: &str, var: &str) -> Access {
        Expression::compile(source, VARS).unwrap().access(var)
    }

    fn fields(entries: Vec<(&str, Access)>) -> Access {
        Access::Fields(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    #[test]
    fn field_by_field_reads_are_projected() {
        let rules = "object.metadata.name.size() < 200 && (!has(object.metadata.labels) || !('x' in object.metadata.labels)) && (!has(object.data) || object.data.size() < 100)";
        assert_eq!(
            access(rules, "object"),
            fields(vec![
                ("data", Access::Whole),
                (
                    "metadata",
                    fields(vec![("labels", Access::Whole), ("name", Access::Whole)])
                ),
            ])
        );
        assert_eq!(access(rules, "oldObject"), Access::None);
        assert_eq!(access("object == oldObject", "object"), Access::Whole);
        assert_eq!(access("size(object) > 1", "object"), Access::Whole);
        assert_eq!(
            access("object.spec.containers.all(c, c.image != '')", "object"),
            fields(vec![("spec", fields(vec![("containers", Access::Whole)]))])
        );
        assert_eq!(
            access("object.metadata.name == 'a'", "object")
                .union(access("object.metadata == oldObject.metadata", "object")),
            fields(vec![("metadata", Access::Whole)])
        );
        // The projection answers as the whole value would.
        let obj = json!({"metadata": {"name": "n", "labels": {"y": "1"}, "managedFields": [{"manager": "m"}]},
            "data": {"k": "v"}});
        let e = Expression::compile(rules, VARS).unwrap();
        let projected = Variables::default().bind_read("object", Some(&obj), &e.access("object"));
        let whole = Variables::default().bind("object", Some(&obj));
        assert!(e.evaluate_bool(&projected, &mut 1000).unwrap());
        assert!(e.evaluate_bool(&whole, &mut 1000).unwrap());
    }
}
