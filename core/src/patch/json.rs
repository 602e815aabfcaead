//! JSON patch (RFC 6902, `application/json-patch+json`) with the bounds
//! kube-apiserver puts on it, and one of kubeshard's own.
//!
//! The operations themselves are the `json-patch` crate's; what this adds
//! is what a 3 MiB body of them may cost. A patch may hold at most
//! [`MAX_OPERATIONS`] operations (kube's `maxJSONPatchOperations`), and
//! `copy` operations together may add at most [`MAX_COPY_BYTES`] of
//! JSON to the document (kube's `JSONPatchMaxCopyBytes`, enforced by
//! evanphx/json-patch's `AccumulatedCopySizeLimit`). Without the second
//! bound ~30 operations `{"op":"copy","from":"/data","path":"/data/xN"}`
//! double the document each time, past any memory. A copy's size is
//! measured before anything is copied, by encoding the source into a
//! counting sink that gives up once past the remaining budget: measuring
//! allocates nothing in proportion to the value, and the measuring of all
//! the copies that go through adds up to at most the budget.
//!
//! Nesting is bounded too ([`MAX_DEPTH`], the depth serde_json reads
//! back): copies and moves that put a value under its own deepest object
//! nest the document hundreds of thousands of levels deep within the copy
//! budget, and the recursive walks of `Value` (drop among them) overflow
//! the stack and abort the process on such a document.

use crate::status::ApiError;
use json_patch::PatchOperation;
/// The patch document and an operation's failure, as `json-patch` has them.
pub use json_patch::{Patch, PatchError};
use serde_json::Value;
use std::fmt;
use std::io;

/// The most operations a JSON patch may hold (kube's
/// `maxJSONPatchOperations`).
pub const MAX_OPERATIONS: usize = 10_000;

/// The most bytes of JSON that the `copy` operations of one patch may add
/// together (kube's default `JSONPatchMaxCopyBytes`).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The deepest a patch may nest the document: the most containers on one
/// path from the root (a scalar adds none). serde_json reads back at most
/// 127 (its recursion limit is 128), so a deeper object could be stored
/// but never decoded again; and `copy` and `move` can otherwise nest a
/// document hundreds of thousands of levels deep within the copy budget,
/// which overflows the stack of every recursive walk of a `Value`
/// (cloning, encoding, dropping). kube has no such bound of its own.
pub const MAX_DEPTH: usize = 127;

/// How many values the nesting checks of `move` operations may visit in
/// one patch. A move that might nest too deep is checked by walking the
/// document or the moved value; moves are free otherwise, so these walks
/// have their own budget.
pub const MOVE_CHECK_BUDGET: usize = 4 * MAX_COPY_BYTES;

/// Why a JSON patch did not apply.
#[derive(Debug)]
pub enum Error {
    /// More than [`MAX_OPERATIONS`] operations.
    TooManyOperations { got: usize },
    /// The `copy` operations would add more than [`MAX_COPY_BYTES`]:
    /// `accumulated` counts every copy so far, the refused one included.
    CopyLimit { accumulated: usize },
    /// The patch would nest the document deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Checking how deep moved values nest would take more than
    /// [`MOVE_CHECK_BUDGET`] steps.
    MoveLimit,
    /// An operation failed (a missing path, a failed `test`, ...).
    Operation(PatchError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooManyOperations { got } => write!(
                f,
                "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {got}"
            ),
            Error::CopyLimit { accumulated } => write!(
                f,
                "Unable to copy, AccumulatedCopySizeError: Unable to complete the copy, \
                 the accumulated size increase of copy is {accumulated}, exceeding the limit \
                 {MAX_COPY_BYTES}"
            ),
            Error::TooDeep => write!(
                f,
                "Unable to apply the patch: the object would nest deeper than {MAX_DEPTH} levels"
            ),
            Error::MoveLimit => write!(
                f,
                "Unable to move: checking how deep the moved values nest took more than \
                 {MOVE_CHECK_BUDGET} steps"
            ),
            Error::Operation(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The `Status` kube answers with.
    ///
    /// Too many operations is kube's `NewRequestEntityTooLargeError`: 413,
    /// `RequestEntityTooLarge`, `Request entity too large: <msg>`, no
    /// details. A failed operation is what kube makes of any error of
    /// `patchObj.Apply`, `NewGenericServerResponse(422, "", {}, "",
    /// err.Error(), 0, false)`: reason `Invalid`, the generic message (the
    /// patch library's own is dropped) and empty details. The copy limit
    /// is that same 422 — in kube too — but says what happened instead of
    /// the generic message, as do the nesting bounds (kubeshard's own).
    pub fn to_api_error(&self) -> ApiError {
        match self {
            Error::TooManyOperations { .. } => {
                ApiError::request_entity_too_large(&self.to_string())
            }
            Error::CopyLimit { .. } | Error::TooDeep | Error::MoveLimit => {
                invalid(self.to_string())
            }
            Error::Operation(e) => failed(e),
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        e.to_api_error()
    }
}

fn invalid(message: String) -> ApiError {
    ApiError {
        details: Some(Box::default()),
        ..ApiError::new(422, "Invalid", message)
    }
}

/// A JSON patch operation that cannot apply (a failed `test`, a missing
/// path): kube's generic 422, which names no operation (the patch
/// library's reason is for the server log).
pub fn failed(_e: &PatchError) -> ApiError {
    invalid("the server rejected our request due to an error in our request".to_string())
}

/// Applies `patch` to `doc` within kube's bounds, answering failures with
/// kube's `Status`. On error `doc` holds the operations before the one
/// that failed (each operation applies whole or not at all); callers
/// discard it, as kube discards its partly patched bytes.
pub fn apply(doc: &mut Value, patch: &Patch) -> Result<(), ApiError> {
    try_apply(doc, patch).map_err(ApiError::from)
}

/// [`apply`] with the failure as it is, for logging before it becomes a
/// `Status` ([`Error::to_api_error`]).
pub fn try_apply(doc: &mut Value, patch: &Patch) -> Result<(), Error> {
    if patch.len() > MAX_OPERATIONS {
        return Err(Error::TooManyOperations { got: patch.len() });
    }
    let mut bounds = Bounds {
        copied: 0,
        depth: depth_of(doc, usize::MAX).unwrap_or(usize::MAX),
        move_checks: MOVE_CHECK_BUDGET,
    };
    for (i, op) in patch.iter().enumerate() {
        bounds.check(doc, op)?;
        json_patch::patch(doc, std::slice::from_ref(op)).map_err(|mut e| {
            e.operation = i;
            Error::Operation(e)
        })?;
    }
    Ok(())
}

/// What the operations applied so far have used of the bounds.
struct Bounds {
    /// Bytes the copies added.
    copied: usize,
    /// At least the document's nesting depth (exact at the start).
    depth: usize,
    /// Values the nesting checks of moves may still visit.
    move_checks: usize,
}

impl Bounds {
    /// Refuses `op` if applying it would pass a bound. An operation that
    /// is going to fail anyway (a missing `from`, destination or target)
    /// passes, so that it fails as json_patch says.
    fn check(&mut self, doc: &Value, op: &PatchOperation) -> Result<(), Error> {
        match op {
            PatchOperation::Add(a) if destination_parent_exists(doc, &a.path) => {
                self.nest(a.path.count(), &a.value)
            }
            PatchOperation::Replace(r) if doc.pointer(r.path.as_str()).is_some() => {
                self.nest(r.path.count(), &r.value)
            }
            PatchOperation::Copy(c) => {
                // evanphx/json-patch resolves `from` and the destination's
                // parent before it counts the copy.
                let Some(source) = doc.pointer(c.from.as_str()) else {
                    return Ok(());
                };
                if !destination_parent_exists(doc, &c.path) {
                    return Ok(());
                }
                match encoded_len_within(source, MAX_COPY_BYTES - self.copied) {
                    Some(n) => self.copied += n,
                    None => {
                        // Counted in full only for the message: the source
                        // is already in memory, and this happens once.
                        let n = encoded_len_within(source, usize::MAX).unwrap_or(usize::MAX);
                        return Err(Error::CopyLimit {
                            accumulated: self.copied.saturating_add(n),
                        });
                    }
                }
                // Walks no more than the copy just counted.
                self.nest(c.path.count(), source)
            }
            PatchOperation::Move(m) => {
                let Some(source) = doc.pointer(m.from.as_str()) else {
                    return Ok(());
                };
                if !destination_parent_exists(doc, &m.path) {
                    return Ok(());
                }
                self.nest_moved(doc, source, m.from.count(), m.path.count())
            }
            _ => Ok(()),
        }
    }

    /// `value` placed `at` tokens below the root: its containers nest
    /// that much deeper. Walks `value` (which json_patch clones anyway)
    /// no deeper than the bound.
    fn nest(&mut self, at: usize, value: &Value) -> Result<(), Error> {
        match depth_of(value, MAX_DEPTH.saturating_sub(at)) {
            Ok(0) => Ok(()),
            Ok(d) => {
                self.depth = self.depth.max(at + d);
                Ok(())
            }
            Err(_) => Err(Error::TooDeep),
        }
    }

    /// A move from `from` tokens below the root to `to`. Moving up never
    /// deepens the document, and a move the bound allows needs no walk;
    /// otherwise the bound is made exact again and, if that is not
    /// enough, the moved value is walked. Walks for moves come out of one
    /// budget, since a move itself costs next to nothing.
    fn nest_moved(
        &mut self,
        doc: &Value,
        source: &Value,
        from: usize,
        to: usize,
    ) -> Result<(), Error> {
        if to <= from {
            return Ok(());
        }
        // The moved value nests at most depth - from levels.
        let fits = |depth: usize| to + depth.saturating_sub(from) <= MAX_DEPTH;
        if !fits(self.depth) {
            self.depth = depth_within(doc, usize::MAX, &mut self.move_checks)
                .map_err(|_| Error::MoveLimit)?;
        }
        if fits(self.depth) {
            self.depth = self.depth.max(to + self.depth.saturating_sub(from));
            return Ok(());
        }
        match depth_within(source, MAX_DEPTH.saturating_sub(to), &mut self.move_checks) {
            Ok(d) => {
                if d > 0 {
                    self.depth = self.depth.max(to + d);
                }
                Ok(())
            }
            Err(DepthError::TooDeep) => Err(Error::TooDeep),
            Err(DepthError::Budget) => Err(Error::MoveLimit),
        }
    }
}

enum DepthError {
    TooDeep,
    Budget,
}

/// [`depth_within`] with no budget.
fn depth_of(v: &Value, cutoff: usize) -> Result<usize, DepthError> {
    let mut unlimited = usize::MAX;
    depth_within(v, cutoff, &mut unlimited)
}

/// The nesting depth of `v` — the most containers on a path down from it,
/// 0 for a scalar — if it is at most `cutoff`. Iterative (a recursive
/// walk is what deep values overflow the stack with), holding one
/// iterator per level, and visiting at most `budget` values.
fn depth_within(v: &Value, cutoff: usize, budget: &mut usize) -> Result<usize, DepthError> {
    enum Children<'a> {
        Array(std::slice::Iter<'a, Value>),
        Object(serde_json::map::Values<'a>),
    }
    fn children(v: &Value) -> Option<Children<'_>> {
        match v {
            Value::Array(a) => Some(Children::Array(a.iter())),
            Value::Object(m) => Some(Children::Object(m.values())),
            _ => None,
        }
    }
    let mut stack: Vec<Children<'_>> = Vec::new();
    if let Some(c) = children(v) {
        stack.push(c);
    }
    let mut deepest = stack.len();
    if deepest > cutoff {
        return Err(DepthError::TooDeep);
    }
    while let Some(top) = stack.last_mut() {
        let next = match top {
            Children::Array(it) => it.next(),
            Children::Object(it) => it.next(),
        };
        let Some(child) = next else {
            stack.pop();
            continue;
        };
        if *budget == 0 {
            return Err(DepthError::Budget);
        }
        *budget -= 1;
        if let Some(c) = children(child) {
            stack.push(c);
            if stack.len() > deepest {
                deepest = stack.len();
                if deepest > cutoff {
                    return Err(DepthError::TooDeep);
                }
            }
        }
    }
    Ok(deepest)
}

/// Whether the container a pointer adds into exists (the document root
/// always does).
fn destination_parent_exists(doc: &Value, path: &json_patch::jsonptr::Pointer) -> bool {
    match path.split_back() {
        None => true,
        Some((parent, _)) => matches!(
            doc.pointer(parent.as_str()),
            Some(Value::Object(_) | Value::Array(_))
        ),
    }
}

/// The length of `v` encoded as compact JSON (`serde_json::to_vec(v).len()`)
/// if it is at most `limit`, else None. Encodes into a counting sink that
/// stops at the first write past `limit`: no allocation in proportion to
/// `v`, and about `limit` bytes of encoding work (plus the scan of the
/// string being written then: serde_json looks for escapes before it
/// writes a run of a string).
pub fn encoded_len_within(v: &Value, limit: usize) -> Option<usize> {
    struct Counter {
        n: usize,
        limit: usize,
    }
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.n = self.n.saturating_add(buf.len());
            if self.n > self.limit {
                // A bare kind: building it allocates nothing.
                return Err(io::ErrorKind::WriteZero.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { n: 0, limit };
    match serde_json::to_writer(&mut counter, v) {
        Ok(()) => Some(counter.n),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::panic::AssertUnwindSafe;

    fn patch(ops: Value) -> Patch {
        serde_json::from_value(ops).unwrap()
    }

    fn config_map() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"},
            "data": {"a": "x".repeat(1000)},
        })
    }

    #[test]
    fn applies_operations_like_json_patch() {
        let mut doc = config_map();
        let p = patch(json!([
            {"op": "test", "path": "/metadata/name", "value": "cm"},
            {"op": "add", "path": "/data/b", "value": "2"},
            {"op": "copy", "from": "/data/b", "path": "/data/c"},
            {"op": "move", "from": "/data/c", "path": "/data/d"},
            {"op": "replace", "path": "/data/a", "value": "1"},
            {"op": "remove", "path": "/data/b"},
        ]));
        apply(&mut doc, &p).unwrap();
        assert_eq!(doc["data"], json!({"a": "1", "d": "2"}));
    }

    #[test]
    fn json_patch_panics_where_apply_fails() {
        // Moving a value over its parent, then failing: json_patch::patch
        // undoes the move by moving the parent back inside the value,
        // which cannot work, and panics (json-patch 4.2). One operation at
        // a time there is nothing to undo.
        let p = patch(json!([
            {"op": "move", "from": "/b/c", "path": "/b"},
            {"op": "test", "path": "", "value": 1},
        ]));
        let doc = json!({"b": {"c": {"e": true}}});
        let mut theirs = doc.clone();
        let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let _ = json_patch::patch(&mut theirs, &p);
        }));
        assert!(panicked.is_err());
        let mut ours = doc;
        let err = apply(&mut ours, &p).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(ours, json!({"b": {"e": true}}));
    }

    #[test]
    fn more_than_max_operations_is_413() {
        let op = json!({"op": "test", "path": "/kind", "value": "ConfigMap"});
        let mut doc = config_map();
        let at_limit = patch(Value::Array(vec![op.clone(); MAX_OPERATIONS]));
        apply(&mut doc, &at_limit).unwrap();
        let over = patch(Value::Array(vec![op; MAX_OPERATIONS + 1]));
        let err = apply(&mut doc, &over).unwrap_err();
        assert_eq!(err.code, 413);
        assert_eq!(err.reason, "RequestEntityTooLarge");
        assert_eq!(
            err.message,
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        assert_eq!(err.details, None);
    }

    #[test]
    fn failed_operations_are_the_generic_422() {
        let mut doc = config_map();
        for ops in [
            json!([{"op": "test", "path": "/kind", "value": "Pod"}]),
            json!([{"op": "remove", "path": "/spec"}]),
            json!([{"op": "copy", "from": "/nope", "path": "/data/x"}]),
            json!([{"op": "copy", "from": "/data", "path": "/nope/x"}]),
            json!([{"op": "move", "from": "/data", "path": "/data/x"}]),
        ] {
            let err = apply(&mut doc, &patch(ops.clone())).unwrap_err();
            assert_eq!(err.code, 422, "{ops}");
            assert_eq!(err.reason, "Invalid");
            assert_eq!(
                err.message,
                "the server rejected our request due to an error in our request"
            );
            assert_eq!(err.details, Some(Box::default()));
            let Err(Error::Operation(_)) = try_apply(&mut doc, &patch(ops)) else {
                panic!("expected an operation failure");
            };
        }
        assert_eq!(doc, config_map());
    }

    #[test]
    fn doubling_copies_stop_at_the_copy_limit() {
        let mut doc = config_map();
        let original = encoded_len_within(&doc, usize::MAX).unwrap();
        let ops: Vec<Value> = (0..30)
            .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/x{i}")}))
            .collect();
        let p = patch(Value::Array(ops));
        let err = try_apply(&mut doc, &p).unwrap_err();
        let Error::CopyLimit { accumulated } = err else {
            panic!("expected the copy limit, got {err}");
        };
        assert!(accumulated > MAX_COPY_BYTES);
        // The refused copy was about as large as everything before it.
        assert!(accumulated < 3 * MAX_COPY_BYTES, "{accumulated}");
        let status = err.to_api_error();
        assert_eq!(status.code, 422);
        assert_eq!(status.reason, "Invalid");
        assert_eq!(
            status.message,
            format!(
                "Unable to copy, AccumulatedCopySizeError: Unable to complete the copy, the \
                 accumulated size increase of copy is {accumulated}, exceeding the limit 3145728"
            )
        );
        assert_eq!(status.details, Some(Box::default()));
        // Nothing past the limit was ever built.
        let now = encoded_len_within(&doc, usize::MAX).unwrap();
        assert!(now <= original + MAX_COPY_BYTES, "{now}");
        assert!(doc["data"].as_object().unwrap().len() < 30);
    }

    #[test]
    fn copies_within_the_limit_apply() {
        let mut doc = json!({"a": "x".repeat(1000)});
        let one = encoded_len_within(&doc["a"], usize::MAX).unwrap();
        let fits = MAX_COPY_BYTES / one;
        let ops = |n: usize| {
            patch(Value::Array(
                (0..n)
                    .map(|i| json!({"op": "copy", "from": "/a", "path": format!("/b{i}")}))
                    .collect(),
            ))
        };
        apply(&mut doc, &ops(fits)).unwrap();
        let mut doc = json!({"a": "x".repeat(1000)});
        let err = try_apply(&mut doc, &ops(fits + 1)).unwrap_err();
        assert!(
            matches!(err, Error::CopyLimit { accumulated } if accumulated == (fits + 1) * one),
            "{err}"
        );
    }

    #[test]
    fn growth_is_bounded_by_the_copy_budget_and_the_patch_text() {
        // The fuzz target's invariant on the shapes that grow a document
        // most: copies, and numbers that come out longer than they went in.
        assert_eq!(json!(1e15).to_string(), "1000000000000000.0");
        let numbers = format!(
            r#"[{{"op":"add","path":"/n","value":[{}1e15]}}]"#,
            "1e15,".repeat(10_000)
        );
        let copies = serde_json::to_string(
            &(0..40)
                .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        for text in [numbers, copies] {
            let p: Patch = serde_json::from_str(&text).unwrap();
            let mut doc = config_map();
            let before = encoded_len_within(&doc, usize::MAX).unwrap();
            let _ = apply(&mut doc, &p);
            let bound = before + MAX_COPY_BYTES + 5 * text.len();
            assert!(encoded_len_within(&doc, bound).is_some());
        }
    }

    /// `{"a": {"a": ... {}}}` with `n` objects.
    fn chain(n: usize) -> Value {
        let mut v = json!({});
        for _ in 1..n {
            v = json!({ "a": v });
        }
        v
    }

    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn copies_cannot_nest_past_max_depth() {
        // Each copy puts /a under its own deepest object: the nesting
        // doubles while the copies stay small. Twenty of them reach half
        // a million levels, which every recursive walk of a Value (drop
        // included) overflows the stack on.
        let mut ops = vec![json!({"op": "copy", "from": "/a", "path": "/a/a"})];
        let mut len = 1usize;
        for _ in 0..19 {
            ops.push(json!({"op": "copy", "from": "/a", "path": "/a".repeat(len + 2)}));
            len = 2 * len + 1;
        }
        let mut doc = json!({"a": {}});
        let err = try_apply(&mut doc, &patch(Value::Array(ops))).unwrap_err();
        assert!(matches!(err, Error::TooDeep), "{err}");
        assert!(depth(&doc) <= MAX_DEPTH);
        let status = err.to_api_error();
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            status.message,
            "Unable to apply the patch: the object would nest deeper than 127 levels"
        );
    }

    #[test]
    fn adds_and_moves_cannot_nest_past_max_depth() {
        // Two chains that fit, one moved under the other's deepest object.
        let mut doc = json!({});
        let ops = json!([
            {"op": "add", "path": "/x", "value": chain(100)},
            {"op": "add", "path": "/y", "value": chain(100)},
            {"op": "move", "from": "/y", "path": format!("/x{}/b", "/a".repeat(99))},
        ]);
        let err = try_apply(&mut doc, &patch(ops)).unwrap_err();
        assert!(matches!(err, Error::TooDeep), "{err}");
        assert!(depth(&doc) <= MAX_DEPTH);
        // Up to the limit is fine: 1 (root) + 26 + 100 levels.
        let mut doc = json!({});
        let ops = json!([
            {"op": "add", "path": "/x", "value": chain(26)},
            {"op": "add", "path": "/y", "value": chain(100)},
            {"op": "move", "from": "/y", "path": format!("/x{}/b", "/a".repeat(25))},
            {"op": "move", "from": format!("/x{}/b", "/a".repeat(25)), "path": "/z"},
            {"op": "copy", "from": "/z", "path": format!("/x{}/b", "/a".repeat(25))},
        ]);
        try_apply(&mut doc, &patch(ops)).unwrap();
        assert_eq!(depth(&doc), MAX_DEPTH);
        // One level more is not, by add or by replace.
        for op in ["add", "replace"] {
            let mut doc = json!({"x": chain(26), "y": 1});
            let ops = json!([{"op": op, "path": "/y", "value": chain(127)}]);
            let err = try_apply(&mut doc, &patch(ops)).unwrap_err();
            assert!(matches!(err, Error::TooDeep), "{op}: {err}");
        }
    }

    #[test]
    fn moves_that_need_checking_have_a_budget() {
        // The document is as deep as allowed, so moving a value down needs
        // a walk; a wide value walked over and over runs out the budget.
        let wide = Value::Array(vec![json!(1); 1000]);
        let mut doc = json!({"deep": chain(126), "w": wide, "d": {}});
        let ops = json!([
            {"op": "move", "from": "/w", "path": "/d/w"},
            {"op": "move", "from": "/d/w", "path": "/w"},
        ]);
        let p = patch(ops);
        let mut bounds = Bounds {
            copied: 0,
            depth: depth(&doc),
            move_checks: 2_500,
        };
        let mut moves = 0;
        let err = loop {
            let mut failed = None;
            for op in p.iter() {
                if let Err(e) = bounds.check(&doc, op) {
                    failed = Some(e);
                    break;
                }
                json_patch::patch(&mut doc, std::slice::from_ref(op)).unwrap();
                moves += 1;
            }
            if let Some(e) = failed {
                break e;
            }
        };
        assert!(matches!(err, Error::MoveLimit), "{err}");
        assert!(moves >= 2, "{moves}");
        assert_eq!(err.to_api_error().code, 422);
    }

    #[test]
    fn encoded_len_stops_past_the_limit() {
        let v = json!({"a": [1, 2, 3], "b": "é\"\n"});
        let n = serde_json::to_vec(&v).unwrap().len();
        assert_eq!(encoded_len_within(&v, n), Some(n));
        assert_eq!(encoded_len_within(&v, n - 1), None);
        assert_eq!(encoded_len_within(&v, 0), None);
        assert_eq!(encoded_len_within(&Value::Null, 4), Some(4));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((".{0,4}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Small patches over a small document whose paths mostly exist.
    fn arb_patch() -> impl Strategy<Value = Value> {
        let path = prop_oneof![
            Just(""),
            Just("/a"),
            Just("/a/0"),
            Just("/a/1"),
            Just("/a/-"),
            Just("/b"),
            Just("/b/c"),
            Just("/b/d"),
            Just("/b/c/e"),
            Just("/z"),
        ];
        let value = prop_oneof![
            Just(json!(1)),
            Just(json!("s")),
            Just(json!({"c": 1})),
            Just(json!([1, 2])),
            Just(Value::Null),
        ];
        let op = (
            prop_oneof![
                Just("add"),
                Just("remove"),
                Just("replace"),
                Just("move"),
                Just("copy"),
                Just("test")
            ],
            path.clone(),
            path,
            value,
        )
            .prop_map(|(op, path, from, value)| match op {
                "move" | "copy" => json!({"op": op, "path": path, "from": from}),
                "remove" => json!({"op": op, "path": path}),
                _ => json!({"op": op, "path": path, "value": value}),
            });
        prop::collection::vec(op, 0..8).prop_map(Value::Array)
    }

    proptest! {
        #[test]
        fn encoded_len_within_matches_to_vec(v in arb_json(), slack in 0usize..3) {
            let n = serde_json::to_vec(&v).unwrap().len();
            prop_assert_eq!(encoded_len_within(&v, usize::MAX), Some(n));
            prop_assert_eq!(encoded_len_within(&v, n + slack), Some(n));
            if n > slack {
                prop_assert_eq!(encoded_len_within(&v, n - 1 - slack), None);
            }
        }

        #[test]
        fn depth_within_is_the_nesting_depth(v in arb_json(), cutoff in 0usize..6) {
            let d = depth(&v);
            prop_assert_eq!(depth_of(&v, usize::MAX).ok(), Some(d));
            prop_assert_eq!(depth_of(&v, cutoff).ok(), (d <= cutoff).then_some(d));
        }

        #[test]
        fn small_patches_apply_like_json_patch(ops in arb_patch()) {
            let doc = json!({"a": [1, 2], "b": {"c": {"e": true}, "d": "x"}});
            let p = patch(ops);
            let mut ours = doc.clone();
            let mut theirs = doc;
            let a = try_apply(&mut ours, &p);
            // json_patch::patch can panic undoing a move (see
            // json_patch_panics_where_apply_fails); ours did not.
            let Ok(b) = std::panic::catch_unwind(AssertUnwindSafe(|| json_patch::patch(&mut theirs, &p))) else {
                prop_assert!(a.is_err());
                return Ok(());
            };
            match (a, b) {
                (Ok(()), Ok(())) => prop_assert_eq!(ours, theirs),
                (Err(Error::Operation(a)), Err(b)) => {
                    prop_assert_eq!(a.operation, b.operation);
                    prop_assert_eq!(a.to_string(), b.to_string());
                }
                (a, b) => prop_assert!(false, "ours {:?}, json_patch {:?}", a, b),
            }
        }
    }
}
