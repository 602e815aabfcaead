//! `metadata.managedFields`: who owns which fields, as entries of
//! (manager, operation, apiVersion, time, subresource, FieldsV1).

use super::set::FieldSet;
use crate::meta;
use crate::status::go_quote;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One manager's entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: String,
    fields: FieldSet,
    /// The entry's FieldsV1 as it was read, kept while `fields` still says
    /// the same: most writes leave most managers alone, and re-encoding
    /// their sets was a large share of recording ownership.
    encoded: Option<Value>,
}

impl Entry {
    pub fn new(
        manager: &str,
        operation: Operation,
        api_version: &str,
        time: Option<String>,
        subresource: &str,
    ) -> Entry {
        Entry {
            manager: manager.to_string(),
            operation,
            api_version: api_version.to_string(),
            time,
            subresource: subresource.to_string(),
            fields: FieldSet::new(),
            encoded: None,
        }
    }

    pub fn fields(&self) -> &FieldSet {
        &self.fields
    }

    pub fn set_fields(&mut self, fields: FieldSet) {
        self.fields = fields;
        self.encoded = None;
    }

    /// [`Self::set_fields`] with the set's FieldsV1 already at hand.
    pub(super) fn set_fields_encoded(&mut self, fields: FieldSet, encoded: Value) {
        self.fields = fields;
        self.encoded = Some(encoded);
    }

    /// Gives up the paths of `other` (those it lost to another writer, or
    /// that no longer exist).
    pub fn subtract(&mut self, other: &FieldSet) {
        if self.fields.subtract(other) {
            self.encoded = None;
        }
    }

    /// Who this entry is: appliers are one manager whatever apiVersion they
    /// applied with; updaters are one per apiVersion.
    pub fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// How kube names a manager in conflict messages.
    pub fn describe(&self) -> String {
        let mut s = go_quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", go_quote(&self.subresource));
        }
        match self.operation {
            Operation::Update => format!("{s} using {}", self.api_version),
            Operation::Apply => s,
        }
    }
}

/// The entries of an object, in kube's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManagedFields(pub Vec<Entry>);

impl ManagedFields {
    /// Reads `metadata.managedFields` of a request body; malformed entries
    /// are dropped (kube resets managed fields it cannot decode).
    pub fn decode(obj: &Value) -> ManagedFields {
        Self::read(obj, false)
    }

    /// Reads the managed fields of a stored object, which this module
    /// wrote in canonical form: entries remember their encoding.
    pub fn decode_stored(obj: &Value) -> ManagedFields {
        Self::read(obj, true)
    }

    fn read(obj: &Value, keep_encoded: bool) -> ManagedFields {
        let Some(list) = of(obj).and_then(Value::as_array) else {
            return ManagedFields::default();
        };
        let mut out = Vec::new();
        for e in list {
            let operation = match e.get("operation").and_then(Value::as_str) {
                Some("Apply") => Operation::Apply,
                Some("Update") => Operation::Update,
                _ => continue,
            };
            let raw = e.get("fieldsV1");
            let Some(fields) = raw.map_or(Some(FieldSet::new()), FieldSet::from_fields_v1) else {
                continue;
            };
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
            let mut entry = Entry::new(
                s("manager"),
                operation,
                s("apiVersion"),
                e.get("time").and_then(Value::as_str).map(str::to_string),
                s("subresource"),
            );
            entry.fields = fields;
            entry.encoded = raw.filter(|_| keep_encoded).cloned();
            out.push(entry);
        }
        ManagedFields(out)
    }

    /// The JSON list, sorted as kube sorts it (operation, time, manager,
    /// apiVersion, subresource); managers that own nothing are dropped.
    pub fn encode(self) -> Value {
        let mut entries: Vec<Entry> = self
            .0
            .into_iter()
            .filter(|e| !e.fields.is_empty())
            .collect();
        entries.sort_by(|a, b| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| a.time.cmp(&b.time))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| a.api_version.cmp(&b.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        Value::Array(
            entries
                .into_iter()
                .map(|e| {
                    // Built key by key in kube's order: each insert is one
                    // hashed lookup, where indexing a Value is two.
                    let mut v = Map::with_capacity(7);
                    v.insert("manager".into(), Value::String(e.manager));
                    v.insert("operation".into(), e.operation.as_str().into());
                    v.insert("apiVersion".into(), Value::String(e.api_version));
                    if let Some(t) = e.time {
                        v.insert("time".into(), Value::String(t));
                    }
                    v.insert("fieldsType".into(), "FieldsV1".into());
                    let fields = e.encoded.unwrap_or_else(|| e.fields.to_fields_v1());
                    v.insert("fieldsV1".into(), fields);
                    if !e.subresource.is_empty() {
                        v.insert("subresource".into(), Value::String(e.subresource));
                    }
                    Value::Object(v)
                })
                .collect(),
        )
    }

    /// Keeps at most `max` Update entries: the oldest are folded, per
    /// apiVersion, into one `ancient-changes` entry (kube's cap, so an
    /// object written by many clients does not grow without bound).
    pub fn cap_updaters(&mut self, max: usize) {
        let mut updaters: Vec<usize> = (0..self.0.len())
            .filter(|&i| self.0[i].operation == Operation::Update)
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by(|&a, &b| {
            let (a, b) = (&self.0[a], &self.0[b]);
            a.time.cmp(&b.time).then_with(|| a.manager.cmp(&b.manager))
        });
        let mut count = updaters.len();
        let mut first_of_version: Vec<(String, usize)> = Vec::new();
        let mut drop: Vec<usize> = Vec::new();
        for i in updaters {
            if count <= max {
                break;
            }
            let version = self.0[i].api_version.clone();
            match first_of_version.iter().find(|(v, _)| *v == version) {
                Some(&(_, bucket)) => {
                    let merged = self.0[bucket].fields.union(&self.0[i].fields);
                    let time = self.0[i].time.clone();
                    let b = &mut self.0[bucket];
                    b.manager = ANCIENT_CHANGES.to_string();
                    b.subresource = String::new();
                    b.set_fields(merged);
                    b.time = time;
                    drop.push(i);
                    count -= 1;
                }
                None => first_of_version.push((version, i)),
            }
        }
        drop.sort_unstable();
        for i in drop.into_iter().rev() {
            self.0.remove(i);
        }
    }

    pub fn find_mut(&mut self, who: &Entry) -> Option<&mut Entry> {
        self.0.iter_mut().find(|e| e.same_manager(who))
    }
}

/// The manager the oldest updates are folded into past the cap.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// An object's `metadata.managedFields`, if it has any. (Looked up by
/// key: a JSON pointer is parsed, with an allocation per segment, on
/// every call, and every write asks.)
pub fn of(obj: &Value) -> Option<&Value> {
    meta::member(meta::metadata(obj)?, "managedFields")
}

/// The manager name kube derives from a User-Agent when `fieldManager` is
/// not given: what precedes the first `/`, printable characters only, at
/// most 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let head = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in head.chars().filter(|c| !c.is_control()) {
        if out.len() >= 128 {
            break;
        }
        out.push(c);
    }
    out
}
