//! Printer columns given as data (a CRD's `additionalPrinterColumns`):
//! each a name, an OpenAPI type and a JSONPath into the object, read per
//! row. The path is kube's form (`.spec.replicas`,
//! `.status.conditions[?(@.type=="Ready")].status`), evaluated as RFC 9535
//! JSONPath by `serde_json_path`.

use super::{Column, Row};
use serde_json::Value;
use serde_json_path::JsonPath;
use std::borrow::Cow;

/// One column as a kind declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub name: String,
    /// string, integer, number, boolean or date.
    pub kind: String,
    pub format: String,
    pub description: String,
    pub priority: u8,
    pub json_path: String,
}

/// A kind's columns: Name first, then the declared ones, with their
/// paths compiled once.
#[derive(Debug)]
pub struct CustomColumns {
    specs: Vec<ColumnSpec>,
    pub(super) columns: Vec<Column>,
    paths: Vec<JsonPath>,
}

impl PartialEq for CustomColumns {
    fn eq(&self, other: &Self) -> bool {
        self.specs == other.specs
    }
}

impl Eq for CustomColumns {}

impl CustomColumns {
    /// Err names the column whose path does not parse.
    pub fn new(specs: Vec<ColumnSpec>) -> Result<Self, String> {
        let mut columns = vec![Column::name()];
        let mut paths = Vec::with_capacity(specs.len());
        for s in &specs {
            let path = JsonPath::parse(&rfc9535(&s.json_path))
                .map_err(|e| format!("column {:?}: jsonPath {:?}: {e}", s.name, s.json_path))?;
            paths.push(path);
            columns.push(Column {
                name: Cow::Owned(s.name.clone()),
                kind: Cow::Owned(s.kind.clone()),
                format: Cow::Owned(s.format.clone()),
                description: Cow::Owned(s.description.clone()),
                priority: s.priority,
            });
        }
        Ok(Self {
            specs,
            columns,
            paths,
        })
    }

    pub(super) fn row(&self, obj: &Value, now: chrono::DateTime<chrono::Utc>) -> Row {
        let mut cells = Vec::with_capacity(self.columns.len());
        cells.push(Value::String(crate::meta::name(obj).to_string()));
        for (spec, path) in self.specs.iter().zip(&self.paths) {
            let found = path.query(obj).first();
            cells.push(match (spec.kind.as_str(), found) {
                // kube shows a date column as the time since it.
                ("date", Some(ts @ Value::String(_))) => {
                    Value::String(super::format::since(Some(ts), now))
                }
                _ => cell(spec, found),
            });
        }
        Row {
            cells,
            conditions: None,
        }
    }
}

/// kube's paths start at the object without `$` (and may be wrapped in
/// braces, as kubectl's templates are).
fn rfc9535(path: &str) -> String {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    if path.starts_with('$') {
        path.to_string()
    } else {
        format!("${path}")
    }
}

/// A cell as kube fills it: nothing found is null; a value of the
/// column's type as is; anything else as its text.
fn cell(spec: &ColumnSpec, found: Option<&Value>) -> Value {
    match (spec.kind.as_str(), found) {
        (_, None) | (_, Some(Value::Null)) => Value::Null,
        ("integer", Some(v @ Value::Number(n))) if n.is_i64() || n.is_u64() => v.clone(),
        ("number", Some(v @ Value::Number(_))) | ("boolean", Some(v @ Value::Bool(_))) => v.clone(),
        (_, Some(Value::String(s))) => Value::String(s.clone()),
        (_, Some(other)) => Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, kind: &str, path: &str) -> ColumnSpec {
        ColumnSpec {
            name: name.into(),
            kind: kind.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        }
    }

    #[test]
    fn cells_follow_the_paths_and_types() {
        let cols = CustomColumns::new(vec![
            spec("Replicas", "integer", ".spec.replicas"),
            spec(
                "Ready",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ),
            spec("Image", "string", "{.spec.image}"),
            spec("Missing", "string", ".spec.nothing"),
            spec("Ports", "string", ".spec.ports"),
        ])
        .unwrap();
        let obj = json!({"metadata": {"name": "x"},
            "spec": {"replicas": 3, "image": "nginx", "ports": [80, 443]},
            "status": {"conditions": [{"type": "Other", "status": "False"},
                                      {"type": "Ready", "status": "True"}]}});
        let row = cols.row(&obj, chrono::Utc::now());
        assert_eq!(
            row.cells,
            vec![
                json!("x"),
                json!(3),
                json!("True"),
                json!("nginx"),
                Value::Null,
                json!("[80,443]")
            ]
        );
        let names: Vec<&str> = cols.columns.iter().map(|c| c.name.as_ref()).collect();
        assert_eq!(
            names,
            ["Name", "Replicas", "Ready", "Image", "Missing", "Ports"]
        );
    }

    #[test]
    fn a_bad_path_is_refused_with_its_column() {
        let err = CustomColumns::new(vec![spec("Bad", "string", ".spec[")]).unwrap_err();
        assert!(err.contains("\"Bad\""), "{err}");
    }
}
