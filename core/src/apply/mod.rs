//! Server-side apply and field ownership (`metadata.managedFields`).
//!
//! Every write records who set which fields: a create, update or patch is
//! an `Update` by its field manager and takes the fields it changed; an
//! apply (`application/apply-patch+yaml`) is an `Apply` that owns exactly
//! the fields of its configuration, merges them into the live object,
//! drops the fields it applied before and no longer does (unless someone
//! else owns them), and refuses — 409 — to change fields another manager
//! owns unless forced. The semantics are structured-merge-diff's.

mod created;
mod diff;
pub mod managed;
mod merge;
pub mod path;
pub mod set;
pub mod typed;

#[cfg(test)]
mod tests;

use crate::schema::Schema;
use crate::status::{ApiError, StatusCause, StatusDetails};
use managed::{Entry, ManagedFields, Operation};
use path::{Display, Path, PathElement};
use serde_json::{json, Value};
use set::FieldSet;
use typed::{Comparison, Fields};

pub use managed::manager_from_user_agent;
pub use merge::merge;

/// Who writes, how, and against which schema.
pub struct Writer<'a> {
    pub schema: Option<Schema<'a>>,
    pub manager: &'a str,
    /// The request's group/version (`apps/v1`, `v1`).
    pub api_version: &'a str,
    /// `""` for the main resource, `"status"` for the status subresource.
    pub subresource: &'a str,
    /// The kind has a status subresource: the main resource's managers do
    /// not own status.
    pub status_is_separate: bool,
    /// RFC 3339 timestamp for entries this write touches.
    pub now: &'a str,
}

/// How many Update entries an object keeps before the oldest are folded
/// together (kube's default).
const MAX_UPDATE_MANAGERS: usize = 10;

/// Metadata kube never tracks ownership of.
const STRIPPED: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
    &["metadata", "deletionTimestamp"],
    &["metadata", "deletionGracePeriodSeconds"],
];

impl Writer<'_> {
    fn entry(&self, operation: Operation) -> Entry {
        Entry::new(
            self.manager,
            operation,
            self.api_version,
            Some(self.now.to_string()),
            self.subresource,
        )
    }

    /// Whether a struct field is walked at all for ownership: never
    /// managedFields, and status only where this endpoint writes it.
    fn tracked(&self, p: &[PathElement]) -> bool {
        let in_status = is_field(&p[0], "status");
        let out_of_scope = match self.subresource {
            "status" => !in_status,
            _ => self.status_is_separate && in_status,
        };
        !out_of_scope && !is_managed_fields(p)
    }

    /// The fields of `obj` that ownership is tracked for.
    fn owned_fields<'v>(&self, obj: &'v Value) -> Result<Fields<'v>, typed::TypeError> {
        let mut f = typed::fields(obj, self.schema, &|p| !self.tracked(p))?;
        f.retain(|p, _| !is_stripped(p));
        Ok(f)
    }

    /// The tracked fields of a new object, as a set: what a create takes.
    /// The same set as every path [`Writer::changes`] finds added from
    /// nothing, built without listing the paths first (recording the
    /// ownership of a create was a fifth of its CPU); with its FieldsV1
    /// when the object's shape was seen lately ([`created`]).
    fn created_fields(&self, obj: &Value) -> Result<(FieldSet, Option<Value>), typed::TypeError> {
        let Some(shape) = created::shape_of(obj) else {
            return Ok((self.walk_created(obj)?, None));
        };
        let cx = created::Context::new(self.schema, self.subresource, self.status_is_separate);
        if let Some((set, fields_v1)) = created::recall(&cx, &shape) {
            return Ok((set, Some(fields_v1)));
        }
        let set = self.walk_created(obj)?;
        let fields_v1 = set.to_fields_v1();
        created::remember(&cx, shape, &set, &fields_v1);
        Ok((set, Some(fields_v1)))
    }

    fn walk_created(&self, obj: &Value) -> Result<FieldSet, typed::TypeError> {
        let mut owned = Owned(FieldSet::new());
        typed::walk_into(obj, self.schema, &mut owned, &|p| !self.tracked(p))?;
        Ok(owned.0)
    }

    /// What changed, among the tracked fields, from `old` to `new`.
    fn changes(&self, old: &Value, new: &Value) -> Result<Comparison, typed::TypeError> {
        let mut c = diff::diff(old, new, self.schema, &|p| !self.tracked(p))?;
        for list in [&mut c.added, &mut c.modified, &mut c.removed] {
            list.retain(|p| !is_stripped(p));
        }
        Ok(c)
    }
}

/// A walk's paths as a set, without the metadata kube never tracks.
struct Owned(FieldSet);

impl typed::Sink<'_> for Owned {
    fn put(&mut self, path: &Path, _: typed::Entry<'_>) {
        if !is_stripped(path) {
            self.0.insert(path);
        }
    }

    fn put_if_absent(&mut self, path: &Path, entry: typed::Entry<'_>) {
        self.put(path, entry);
    }
}

/// Metadata kube never tracks ownership of.
fn is_stripped(p: &[PathElement]) -> bool {
    STRIPPED
        .iter()
        .any(|s| s.len() == p.len() && s.iter().zip(p).all(|(name, pe)| is_field(pe, name)))
}

fn is_field(pe: &PathElement, name: &str) -> bool {
    matches!(pe, PathElement::Field(f) if f == name)
}

/// `metadata.managedFields` itself: never owned, never walked.
fn is_managed_fields(p: &[PathElement]) -> bool {
    p.len() == 2 && is_field(&p[0], "metadata") && is_field(&p[1], "managedFields")
}

/// A key field of a list item (`name` under `k:{"name":…}`): it goes with
/// its item, never alone.
fn is_key_field(p: &Path) -> bool {
    match p.as_slice() {
        [.., PathElement::Key(keys), PathElement::Field(f)] => keys.iter().any(|(k, _)| k == f),
        _ => false,
    }
}

/// The managers an update starts from: the ones the request carries when
/// it changed them (a client may rewrite managedFields), else the live ones.
fn starting_managers(old: Option<&Value>, new: &Value) -> ManagedFields {
    let given = managed::of(new);
    let live = old.and_then(managed::of);
    match given {
        Some(g) if Some(g) != live => ManagedFields::decode(new),
        _ => old.map(ManagedFields::decode_stored).unwrap_or_default(),
    }
}

fn write(obj: &mut Value, managers: ManagedFields) {
    let encoded = managers.encode();
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if encoded.as_array().is_some_and(Vec::is_empty) {
            md.shift_remove("managedFields");
        } else {
            md.insert("managedFields".into(), encoded);
        }
    }
}

/// Records a non-apply write of `new` (over `old`, None on create) by
/// `w.manager`: it takes the fields it added or changed from everyone,
/// and fields it removed leave every manager. An object that does not fit
/// its schema keeps its managed fields as they were.
pub fn update(w: &Writer<'_>, old: Option<&Value>, new: &mut Value) {
    let mut managers = starting_managers(old, new);
    // `encoded`: the FieldsV1 of `changed`, when a create's memo has it.
    let (changed, removed, encoded) = match old {
        None => match w.created_fields(new) {
            Ok((set, encoded)) => (set, FieldSet::new(), encoded),
            Err(_) => return,
        },
        Some(old) => match w.changes(old, new) {
            Ok(cmp) => (
                FieldSet::from_paths(cmp.added.iter().chain(&cmp.modified)),
                FieldSet::from_paths(&cmp.removed),
                None,
            ),
            Err(_) => return,
        },
    };
    let me = w.entry(Operation::Update);
    for e in managers.0.iter_mut() {
        e.subtract(&removed);
        if !e.same_manager(&me) {
            e.subtract(&changed);
        }
    }
    if !changed.is_empty() {
        match managers.find_mut(&me) {
            Some(e) => {
                let mine = e.fields().union(&changed);
                e.set_fields(mine);
                e.time = me.time.clone();
            }
            None => {
                let mut e = me;
                match encoded {
                    Some(v) => e.set_fields_encoded(changed, v),
                    None => e.set_fields(changed),
                }
                managers.0.push(e);
            }
        }
    }
    managers.cap_updaters(MAX_UPDATE_MANAGERS);
    write(new, managers);
}

/// Applies `config` over `live` (None: the object does not exist yet and
/// is created from the configuration) for `w.manager`. Returns the new
/// object with its managed fields, or the 409 conflict kube answers.
pub fn apply(
    w: &Writer<'_>,
    live: Option<&Value>,
    config: &Value,
    force: bool,
    describe: &str,
) -> Result<Value, ApiError> {
    if managed::of(config).is_some() {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let typed_error = |e: typed::TypeError| {
        ApiError::new(
            500,
            "",
            format!("failed to create typed patch object ({describe}): {}", e.0),
        )
    };
    let config_fields = w.owned_fields(config).map_err(typed_error)?;
    let skeleton =
        json!({"apiVersion": config.get("apiVersion"), "kind": config.get("kind"), "metadata": {}});
    let live_value = live.unwrap_or(&skeleton);
    let mut managers = live.map(ManagedFields::decode_stored).unwrap_or_default();
    let mut merged = merge::merge(live_value, config, w.schema).map_err(typed_error)?;

    let me = w.entry(Operation::Apply);
    let new_set = FieldSet::from_paths(
        config_fields
            .iter()
            .filter(|(_, e)| **e != typed::Entry::Map)
            .map(|(p, _)| p),
    );
    let last_set = managers
        .find_mut(&me)
        .map(|e| e.fields().clone())
        .unwrap_or_default();
    // Fields this applier gave up, unless someone — another manager, or
    // this configuration through a field below it (a map whose entries it
    // still applies) — still owns them or something under them. Parents
    // first: removing an item makes its fields' removal a no-op.
    for p in last_set.difference(&new_set).paths().iter() {
        let still_owned = new_set.has_prefix(p)
            || managers
                .0
                .iter()
                .any(|e| !e.same_manager(&me) && e.fields().has_prefix(p));
        if !still_owned && !is_key_field(p) {
            merge::remove(&mut merged, p, w.schema);
        }
    }

    let cmp = w.changes(live_value, &merged).map_err(typed_error)?;
    let changed = FieldSet::from_paths(cmp.added.iter().chain(&cmp.modified));
    let removed = FieldSet::from_paths(&cmp.removed);
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for e in managers.0.iter().filter(|e| !e.same_manager(&me)) {
        for p in e.fields().intersection(&changed).paths() {
            conflicts.push((e.describe(), p));
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(conflicts));
    }
    for e in managers.0.iter_mut() {
        if !e.same_manager(&me) {
            e.subtract(&changed);
            e.subtract(&removed);
        }
    }
    // An apply that changes no field keeps its entry's time (so applying
    // the same configuration again changes nothing at all).
    let object_changed = live.is_none() || merged != *live_value;
    match managers.find_mut(&me) {
        Some(e) => {
            e.set_fields(new_set);
            if object_changed {
                e.time = me.time.clone();
            }
            e.api_version = me.api_version.clone();
        }
        None => {
            let mut e = me;
            e.set_fields(new_set);
            managers.0.push(e);
        }
    }
    write(&mut merged, managers);
    Ok(merged)
}

/// kube's 409 for apply conflicts, one cause per field.
fn conflict_error(mut conflicts: Vec<(String, Path)>) -> ApiError {
    conflicts.sort();
    let causes: Vec<StatusCause> = conflicts
        .iter()
        .map(|(m, p)| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {m}"),
            field: Display(p).to_string(),
        })
        .collect();
    let message = if conflicts.len() == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            conflicts[0].0,
            Display(&conflicts[0].1)
        )
    } else {
        let mut lines = Vec::new();
        let mut last: Option<&str> = None;
        for (m, p) in &conflicts {
            if last != Some(m.as_str()) {
                lines.push(format!("conflicts with {m}:"));
                last = Some(m);
            }
            lines.push(format!("- {}", Display(p)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError {
        details: Some(Box::new(StatusDetails {
            causes,
            ..StatusDetails::default()
        })),
        ..ApiError::new(409, "Conflict", message)
    }
}
