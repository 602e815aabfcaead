//! Dropping unknown fields from an already decoded object (a YAML body, the
//! result of a patch), reporting them in the order kube does: depth first
//! with keys sorted, as Go walks a decoded map.

use super::decode::open;
use super::Issue;
use crate::schema::Schema;
use serde_json::Value;

/// Removes the fields `schema` does not declare; returns them as issues.
pub fn prune(value: &mut Value, schema: Schema<'_>) -> Vec<Issue> {
    let mut issues = Vec::new();
    walk(value, schema, &mut String::new(), &mut issues);
    issues
}

fn walk(value: &mut Value, schema: Schema<'_>, path: &mut String, issues: &mut Vec<Issue>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<String> = map.keys().cloned().collect();
            keys.sort();
            for key in keys {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
                match schema.member(&key) {
                    Some((child, _)) => {
                        if let Some(v) = map.get_mut(&key) {
                            walk(v, child, path, issues);
                        }
                    }
                    None if open(schema) => {}
                    None => {
                        map.shift_remove(&key);
                        issues.push(Issue::Unknown(path.clone()));
                    }
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.items() else {
                return;
            };
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, item_schema, path, issues);
                path.truncate(len);
            }
        }
        _ => {}
    }
}
