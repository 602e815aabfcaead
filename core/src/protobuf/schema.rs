//! The shape of the generated schema table and the look-ups over it.
//!
//! The table itself (`schema_generated.rs`) is data derived from the
//! Kubernetes generated.proto files by `core/tools/gen_protobuf_schema.py`;
//! keeping it as plain static arrays means no build script, no protoc and
//! no per-kind Rust types, which is all a JSON-native server needs.

/// What a field holds on the wire and how it renders as JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    /// `string`: a JSON string (invalid UTF-8 is replaced, as Go's encoder does).
    Str,
    /// `bytes`: a base64 JSON string, like Go's `[]byte`.
    Bytes,
    Bool,
    I32,
    I64,
    F64,
    /// A nested message, by index into `MESSAGES`.
    Msg(u16),
    /// meta/v1 Time: RFC 3339 with seconds precision, `null` when zero.
    Time,
    /// meta/v1 MicroTime: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// meta/v1 Duration: a Go duration string such as `1h2m3s`.
    // No served kind references Duration or RawExtension yet; the generator
    // emits them as soon as one does, and the renderers are tested directly.
    #[allow(dead_code)]
    Duration,
    /// meta/v1 FieldsV1: its raw bytes are JSON and are inlined as such.
    FieldsV1,
    /// util/intstr IntOrString: a number or a string, by its `type`.
    IntOrString,
    /// api/resource Quantity: its canonical string.
    Quantity,
    /// runtime.RawExtension: embedded JSON, or a nested protobuf object.
    #[allow(dead_code)]
    RawExtension,
    /// A `+protobuf.nullable` wrapper (`ExtraValue`): a bare string array.
    StrList,
}

/// How many values a field holds and where they go in the JSON object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Card {
    /// One value under the field's key.
    One,
    /// A JSON array; scalars may arrive packed or one per record.
    Rep,
    /// `map<string, T>` as repeated {1: key, 2: value} entries: a JSON object.
    Map,
    /// A Go struct embedded with `json:",inline"`: its fields are merged into
    /// the parent object instead of living under a key of their own.
    Inline,
}

/// One field of a message.
#[derive(Debug)]
pub(super) struct Field {
    pub tag: u32,
    pub json: &'static str,
    pub ty: Ty,
    pub card: Card,
    /// Go's JSON encoder drops this field's zero value (`omitempty` on a
    /// non-pointer field), although protobuf always carries it.
    pub omit_zero: bool,
}

/// One message: its dotted proto name (for errors) and its fields by tag.
#[derive(Debug)]
pub(super) struct Message {
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// A top-level kind a request body may carry.
#[derive(Debug)]
pub(super) struct Root {
    /// "" matches any apiVersion (kinds every group version registers).
    pub api_version: &'static str,
    pub kind: &'static str,
    pub msg: u16,
}

#[path = "schema_generated.rs"]
#[rustfmt::skip]
mod generated;

/// The message at `index`; indices in the table are checked by tests.
pub(super) fn message(index: u16) -> &'static Message {
    &generated::MESSAGES[usize::from(index)]
}

impl Message {
    /// The field with `tag`; fields are sorted by tag in the table.
    pub(super) fn field(&self, tag: u32) -> Option<&'static Field> {
        self.fields
            .binary_search_by_key(&tag, |f| f.tag)
            .ok()
            .map(|i| &self.fields[i])
    }
}

/// The message for a body's TypeMeta, if kubeshard knows the kind.
pub(super) fn root(api_version: &str, kind: &str) -> Option<&'static Message> {
    generated::ROOTS
        .iter()
        .find(|r| r.kind == kind && (r.api_version.is_empty() || r.api_version == api_version))
        .map(|r| message(r.msg))
}

#[cfg(test)]
pub(super) fn all_messages() -> &'static [Message] {
    &generated::MESSAGES
}

#[cfg(test)]
pub(super) fn all_roots() -> &'static [Root] {
    &generated::ROOTS
}
