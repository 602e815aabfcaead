//! A JSON decoder that sees what `serde_json::Value` hides: a key given
//! twice (serde_json silently keeps the last) and, with a schema, keys the
//! kind does not declare — which it drops, as kube's typed decoding does.
//! Findings come out in document order, the order kube reports them in.

use super::Issue;
use crate::schema::Schema;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Decodes `body`, dropping (and reporting) unknown fields when `schema`
/// is given and reporting duplicate keys (the last one wins).
pub fn decode_json(
    body: &[u8],
    schema: Option<Schema<'_>>,
) -> Result<(Value, Vec<Issue>), serde_json::Error> {
    // One UTF-8 check of the whole body, then a reader that trusts it:
    // reading bytes, serde_json checked every string on its own, which
    // cost more than the check of the whole. A body that is not UTF-8 is
    // read as bytes so that its error names the line and column as before.
    match std::str::from_utf8(body) {
        Ok(text) => decode_with(serde_json::Deserializer::from_str(text), schema),
        Err(_) => decode_with(serde_json::Deserializer::from_slice(body), schema),
    }
}

fn decode_with<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    schema: Option<Schema<'_>>,
) -> Result<(Value, Vec<Issue>), serde_json::Error> {
    let mut ctx = Ctx::default();
    let value = ValueSeed {
        ctx: &mut ctx,
        schema,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, ctx.issues))
}

#[derive(Default)]
struct Ctx {
    issues: Vec<Issue>,
    /// Where the decoder is (`spec.containers[0]`), kept as text and
    /// truncated on the way back out: only an issue ever reads it, and
    /// keeping it as owned segments cost a copy of every key.
    path: String,
}

impl Ctx {
    /// Runs `f` with `.field` (or `[index]`) appended to the path.
    fn within<T>(&mut self, seg: Seg<'_>, f: impl FnOnce(&mut Ctx) -> T) -> T {
        let len = self.path.len();
        match seg {
            Seg::Field(name) => {
                if !self.path.is_empty() {
                    self.path.push('.');
                }
                self.path.push_str(name);
            }
            Seg::Index(i) => {
                use std::fmt::Write;
                let _ = write!(self.path, "[{i}]");
            }
        }
        let out = f(self);
        self.path.truncate(len);
        out
    }

    /// `spec.template.spec.containers[0].image`
    fn path_with(&self, last: &str) -> String {
        let mut out = self.path.clone();
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(last);
        out
    }
}

enum Seg<'k> {
    Field(&'k str),
    Index(usize),
}

struct ValueSeed<'c, 's> {
    ctx: &'c mut Ctx,
    /// None: no schema here (anything goes, nothing is unknown).
    schema: Option<Schema<'s>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let items = self.schema.and_then(|s| s.items());
        let mut out = Vec::new();
        loop {
            let next = self.ctx.within(Seg::Index(out.len()), |ctx| {
                seq.next_element_seed(ValueSeed { ctx, schema: items })
            });
            match next? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        // Unknown keys already reported, so a repeated one is reported once.
        let mut unknown_seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = match self.schema {
                Some(s) => match s.member(&key) {
                    Some((c, _)) => Known(Some(c)),
                    None if open(s) => Known(None),
                    None => Unknown,
                },
                None => Known(None),
            };
            match child {
                Unknown => {
                    map.next_value::<IgnoredAny>()?;
                    if !unknown_seen.contains(&key) {
                        self.ctx
                            .issues
                            .push(Issue::Unknown(self.ctx.path_with(&key)));
                        unknown_seen.push(key);
                    }
                }
                Known(schema) => {
                    let value = self.ctx.within(Seg::Field(&key), |ctx| {
                        map.next_value_seed(ValueSeed { ctx, schema })
                    })?;
                    // One lookup: the last value wins, in the first one's
                    // place (as serde_json's own decoding keeps it).
                    match out.entry(key) {
                        serde_json::map::Entry::Occupied(mut e) => {
                            self.ctx
                                .issues
                                .push(Issue::Duplicate(self.ctx.path_with(e.key())));
                            e.insert(value);
                        }
                        serde_json::map::Entry::Vacant(e) => {
                            e.insert(value);
                        }
                    }
                }
            }
        }
        Ok(Value::Object(out))
    }
}

use Child::{Known, Unknown};
enum Child<'s> {
    Known(Option<Schema<'s>>),
    Unknown,
}

pub(super) fn open(s: Schema<'_>) -> bool {
    s.accepts_unknown_fields()
}
