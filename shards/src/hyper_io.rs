//! hyper's IO traits over a futures-io stream (glommio's TCP, or TLS over
//! it): what every outbound HTTP client of the executors speaks through —
//! to webhooks, extension servers, kubelets and pods, and etcd.

use futures_lite::io::{AsyncRead, AsyncWrite};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

/// What one read may take in (a TLS record's worth).
const READ_CHUNK: usize = 16 * 1024;

pub struct HyperIo<S> {
    stream: S,
    /// Initialised bytes the stream reads into, zeroed once per
    /// connection. (A fresh zeroed array per read cost a third of a
    /// proxied GET's instructions in memset.)
    scratch: Vec<u8>,
}

impl<S> HyperIo<S> {
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            scratch: Vec::new(),
        }
    }
}

impl<S: AsyncRead + Unpin> hyper::rt::Read for HyperIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.scratch.is_empty() {
            this.scratch = vec![0u8; READ_CHUNK];
        }
        let want = buf.remaining().min(READ_CHUNK);
        let n =
            std::task::ready!(Pin::new(&mut this.stream).poll_read(cx, &mut this.scratch[..want]))?;
        buf.put_slice(&this.scratch[..n]);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_close(cx)
    }
}
