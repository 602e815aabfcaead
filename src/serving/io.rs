//! hyper's IO traits over a glommio TCP stream, plain or inside TLS.
//!
//! Reads go through a buffered stream's own buffer (`poll_fill_buf`) and
//! are copied into hyper's cursor, so hyper's uninitialised buffer is never
//! zero-filled (that costs 15–20% of GET throughput on this stack): a plain
//! connection reads through glommio's buffered stream, a TLS one through a
//! buffered reader over rustls' decrypted stream.

use futures_lite::io::{AsyncBufRead, AsyncWrite};
use glommio::net::{Preallocated, TcpStream};
use std::io;
use std::os::unix::io::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Slices per `sendmsg` (Linux's UIO_MAXIOV is 1024).
const MAX_IOVECS: usize = 1024;

pub struct HyperIo {
    stream: TcpStream<Preallocated>,
}

impl HyperIo {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream: stream.buffered(),
        }
    }
}

/// Copies what `stream` has buffered into hyper's cursor.
fn read_buffered<S: AsyncBufRead + Unpin>(
    stream: &mut S,
    cx: &mut Context<'_>,
    mut buf: hyper::rt::ReadBufCursor<'_>,
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

impl hyper::rt::Read for HyperIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        read_buffered(&mut self.stream, cx, buf)
    }
}

/// A TLS connection as hyper sees it.
pub struct TlsIo {
    stream: futures_lite::io::BufReader<futures_rustls::server::TlsStream<TcpStream>>,
}

impl TlsIo {
    pub fn new(stream: futures_rustls::server::TlsStream<TcpStream>) -> Self {
        Self {
            stream: futures_lite::io::BufReader::with_capacity(16 * 1024, stream),
        }
    }
}

impl hyper::rt::Read for TlsIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        read_buffered(&mut self.stream, cx, buf)
    }
}

/// Writes go through rustls, which encrypts into its own records anyway:
/// hyper flattens its queued chunks into large writes.
impl hyper::rt::Write for TlsIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn is_write_vectored(&self) -> bool {
        false
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_close(cx)
    }
}

impl hyper::rt::Write for HyperIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    /// A real vectored write: glommio's stream sends one slice per call,
    /// which made hyper copy (flatten) every queued chunk — a list's shared
    /// object encodings, a watch's shared event lines — into one buffer
    /// first. `sendmsg` hands the kernel the chunks themselves; only when
    /// the socket is full does glommio's write take over, to wait for it.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let bufs = &bufs[..bufs.len().min(MAX_IOVECS)];
        // SAFETY: zeroed msghdr is valid; IoSlice is guaranteed to be ABI
        // compatible with iovec on Unix, and the slices outlive the call.
        let sent = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
            msg.msg_iovlen = bufs.len() as _;
            libc::sendmsg(
                self.stream.as_raw_fd(),
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
        Pin::new(&mut self.stream).poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_close(cx)
    }
}

/// Spawns HTTP/2 stream tasks on the current executor: connections never
/// leave their core, so nothing needs to be `Send`.
#[derive(Clone, Copy)]
pub struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: std::future::Future + 'static,
{
    fn execute(&self, fut: F) {
        glommio::spawn_local(fut).detach();
    }
}
