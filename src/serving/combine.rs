//! Write combining for HTTP/2 connections.
//!
//! h2 writes, and flushes, every DATA frame larger than a few hundred
//! bytes on its own: a watch event fanned out to 250 streams of one
//! connection cost 250 `sendmsg` calls (and, under TLS, 250 records). Here
//! writes are appended to a per-connection buffer and a flush only asks the
//! connection's flusher task to run; that task is queued behind the
//! connection's own, so it runs once the connection has handed over
//! everything it had, and sends it all at once.
//!
//! Backpressure is kept: past [`HIGH_WATER`] buffered bytes, writes wait
//! until the flusher has drained the buffer. Errors met by the flusher are
//! returned by the next write or flush. Closing sends what is buffered
//! first; a buffer left when the connection is dropped is still sent.

use super::io::Transport;
use bytes::{Buf, BytesMut};
use futures_lite::io::AsyncWrite;
use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Buffered bytes past which writers wait for the flusher.
const HIGH_WATER: usize = 256 * 1024;

struct Shared<S> {
    stream: S,
    /// What the flusher is writing; nothing is appended to it, so a
    /// partial write never makes the rest move (appending behind a
    /// partly sent buffer copied the unsent part to its front, again and
    /// again while the socket was full).
    sending: BytesMut,
    /// Where writes are appended; it becomes `sending` once that is sent.
    filling: BytesMut,
    /// The flusher task, when it waits for something to send.
    flusher: Option<Waker>,
    /// A writer waiting for room (or for the buffer to drain, to close).
    writer: Option<Waker>,
    /// Bytes were sent since the transport was last flushed.
    unflushed: bool,
    /// The first error the flusher met; later writes report its kind.
    error: Option<io::ErrorKind>,
    /// The connection is gone: send what is left, then stop.
    closed: bool,
}

impl<S> Shared<S> {
    fn buffered(&self) -> usize {
        self.sending.len() + self.filling.len()
    }

    fn wake_flusher(&mut self) {
        if let Some(w) = self.flusher.take() {
            w.wake();
        }
    }

    fn failed(&self) -> Option<io::Error> {
        self.error.map(io::Error::from)
    }
}

/// A transport whose writes are combined per connection turn.
pub struct Combining<S: Transport> {
    shared: Rc<RefCell<Shared<S>>>,
}

impl<S: Transport> Combining<S> {
    /// Wraps `stream` and starts its flusher on the current executor.
    pub fn new(stream: S) -> Self {
        let shared = Rc::new(RefCell::new(Shared {
            stream,
            sending: BytesMut::new(),
            filling: BytesMut::with_capacity(16 * 1024),
            flusher: None,
            writer: None,
            unflushed: false,
            error: None,
            closed: false,
        }));
        glommio::spawn_local(flush_loop(shared.clone())).detach();
        Self { shared }
    }

    fn append(&self, cx: &Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let mut sh = self.shared.borrow_mut();
        if let Some(e) = sh.failed() {
            return Poll::Ready(Err(e));
        }
        if sh.buffered() >= HIGH_WATER {
            sh.writer = Some(cx.waker().clone());
            sh.wake_flusher();
            return Poll::Pending;
        }
        let mut n = 0;
        for b in bufs {
            if n > 0 && sh.buffered() + b.len() > HIGH_WATER {
                break;
            }
            sh.filling.extend_from_slice(b);
            n += b.len();
        }
        sh.wake_flusher();
        Poll::Ready(Ok(n))
    }
}

impl<S: Transport> Drop for Combining<S> {
    fn drop(&mut self) {
        let mut sh = self.shared.borrow_mut();
        sh.closed = true;
        sh.wake_flusher();
    }
}

/// Sends whatever is buffered, whenever it is woken, until the connection
/// is gone and the buffer empty (or the stream failed).
async fn flush_loop<S: Transport>(shared: Rc<RefCell<Shared<S>>>) {
    futures_lite::future::poll_fn(|cx| {
        let mut guard = shared.borrow_mut();
        let sh = &mut *guard;
        loop {
            if sh.sending.is_empty() {
                std::mem::swap(&mut sh.sending, &mut sh.filling);
            }
            if sh.sending.is_empty() {
                if sh.unflushed {
                    match Pin::new(&mut sh.stream).poll_flush(cx) {
                        Poll::Ready(Ok(())) => sh.unflushed = false,
                        Poll::Ready(Err(e)) => return fail(sh, e),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                if let Some(w) = sh.writer.take() {
                    w.wake();
                }
                if sh.closed {
                    return Poll::Ready(());
                }
                sh.flusher = Some(cx.waker().clone());
                return Poll::Pending;
            }
            match Pin::new(&mut sh.stream).poll_write(cx, &sh.sending) {
                Poll::Ready(Ok(0)) => return fail(sh, io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    sh.sending.advance(n);
                    sh.unflushed = true;
                }
                Poll::Ready(Err(e)) => return fail(sh, e),
                // A dropped connection (aborted, or its client gone) does
                // not wait for a peer that stopped reading: its socket must
                // close now.
                Poll::Pending if sh.closed => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

fn fail<S>(sh: &mut Shared<S>, e: io::Error) -> Poll<()> {
    sh.error = Some(e.kind());
    sh.sending.clear();
    sh.filling.clear();
    if let Some(w) = sh.writer.take() {
        w.wake();
    }
    Poll::Ready(())
}

impl<S: Transport> Transport for Combining<S> {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        self.shared.borrow_mut().stream.poll_read_into(cx, buf)
    }

    fn vectored(&self) -> bool {
        true
    }
}

impl<S: Transport> AsyncWrite for Combining<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.append(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.append(cx, bufs)
    }

    /// Deferred: the flusher sends the buffer once this connection's turn
    /// is over (see the module docs).
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut sh = self.shared.borrow_mut();
        if let Some(e) = sh.failed() {
            return Poll::Ready(Err(e));
        }
        sh.wake_flusher();
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut sh = self.shared.borrow_mut();
        if let Some(e) = sh.failed() {
            return Poll::Ready(Err(e));
        }
        if sh.buffered() > 0 || sh.unflushed {
            sh.writer = Some(cx.waker().clone());
            sh.wake_flusher();
            return Poll::Pending;
        }
        Pin::new(&mut sh.stream).poll_close(cx)
    }
}
