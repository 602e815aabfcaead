//! HTTP/1.1 protocol upgrades (`kubectl exec`, `attach`, `port-forward`
//! and upgrading proxied requests): a handler that answers 101 leaves a
//! [`Tunnel`] for its connection, and once hyper has written the 101 the
//! connection hands its socket (and whatever the client already sent
//! past the request) to that tunnel.
//!
//! hyper's own upgrade support needs `Send` sockets, which glommio's are
//! not, so the connection is driven with `poll_without_shutdown` and taken
//! apart instead (see `server.rs`). Tunnels are kept per executor, by
//! connection, because request extensions must be `Send`.

use super::connections::{ActiveRequest, ConnState};
use bytes::Bytes;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// The client's side of an upgraded connection.
pub trait ClientIo: hyper::rt::Read + hyper::rt::Write + Unpin {}
impl<T: hyper::rt::Read + hyper::rt::Write + Unpin> ClientIo for T {}

/// What runs on a connection after its 101: given the client's socket and
/// the bytes it sent past the upgrade request.
pub type Tunnel = Box<dyn FnOnce(Box<dyn ClientIo>, Bytes) -> Pin<Box<dyn Future<Output = ()>>>>;

/// Names an HTTP/1.1 connection that may be upgraded (a request
/// extension; HTTP/2 requests carry none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Upgradable(u64);

static NEXT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static PENDING: RefCell<HashMap<u64, Tunnel>> = RefCell::default();
}

impl Upgradable {
    pub fn new() -> Self {
        Upgradable(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Leaves the tunnel to run once this connection's 101 is written.
    pub fn set(self, tunnel: Tunnel) {
        PENDING.with(|p| p.borrow_mut().insert(self.0, tunnel));
    }

    /// The tunnel a handler left, if any (taken once).
    pub fn take(self) -> Option<Tunnel> {
        PENDING.with(|p| p.borrow_mut().remove(&self.0))
    }
}

impl Default for Upgradable {
    fn default() -> Self {
        Self::new()
    }
}

/// An HTTP/1.1 server connection that can end in a tunnel: served by
/// hyper until it is done, then either handed to the tunnel a handler
/// left (after a 101) or shut down as hyper would have.
pub struct Http1<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
{
    state: Http1State<I, S>,
    id: Upgradable,
    conn: Rc<ConnState>,
}

enum Http1State<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
{
    Serving(Box<hyper::server::conn::http1::Connection<I, S>>),
    /// The tunnel runs with the connection counted busy (never closed as
    /// idle under a live `kubectl exec`).
    Tunneling {
        tunnel: Pin<Box<dyn Future<Output = ()>>>,
        _busy: ActiveRequest,
    },
    Closing(I),
    Done,
}

impl<I, S> Http1<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
{
    pub fn new(
        conn: hyper::server::conn::http1::Connection<I, S>,
        id: Upgradable,
        state: Rc<ConnState>,
    ) -> Self {
        Self {
            state: Http1State::Serving(Box::new(conn)),
            id,
            conn: state,
        }
    }
}

impl<I, S, B> Http1<I, S>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B> + Unpin,
    S::Future: Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// Asks hyper to finish the request in flight and stop; a running
    /// tunnel is left alone (its client ends it).
    pub fn graceful_shutdown(&mut self) {
        if let Http1State::Serving(c) = &mut self.state {
            Pin::new(c.as_mut()).graceful_shutdown();
        }
    }
}

impl<I, S, B> Future for Http1<I, S>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B> + Unpin,
    S::Future: Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Output = hyper::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                Http1State::Serving(c) => match c.poll_without_shutdown(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => {
                        this.id.take();
                        this.state = Http1State::Done;
                        return Poll::Ready(Err(e));
                    }
                    Poll::Ready(Ok(())) => {
                        let Http1State::Serving(c) =
                            std::mem::replace(&mut this.state, Http1State::Done)
                        else {
                            unreachable!("matched Serving above");
                        };
                        let parts = c.into_parts();
                        this.state = match this.id.take() {
                            Some(tunnel) => Http1State::Tunneling {
                                tunnel: tunnel(Box::new(parts.io), parts.read_buf),
                                _busy: this.conn.request_started(),
                            },
                            None => Http1State::Closing(parts.io),
                        };
                    }
                },
                Http1State::Tunneling { tunnel, .. } => {
                    std::task::ready!(tunnel.as_mut().poll(cx));
                    this.state = Http1State::Done;
                }
                Http1State::Closing(io) => {
                    let _ = std::task::ready!(Pin::new(io).poll_shutdown(cx));
                    this.state = Http1State::Done;
                }
                Http1State::Done => return Poll::Ready(Ok(())),
            }
        }
    }
}

impl<I, S> Drop for Http1<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
{
    /// A connection that ends before its 101 went out leaves no tunnel
    /// behind.
    fn drop(&mut self) {
        self.id.take();
    }
}
