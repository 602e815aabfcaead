//! Bytes both ways between an upgraded client connection and its backend
//! until either side ends (as kube's upgrade-aware proxy: one half
//! finishing ends the tunnel).

use crate::serving::upgrade::ClientIo;
use bytes::Bytes;
use hyper::rt::ReadBuf;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

const BUFFER: usize = 32 * 1024;
/// Buffers moved in one turn before the tunnel lets other tasks run.
const YIELD_AFTER: usize = 16;
/// How long the two sides may take to close (a TLS close_notify to a
/// client that no longer reads must not hold the connection).
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// One direction: what was read and not yet written.
struct Pump {
    /// Bytes the reading side sent before the tunnel started.
    early: Bytes,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Pump {
    fn new(early: Bytes) -> Self {
        Self {
            early,
            buf: vec![0u8; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Moves bytes until the reader ends (Ready(Ok)), fails, or must wait.
    fn poll(
        &mut self,
        cx: &mut Context<'_>,
        mut from: Pin<&mut dyn ClientIo>,
        mut to: Pin<&mut dyn ClientIo>,
    ) -> Poll<io::Result<()>> {
        // Two fast peers must not keep the executor to themselves.
        let mut turns = 0;
        loop {
            turns += 1;
            if turns > YIELD_AFTER {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if !self.early.is_empty() {
                let n = std::task::ready!(to.as_mut().poll_write(cx, &self.early))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                let _ = self.early.split_to(n);
                continue;
            }
            if self.start < self.end {
                let n =
                    std::task::ready!(to.as_mut().poll_write(cx, &self.buf[self.start..self.end]))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                self.start += n;
                continue;
            }
            let mut rb = ReadBuf::new(&mut self.buf);
            match from.as_mut().poll_read(cx, rb.unfilled()) {
                Poll::Pending => {
                    // Nothing more to send for now: push out what is buffered.
                    return match to.as_mut().poll_flush(cx) {
                        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                        _ => Poll::Pending,
                    };
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    if n == 0 {
                        let _ = to.as_mut().poll_flush(cx);
                        return Poll::Ready(Ok(()));
                    }
                    (self.start, self.end) = (0, n);
                }
            }
        }
    }
}

/// Runs the tunnel: `client_early` are bytes the client sent past its
/// upgrade request, `backend_early` bytes the backend sent past its 101.
pub async fn splice(
    mut client: Box<dyn ClientIo>,
    client_early: Bytes,
    mut backend: Box<dyn ClientIo>,
    backend_early: Bytes,
) {
    let mut up = Pump::new(client_early);
    let mut down = Pump::new(backend_early);
    let ended = std::future::poll_fn(|cx| {
        let (c, b) = (client.as_mut(), backend.as_mut());
        if let Poll::Ready(r) = up.poll(cx, Pin::new(c), Pin::new(b)) {
            return Poll::Ready(r);
        }
        let (c, b) = (client.as_mut(), backend.as_mut());
        down.poll(cx, Pin::new(b), Pin::new(c))
    })
    .await;
    if let Err(e) = ended {
        tracing::debug!(error = %e, "tunnel ended");
    }
    let both = futures_lite::future::zip(
        std::future::poll_fn(|cx| Pin::new(client.as_mut()).poll_shutdown(cx)),
        std::future::poll_fn(|cx| Pin::new(backend.as_mut()).poll_shutdown(cx)),
    );
    let _ = futures_lite::future::or(async { Some(both.await) }, async {
        glommio::timer::sleep(CLOSE_GRACE).await;
        None
    })
    .await;
}
