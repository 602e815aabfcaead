//! The columns kubectl prints for RBAC objects: roles show when they were
//! created; bindings show their role and, wide, whom they bind.

use super::format::{array_at, str_at};
use super::kinds::{age, name, row};
use super::{Column, Row};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub const ROLE: &[Column] = &[
    Column::name(),
    Column::new("Created At", "date", "When the role was created.", 0),
];

pub fn role_row(o: &Value) -> Row {
    row(vec![
        name(o),
        json!(str_at(o, "/metadata/creationTimestamp")),
    ])
}

pub const ROLE_BINDING: &[Column] = &[
    Column::name(),
    Column::new(
        "Role",
        "string",
        "The role bound: Role/name or ClusterRole/name.",
        0,
    ),
    Column::age(),
    Column::new("Users", "string", "The users bound.", 1),
    Column::new("Groups", "string", "The groups bound.", 1),
    Column::new(
        "ServiceAccounts",
        "string",
        "The service accounts bound, as namespace/name.",
        1,
    ),
];

pub fn role_binding_row(o: &Value, now: DateTime<Utc>) -> Row {
    let subjects = array_at(o, "/subjects");
    let of_kind = |kind: &str| -> String {
        subjects
            .iter()
            .filter(|s| s["kind"] == kind)
            .map(|s| match kind {
                "ServiceAccount" => format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name")),
                _ => str_at(s, "/name").to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let role = format!(
        "{}/{}",
        str_at(o, "/roleRef/kind"),
        str_at(o, "/roleRef/name")
    );
    row(vec![
        name(o),
        json!(role),
        age(o, now),
        json!(of_kind("User")),
        json!(of_kind("Group")),
        json!(of_kind("ServiceAccount")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_rows_name_role_and_subjects() {
        let b = json!({"metadata": {"name": "rb", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                         {"kind": "ServiceAccount", "namespace": "ns", "name": "robot"}]});
        let now = "2026-01-01T00:05:00Z".parse().unwrap();
        let r = role_binding_row(&b, now);
        assert_eq!(r.cells[1], "ClusterRole/view");
        assert_eq!(r.cells[2], "5m");
        assert_eq!(r.cells[3], "alice, bob");
        assert_eq!(r.cells[4], "");
        assert_eq!(r.cells[5], "ns/robot");
        assert_eq!(role_row(&b).cells[1], "2026-01-01T00:00:00Z");
    }
}
