//! The response body type: whole bytes, a list of shared chunks, a joined
//! list (a LIST's stored objects' bytes, never copied), or a stream
//! (watches).

use super::frames::Frames;
use super::joined::JoinedList;
use bytes::{Buf, Bytes};
use hyper::body::{Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The most a body hands hyper at once: hyper copies what it is given
/// into its write buffer when the transport cannot take slices (TLS), and
/// asks for more only once that drained, so this bounds what a client
/// that reads slowly holds in the server.
pub const MAX_PART: usize = super::frames::MAX_BYTES;

pub trait ChunkStream {
    /// Next chunk (one or several frames); `Ready(None)` ends the body.
    fn poll_chunk(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frames>>;
}

pub enum Body {
    Chunks { chunks: VecDeque<Bytes>, len: u64 },
    List(Option<JoinedList>),
    Stream(Pin<Box<dyn ChunkStream>>),
}

/// What a body hands hyper: shared bytes, a part of a joined list, or a
/// stream's frames; hyper sends the last two with vectored writes.
pub enum Chunk {
    Bytes(Bytes),
    List(JoinedList),
    Frames(Frames),
}

impl Buf for Chunk {
    fn remaining(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.remaining(),
            Chunk::List(l) => l.remaining(),
            Chunk::Frames(f) => f.remaining(),
        }
    }

    fn chunk(&self) -> &[u8] {
        match self {
            Chunk::Bytes(b) => b.chunk(),
            Chunk::List(l) => l.chunk(),
            Chunk::Frames(f) => f.chunk(),
        }
    }

    fn advance(&mut self, cnt: usize) {
        match self {
            Chunk::Bytes(b) => b.advance(cnt),
            Chunk::List(l) => l.advance(cnt),
            Chunk::Frames(f) => f.advance(cnt),
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [std::io::IoSlice<'a>]) -> usize {
        match self {
            Chunk::Bytes(b) => b.chunks_vectored(dst),
            Chunk::List(l) => l.chunks_vectored(dst),
            Chunk::Frames(f) => f.chunks_vectored(dst),
        }
    }
}

impl Body {
    pub fn full(b: impl Into<Bytes>) -> Self {
        let b = b.into();
        let len = b.len() as u64;
        let mut chunks = VecDeque::with_capacity(1);
        chunks.push_back(b);
        Self::Chunks { chunks, len }
    }

    pub fn list(list: JoinedList) -> Self {
        Self::List(Some(list))
    }

    /// The body ending with a newline, as kube's JSON encoder ends every
    /// body (lists end with one already; streams frame their own). A
    /// separate static chunk: the object's shared bytes are not copied.
    pub fn newline_terminated(self) -> Self {
        match self {
            Body::Chunks { mut chunks, len } => {
                chunks.push_back(Bytes::from_static(b"\n"));
                Body::Chunks {
                    chunks,
                    len: len + 1,
                }
            }
            other => other,
        }
    }

    /// The whole body as one buffer (tests, YAML conversion).
    pub fn collect_now(self) -> Option<Vec<u8>> {
        match self {
            Body::Chunks { chunks, len } => {
                let mut out = Vec::with_capacity(len as usize);
                for c in chunks {
                    out.extend_from_slice(&c);
                }
                Some(out)
            }
            Body::List(Some(mut l)) => {
                let mut out = Vec::with_capacity(l.remaining());
                while l.has_remaining() {
                    let c = l.chunk();
                    out.extend_from_slice(c);
                    let n = c.len();
                    l.advance(n);
                }
                Some(out)
            }
            Body::List(None) => Some(Vec::new()),
            Body::Stream(_) => None,
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Chunk;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Chunk>, Infallible>>> {
        let this = self.get_mut();
        // A connection that sent its turn's share waits in its executor's
        // bulk lane before the next part (see `turn` and `lane`); the end
        // of a body is never held back.
        if !this.is_end_stream() && !super::turn::has_room() {
            super::lane::wait(cx.waker());
            return Poll::Pending;
        }
        let polled = this.poll_part(cx);
        if let Poll::Ready(Some(Ok(f))) = &polled {
            super::turn::spend(f.data_ref().map_or(0, Buf::remaining));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Chunks { chunks, .. } => chunks.is_empty(),
            Body::List(l) => l.as_ref().is_none_or(|l| !l.has_remaining()),
            Body::Stream(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Chunks { len, .. } => SizeHint::with_exact(*len),
            Body::List(l) => SizeHint::with_exact(l.as_ref().map_or(0, |l| l.remaining() as u64)),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}

impl Body {
    /// The next part, whatever this turn has sent.
    fn poll_part(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Chunk>, Infallible>>> {
        match self {
            Body::Chunks { chunks, len } => match chunks.front_mut() {
                // Large bodies go out part by part (slices of the same
                // bytes), so hyper's buffer never copies more than a part.
                Some(c) if c.len() > MAX_PART => {
                    *len -= MAX_PART as u64;
                    Poll::Ready(Some(Ok(Frame::data(Chunk::Bytes(c.split_to(MAX_PART))))))
                }
                Some(_) => {
                    let c = chunks.pop_front().expect("a front chunk");
                    *len -= c.len() as u64;
                    Poll::Ready(Some(Ok(Frame::data(Chunk::Bytes(c)))))
                }
                None => Poll::Ready(None),
            },
            Body::List(list) => match list {
                Some(l) if l.has_remaining() => {
                    Poll::Ready(Some(Ok(Frame::data(Chunk::List(l.next_part(MAX_PART))))))
                }
                _ => {
                    *list = None;
                    Poll::Ready(None)
                }
            },
            Body::Stream(s) => {
                // A panicking stream ends its own response, not the executor.
                let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    s.as_mut().poll_chunk(cx)
                }));
                match polled {
                    Ok(p) => p.map(|c| c.map(|f| Ok(Frame::data(Chunk::Frames(f))))),
                    Err(_) => {
                        tracing::error!("response stream panicked; ending it");
                        Poll::Ready(None)
                    }
                }
            }
        }
    }
}

/// A response body with what must live until it is sent: the request's
/// flow-control permit, its place among its connection's busy requests,
/// its deadline. hyper drops the body once it is sent, or when the client
/// goes, and everything held goes with it.
/// Marks a response whose body is streamed from elsewhere (a proxied
/// backend) with no size known: it gets the request's deadline whatever
/// its size, so a stalled backend or reader cannot hold its slot.
#[derive(Debug, Clone, Copy)]
pub struct Unbounded;

pub struct Held<H> {
    body: Body,
    _hold: H,
}

impl<H> Held<H> {
    pub fn new(body: Body, hold: H) -> Self {
        Self { body, _hold: hold }
    }
}

impl<H: Unpin> hyper::body::Body for Held<H> {
    type Data = Chunk;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Chunk>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::turn::Turn;
    use hyper::body::Body as _;
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    #[derive(Default)]
    struct Wakes(AtomicUsize);
    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One poll of the connection's task: what `body` yields in it, part
    /// by part, until it is pending or ends.
    fn one_turn(body: &mut Body, cx: &mut Context<'_>) -> (Vec<usize>, bool) {
        let mut parts = Vec::new();
        let mut ended = false;
        let turn = Turn::new(std::future::poll_fn(|cx| {
            loop {
                match Pin::new(&mut *body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(f))) => parts.push(f.into_data().ok().unwrap().remaining()),
                    Poll::Ready(None) => {
                        ended = true;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            Poll::Ready(())
        }));
        assert!(std::pin::pin!(turn).poll(cx).is_ready());
        (parts, ended)
    }

    #[test]
    fn a_large_body_yields_after_each_turns_share_and_its_end_is_never_held() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut body = Body::full(vec![7u8; 2 * MAX_PART + 10]);
        assert_eq!(one_turn(&mut body, &mut cx), (vec![MAX_PART], false));
        assert_eq!(
            wakes.0.load(Ordering::Relaxed),
            1,
            "a yield reschedules itself"
        );
        assert_eq!(one_turn(&mut body, &mut cx), (vec![MAX_PART], false));
        // The last part is small: the turn has room left for the end.
        assert_eq!(one_turn(&mut body, &mut cx), (vec![10], true));
        assert_eq!(wakes.0.load(Ordering::Relaxed), 2);

        // Outside a turn (collecting, tests) nothing is held back.
        let mut body = Body::full(vec![7u8; 3 * MAX_PART]);
        let mut sent = 0;
        while let Poll::Ready(Some(Ok(f))) = Pin::new(&mut body).poll_frame(&mut cx) {
            sent += f.into_data().ok().unwrap().remaining();
        }
        assert_eq!(sent, 3 * MAX_PART);
    }
}
