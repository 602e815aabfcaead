//! The field sets of recent creates, by the shape that decides them.
//!
//! A create owns every tracked path of its object, and which paths those
//! are follows from the object's shape alone — its keys, and where it holds
//! objects, lists and scalars — never from a scalar's value, as long as it
//! holds no list (the items of set and map lists are named by their
//! values). Objects of one shape are created over and over (a controller's
//! ConfigMaps, a load test's objects), and walking each against its schema
//! was the largest part of recording a create's ownership; so each thread
//! remembers the sets, with their FieldsV1, of a few recent shapes.

use super::set::FieldSet;
use crate::schema::Schema;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::VecDeque;

/// Shapes each thread remembers.
const RECENT: usize = 8;

/// A shape larger than this is not remembered (nor compared).
const MAX_SHAPE: usize = 4096;

/// What decides a create's set besides the object: its schema and which
/// subtrees the writer skips.
#[derive(PartialEq, Eq)]
pub(super) struct Context<'a> {
    pub schema: Option<(u64, u32)>,
    pub subresource: &'a str,
    pub status_is_separate: bool,
}

impl Context<'_> {
    pub fn new<'a>(
        schema: Option<Schema<'_>>,
        subresource: &'a str,
        status_is_separate: bool,
    ) -> Context<'a> {
        Context {
            schema: schema.map(|s| s.identity()),
            subresource,
            status_is_separate,
        }
    }
}

struct Memo {
    schema: Option<(u64, u32)>,
    subresource: String,
    status_is_separate: bool,
    shape: Vec<u8>,
    set: FieldSet,
    fields_v1: Value,
}

impl Memo {
    fn matches(&self, cx: &Context<'_>, shape: &[u8]) -> bool {
        self.schema == cx.schema
            && self.subresource == cx.subresource
            && self.status_is_separate == cx.status_is_separate
            && self.shape == shape
    }
}

thread_local! {
    static MEMOS: RefCell<VecDeque<Memo>> = const { RefCell::new(VecDeque::new()) };
}

/// The shape of `obj`: an exact, unambiguous encoding of its keys and of
/// the kind of every value. None when it holds a list, or is too large to
/// be worth remembering.
pub(super) fn shape_of(obj: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    encode(obj, &mut out).then_some(out)
}

fn encode(v: &Value, out: &mut Vec<u8>) -> bool {
    match v {
        Value::Null => out.push(b'n'),
        Value::Bool(_) => out.push(b'b'),
        Value::Number(_) => out.push(b'#'),
        Value::String(_) => out.push(b's'),
        Value::Array(_) => return false,
        Value::Object(map) => {
            out.push(b'{');
            out.extend_from_slice(&(map.len() as u32).to_le_bytes());
            for (key, child) in map {
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key.as_bytes());
                if !encode(child, out) {
                    return false;
                }
            }
        }
    }
    out.len() <= MAX_SHAPE
}

/// The set and FieldsV1 remembered for `shape` in `cx`, if any.
pub(super) fn recall(cx: &Context<'_>, shape: &[u8]) -> Option<(FieldSet, Value)> {
    MEMOS.with_borrow_mut(|memos| {
        let i = memos.iter().position(|m| m.matches(cx, shape))?;
        let hit = memos.remove(i).expect("found above");
        let out = (hit.set.clone(), hit.fields_v1.clone());
        memos.push_front(hit);
        Some(out)
    })
}

/// Remembers what a create of `shape` in `cx` owns.
pub(super) fn remember(cx: &Context<'_>, shape: Vec<u8>, set: &FieldSet, fields_v1: &Value) {
    MEMOS.with_borrow_mut(|memos| {
        if memos.len() == RECENT {
            memos.pop_back();
        }
        memos.push_front(Memo {
            schema: cx.schema,
            subresource: cx.subresource.to_string(),
            status_is_separate: cx.status_is_separate,
            shape,
            set: set.clone(),
            fields_v1: fields_v1.clone(),
        });
    });
}
