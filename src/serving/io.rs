//! hyper's IO traits over a glommio TCP stream, plain or inside TLS.
//!
//! Reads go through a buffered stream's own buffer (`poll_fill_buf`) and
//! are copied into hyper's cursor, so hyper's uninitialised buffer is never
//! zero-filled (that costs 15–20% of GET throughput on this stack). A
//! plain connection uses glommio's buffered stream; a TLS one a buffered
//! reader over rustls' decrypted stream.

use futures_lite::io::{AsyncBufRead, AsyncWrite};
use glommio::net::{Preallocated, TcpStream};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

pub struct HyperIo<S = TcpStream<Preallocated>> {
    stream: S,
}

/// A TLS connection's stream, as [`HyperIo`] reads it.
pub type TlsIo = HyperIo<futures_lite::io::BufReader<futures_rustls::server::TlsStream<TcpStream>>>;

impl HyperIo {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream: stream.buffered(),
        }
    }
}

impl TlsIo {
    pub fn tls(stream: futures_rustls::server::TlsStream<TcpStream>) -> Self {
        Self {
            stream: futures_lite::io::BufReader::with_capacity(16 * 1024, stream),
        }
    }
}

impl<S: AsyncBufRead + Unpin> hyper::rt::Read for HyperIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let stream = Pin::new(&mut self.stream);
        let available = match stream.poll_fill_buf(cx) {
            Poll::Ready(Ok(bytes)) => bytes,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        };
        let n = available.len().min(buf.remaining());
        buf.put_slice(&available[..n]);
        Pin::new(&mut self.stream).consume(n);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    /// glommio's stream has no real vectored write (it would send one
    /// slice per syscall), so hyper is told to flatten its queued chunks —
    /// a list's thousands of shared object encodings — into large writes.
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
