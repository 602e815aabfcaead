//! The response body type: whole bytes, a list of shared chunks (lists are
//! the stored objects' bytes concatenated, never copied), or a stream
//! (watches).

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

pub trait ChunkStream {
    /// Next chunk; `Ready(None)` ends the body.
    fn poll_chunk(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;
}

pub enum Body {
    Chunks { chunks: VecDeque<Bytes>, len: u64 },
    Stream(Pin<Box<dyn ChunkStream>>),
}

impl Body {
    pub fn full(b: impl Into<Bytes>) -> Self {
        let b = b.into();
        let len = b.len() as u64;
        let mut chunks = VecDeque::with_capacity(1);
        chunks.push_back(b);
        Self::Chunks { chunks, len }
    }

    pub fn chunks(chunks: VecDeque<Bytes>) -> Self {
        let len = chunks.iter().map(|c| c.len() as u64).sum();
        Self::Chunks { chunks, len }
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
            Body::Stream(_) => None,
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Chunks { chunks, len } => match chunks.pop_front() {
                Some(c) => {
                    *len -= c.len() as u64;
                    Poll::Ready(Some(Ok(Frame::data(c))))
                }
                None => Poll::Ready(None),
            },
            Body::Stream(s) => {
                // A panicking stream ends its own response, not the executor.
                let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    s.as_mut().poll_chunk(cx)
                }));
                match polled {
                    Ok(p) => p.map(|c| c.map(|b| Ok(Frame::data(b)))),
                    Err(_) => {
                        tracing::error!("response stream panicked; ending it");
                        Poll::Ready(None)
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Chunks { chunks, .. } if chunks.is_empty())
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Chunks { len, .. } => SizeHint::with_exact(*len),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}
