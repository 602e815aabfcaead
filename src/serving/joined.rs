//! A list body as one buffer of many slices: the list head, each stored
//! object's JSON (borrowed from the shared object, never copied), commas,
//! and the closing `]}` with the newline kube's encoder ends a body with;
//! or, in protobuf, the head, each item's key and length and its raw
//! message (borrowed the same way), and the envelope's tail.
//!
//! hyper writes it with vectored sends, so a LIST of 100k objects costs a
//! few thousand `sendmsg` calls that hand the kernel the objects' own
//! bytes, instead of a copy of the whole response into large blocks.

use bytes::{Buf, Bytes};
use kubeshard_cache::StoredObject;
use kubeshard_core::protobuf::ItemHead;
use std::io::IoSlice;
use std::sync::Arc;

const TAIL: &[u8] = b"]}\n";

/// What a list body is made of, shared by the parts it is sent in.
struct Pieces {
    head: Bytes,
    items: Vec<Arc<StoredObject>>,
    /// Protobuf: each item's key and length, and the closing bytes.
    protobuf: Option<(Vec<ItemHead>, &'static [u8])>,
}

impl Pieces {
    /// The tail's index: 0 is the head. JSON: 1 + 2i item i; 2 + 2i the
    /// comma after it. Protobuf: 1 + 2i item i's key and length; 2 + 2i
    /// its message.
    fn last(&self) -> usize {
        match self.protobuf {
            Some(_) => 2 * self.items.len() + 1,
            None if self.items.is_empty() => 1,
            None => 2 * self.items.len(),
        }
    }

    fn bytes(&self, p: usize) -> &[u8] {
        let last = self.last();
        match (&self.protobuf, p) {
            (_, 0) => &self.head,
            (_, p) if p > last => &[],
            (None, p) if p == last => TAIL,
            (None, p) if p % 2 == 1 => self.items[p / 2].json_slice(),
            (None, _) => b",",
            (Some((_, tail)), p) if p == last => tail,
            (Some((heads, _)), p) if p % 2 == 1 => heads[p / 2].as_slice(),
            // Encoded before the list was built (see `JoinedList::protobuf`).
            (Some(_), p) => self.items[p / 2 - 1].protobuf().map_or(&[], |e| e.raw()),
        }
    }
}

/// The pieces `piece..end` of a list body (the whole body, or a part of
/// it), as one buffer of borrowed slices.
pub struct JoinedList {
    pieces: Arc<Pieces>,
    /// Current piece.
    piece: usize,
    /// Bytes of the current piece already consumed.
    offset: usize,
    /// One past the last piece of this buffer.
    end: usize,
    remaining: usize,
}

impl JoinedList {
    pub fn new(head: Bytes, items: Vec<Arc<StoredObject>>) -> Self {
        let remaining = head.len()
            + items.iter().map(|o| o.json_slice().len()).sum::<usize>()
            + items.len().saturating_sub(1)
            + TAIL.len();
        Self::of(
            Pieces {
                head,
                items,
                protobuf: None,
            },
            remaining,
        )
    }

    /// A protobuf list: `head` from `protobuf::list_frame`, items whose
    /// protobuf forms are already encoded, each with its key and length.
    pub fn protobuf(head: Bytes, items: Vec<Arc<StoredObject>>, tail: &'static [u8]) -> Self {
        let raw_len = |o: &Arc<StoredObject>| o.protobuf().map_or(0, |e| e.raw().len());
        let heads: Vec<ItemHead> = items
            .iter()
            .map(|o| kubeshard_core::protobuf::item_head(raw_len(o)))
            .collect();
        let remaining = head.len()
            + heads.iter().map(ItemHead::len).sum::<usize>()
            + items.iter().map(raw_len).sum::<usize>()
            + tail.len();
        Self::of(
            Pieces {
                head,
                items,
                protobuf: Some((heads, tail)),
            },
            remaining,
        )
    }

    fn of(pieces: Pieces, remaining: usize) -> Self {
        let pieces = Arc::new(pieces);
        let mut list = Self {
            end: pieces.last() + 1,
            pieces,
            piece: 0,
            offset: 0,
            remaining,
        };
        list.skip_empty();
        list
    }

    /// The whole body as one buffer, from its start whatever has been
    /// sent (audit logs a list at level RequestResponse).
    pub fn to_vec(&self) -> Vec<u8> {
        let pieces: Vec<&[u8]> = (0..=self.pieces.last())
            .map(|p| self.pieces.bytes(p))
            .collect();
        pieces.concat()
    }

    fn piece_bytes(&self, p: usize) -> &[u8] {
        if p >= self.end {
            return &[];
        }
        self.pieces.bytes(p)
    }

    /// Splits off the next part of the body: whole pieces (the current one
    /// from where it was left), at least one and no more once `max` bytes
    /// are gathered. A list is sent this way, part by part as the
    /// connection drains, so a client that reads slowly holds at most a
    /// part in the server's buffers; a part borrows the objects' bytes
    /// like the whole list does.
    pub fn next_part(&mut self, max: usize) -> JoinedList {
        let (start, offset) = (self.piece, self.offset);
        let mut len = 0;
        let mut p = start;
        while p < self.end && (len == 0 || len < max) {
            len += self.piece_bytes(p).len() - if p == start { offset } else { 0 };
            p += 1;
        }
        self.piece = p;
        self.offset = 0;
        self.remaining -= len;
        self.skip_empty();
        JoinedList {
            pieces: self.pieces.clone(),
            piece: start,
            offset,
            end: p,
            remaining: len,
        }
    }

    fn skip_empty(&mut self) {
        while self.piece < self.end && self.offset >= self.piece_bytes(self.piece).len() {
            self.piece += 1;
            self.offset = 0;
        }
    }
}

impl Buf for JoinedList {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        &self.piece_bytes(self.piece)[self.offset.min(self.piece_bytes(self.piece).len())..]
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the end of a list body");
        self.remaining -= cnt;
        while cnt > 0 {
            let left = self.piece_bytes(self.piece).len() - self.offset;
            if cnt < left {
                self.offset += cnt;
                return;
            }
            cnt -= left;
            self.piece += 1;
            self.offset = 0;
        }
        self.skip_empty();
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        let mut p = self.piece;
        let mut offset = self.offset;
        while n < dst.len() && p < self.end {
            let bytes = &self.piece_bytes(p)[offset..];
            if !bytes.is_empty() {
                dst[n] = IoSlice::new(bytes);
                n += 1;
            }
            p += 1;
            offset = 0;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;
    use proptest::prelude::*;

    fn obj(size: usize, i: usize) -> Arc<StoredObject> {
        let info = Catalog::with_builtins()
            .snapshot()
            .lookup("", "v1", "configmaps")
            .unwrap()
            .clone();
        let v = serde_json::json!({"metadata": {"name": format!("o{i}")}, "data": {"k": "x".repeat(size)}});
        Arc::new(StoredObject::encode(&info, &v, 1))
    }

    /// Drains the buffer the way a writer would: vectored reads of at most
    /// `iovs` slices, advancing by `step` bytes at most each time.
    fn drain(mut b: JoinedList, iovs: usize, step: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while b.has_remaining() {
            let mut slices = vec![IoSlice::new(&[]); iovs];
            let n = b.chunks_vectored(&mut slices);
            assert!(n > 0, "remaining bytes but no slices");
            let mut take = step;
            let mut got = 0;
            for s in &slices[..n] {
                let k = s.len().min(take);
                out.extend_from_slice(&s[..k]);
                take -= k;
                got += k;
                if take == 0 {
                    break;
                }
            }
            b.advance(got);
        }
        out
    }

    proptest! {
        #[test]
        fn joined_lists_are_the_concatenation(sizes in prop::collection::vec(0usize..3000, 0..40), iovs in 1usize..70, step in 1usize..20_000) {
            let items: Vec<_> = sizes.iter().enumerate().map(|(i, s)| obj(*s, i)).collect();
            let head = Bytes::from_static(b"{\"items\":[");
            let mut list = JoinedList::new(head.clone(), items.clone());
            let total = list.remaining();
            // to_vec() is the whole body, also once some has been sent.
            let whole = list.to_vec();
            list.advance(step.min(total));
            prop_assert_eq!(&list.to_vec(), &whole);
            let bytes = drain(JoinedList::new(head.clone(), items.clone()), iovs, step);
            prop_assert_eq!(&whole, &bytes);
            prop_assert_eq!(bytes.len(), total);
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(v["items"].as_array().unwrap().len(), sizes.len());
            // chunk()/advance() alone give the same bytes.
            let mut b = JoinedList::new(head, items.clone());
            let mut again = Vec::new();
            while b.has_remaining() {
                let c = b.chunk().to_vec();
                prop_assert!(!c.is_empty());
                again.extend_from_slice(&c);
                b.advance(c.len());
            }
            prop_assert_eq!(&again, &bytes);
            // Sent part by part (after a partial first read), each part
            // whole pieces up to `step` bytes, drained vectored.
            let mut b = JoinedList::new(Bytes::from_static(b"{\"items\":["), items);
            let first = (step / 2).min(b.chunk().len());
            let mut parts = b.chunk()[..first].to_vec();
            b.advance(first);
            while b.has_remaining() {
                let before = b.remaining();
                let part = b.next_part(step);
                prop_assert!(part.has_remaining());
                prop_assert_eq!(before - b.remaining(), part.remaining());
                parts.extend(drain(part, iovs, step));
            }
            prop_assert_eq!(parts, bytes);
        }
    }
}
