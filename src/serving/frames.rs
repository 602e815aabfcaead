//! A streamed response's chunk: one or several shared frames (watch
//! events) handed to hyper as a single body chunk.
//!
//! A watcher that has fallen behind sends the events waiting for it
//! together: one HTTP/2 DATA frame or HTTP/1.1 chunk instead of one per
//! event. That halves neither side's work per byte, but it removes the
//! per-frame costs (stream bookkeeping, a wake-up and a poll of the
//! client's task per frame), so a backlog drains faster than it built up
//! instead of growing. The frames themselves are never copied.

use bytes::{Buf, Bytes};
use smallvec::SmallVec;
use std::io::IoSlice;

/// Frames gathered into one chunk at most: enough to amortize the
/// per-frame costs, small enough that one watcher's chunk does not hold
/// a connection's write for long.
pub const MAX_FRAMES: usize = 64;
/// Bytes gathered into one chunk at most (HTTP/2 still splits it into
/// frames of the peer's maximum size).
pub const MAX_BYTES: usize = 256 * 1024;

#[derive(Default)]
pub struct Frames {
    /// Frames not yet fully consumed; the first may be partly consumed.
    parts: SmallVec<[Bytes; 1]>,
    /// Index of the first frame not fully consumed.
    first: usize,
    remaining: usize,
}

impl Frames {
    pub fn push(&mut self, frame: Bytes) {
        if frame.is_empty() {
            return; // `chunk()` must never be empty while bytes remain
        }
        self.remaining += frame.len();
        self.parts.push(frame);
    }

    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }

    pub fn len(&self) -> usize {
        self.parts.len() - self.first
    }

    /// Whether another frame may join this chunk.
    pub fn has_room(&self) -> bool {
        self.len() < MAX_FRAMES && self.remaining < MAX_BYTES
    }

    /// The frames not yet fully consumed, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Bytes> {
        self.parts[self.first..].iter()
    }
}

impl From<Bytes> for Frames {
    fn from(frame: Bytes) -> Self {
        let mut f = Frames::default();
        f.push(frame);
        f
    }
}

impl Buf for Frames {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.parts.get(self.first).map_or(&[], |b| b.chunk())
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the end of a chunk");
        self.remaining -= cnt;
        while cnt > 0 {
            let part = &mut self.parts[self.first];
            if cnt < part.len() {
                part.advance(cnt);
                return;
            }
            cnt -= part.len();
            *part = Bytes::new();
            self.first += 1;
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for part in self.iter() {
            if n == dst.len() {
                break;
            }
            dst[n] = IoSlice::new(part);
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// However a writer consumes it (vectored reads of a few slices,
        /// advancing by arbitrary steps), the chunk yields exactly its
        /// frames' bytes in order.
        #[test]
        fn drains_to_the_concatenation(
            frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..12),
            iovs in 1usize..5,
            steps in proptest::collection::vec(1usize..60, 1..40),
        ) {
            let mut f = Frames::default();
            for fr in &frames {
                f.push(Bytes::from(fr.clone()));
            }
            let want: Vec<u8> = frames.concat();
            prop_assert_eq!(f.remaining(), want.len());
            let mut got = Vec::new();
            let mut step = steps.iter().cycle();
            while f.has_remaining() {
                let mut dst = vec![IoSlice::new(&[]); iovs];
                let n = f.chunks_vectored(&mut dst);
                prop_assert!(n > 0);
                prop_assert_eq!(&dst[0][..], f.chunk());
                let avail: Vec<u8> = dst[..n].iter().flat_map(|s| s.iter().copied()).collect();
                let take = (*step.next().unwrap()).min(avail.len());
                got.extend_from_slice(&avail[..take]);
                f.advance(take);
            }
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn room_is_bounded_by_frames_and_bytes() {
        let mut f = Frames::default();
        while f.has_room() {
            f.push(Bytes::from_static(b"x"));
        }
        assert_eq!(f.len(), MAX_FRAMES);
        let mut g = Frames::from(Bytes::from(vec![0u8; MAX_BYTES]));
        assert!(!g.has_room());
        g.advance(MAX_BYTES);
        assert!(g.is_empty());
    }
}
