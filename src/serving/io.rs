//! hyper's IO traits over a glommio TCP stream.
//!
//! Reads go through a buffered stream's own buffer (`poll_fill_buf`) and
//! are copied into hyper's cursor, so hyper's uninitialised buffer is never
//! zero-filled (that costs 15–20% of GET throughput on this stack).
//!
//! Writes: a plain stream has a real vectored write (see [`PlainStream`]);
//! a TLS stream ([`TlsTransport`]) writes through rustls, which makes its
//! own records. HTTP/2 connections of either kind additionally go through
//! [`super::combine`], which turns h2's one-write-per-DATA-frame into one
//! write per connection turn.

use super::connections::ConnState;
use futures_lite::io::{AsyncBufRead, AsyncWrite};
use glommio::net::{Preallocated, TcpStream};
use std::io;
use std::os::unix::io::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// Slices per `sendmsg` (Linux's UIO_MAXIOV is 1024).
const MAX_IOVECS: usize = 1024;

/// What hyper's IO adapter needs of the stream under it: buffered reads
/// copied into hyper's cursor, and writes.
pub trait Transport: AsyncWrite + Unpin + 'static {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>>;

    /// Whether `poll_write_vectored` sends many slices in one call (else
    /// hyper flattens its chunks into one buffer first).
    fn vectored(&self) -> bool;
}

/// Copies what a buffered stream holds into hyper's cursor.
fn read_buffered<T: AsyncBufRead + Unpin>(
    stream: &mut T,
    cx: &mut Context<'_>,
    buf: &mut hyper::rt::ReadBufCursor<'_>,
) -> Poll<io::Result<()>> {
    let available = match Pin::new(&mut *stream).poll_fill_buf(cx) {
        Poll::Ready(Ok(bytes)) => bytes,
        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
        Poll::Pending => return Poll::Pending,
    };
    let n = available.len().min(buf.remaining());
    buf.put_slice(&available[..n]);
    Pin::new(stream).consume(n);
    Poll::Ready(Ok(()))
}

/// hyper's view of a connection's stream; reads are reported to the
/// connection's state (a request head arriving on an idle connection).
pub struct HyperIo<S = PlainStream> {
    stream: S,
    state: Rc<ConnState>,
}

impl HyperIo {
    pub fn new(stream: TcpStream, state: Rc<ConnState>) -> Self {
        Self::over(PlainStream(stream.buffered()), state)
    }
}

impl<S: Transport> HyperIo<S> {
    pub fn over(stream: S, state: Rc<ConnState>) -> Self {
        Self { stream, state }
    }
}

impl<S: Transport> hyper::rt::Read for HyperIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.remaining();
        let out = self.stream.poll_read_into(cx, &mut buf);
        self.state.read(before - buf.remaining());
        out
    }
}

impl<S: Transport> hyper::rt::Write for HyperIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_close(cx)
    }
}

/// A plain TCP connection: glommio's buffered stream plus a real vectored
/// write. glommio sends one slice per call, which made hyper copy
/// (flatten) every queued chunk — a list's shared object encodings, a
/// watch's shared event lines — into one buffer first; `sendmsg` hands the
/// kernel the chunks themselves, and only when the socket is full does
/// glommio's write take over, to wait for it.
pub struct PlainStream(pub TcpStream<Preallocated>);

impl Transport for PlainStream {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        read_buffered(&mut self.0, cx, buf)
    }

    fn vectored(&self) -> bool {
        true
    }
}

impl AsyncWrite for PlainStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let bufs = &bufs[..bufs.len().min(MAX_IOVECS)];
        // SAFETY: a zeroed msghdr is valid; IoSlice is guaranteed to be ABI
        // compatible with iovec on Unix, and the slices outlive the call.
        let sent = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
            msg.msg_iovlen = bufs.len() as _;
            libc::sendmsg(
                self.0.as_raw_fd(),
                &msg,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if sent >= 0 {
            return Poll::Ready(Ok(sent as usize));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::WouldBlock {
            return Poll::Ready(Err(err));
        }
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        Pin::new(&mut self.0).poll_write(cx, first)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}

/// A TLS connection: a buffered reader over rustls' decrypted stream (so
/// reads copy into hyper's cursor like plain ones). Writes are not
/// vectored: rustls encrypts into its own records anyway, so hyper
/// flattens its chunks into large writes.
pub struct TlsTransport(futures_lite::io::BufReader<futures_rustls::server::TlsStream<TcpStream>>);

impl TlsTransport {
    pub fn new(stream: futures_rustls::server::TlsStream<TcpStream>) -> Self {
        Self(futures_lite::io::BufReader::with_capacity(
            16 * 1024,
            stream,
        ))
    }
}

impl Transport for TlsTransport {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        read_buffered(&mut self.0, cx, buf)
    }

    fn vectored(&self) -> bool {
        false
    }
}

impl AsyncWrite for TlsTransport {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}

/// Spawns HTTP/2 stream tasks on the current executor: connections never
/// leave their core, so nothing needs to be `Send`. Each stream runs
/// under its own cancel handle, so one stream can be cut off (reset)
/// without its connection (see `cut`).
#[derive(Clone, Copy)]
pub struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: std::future::Future + 'static,
{
    fn execute(&self, fut: F) {
        glommio::spawn_local(super::turn::Turn::new(super::cut::Cancellable::new(fut))).detach();
    }
}
