//! One listener per executor on each shared port (SO_REUSEPORT, which
//! glommio sets): the secure port speaks TLS with ALPN h2/http1.1 and picks
//! hyper's HTTP/2 or HTTP/1.1 server from the negotiated protocol; the
//! optional plain port serves HTTP/1.1 and prior-knowledge HTTP/2. Both
//! shut down gracefully: stop accepting, let in-flight requests finish,
//! end watches.

use crate::context::Api;
use crate::serving::abort::{ConnAbort, Ending};
use crate::serving::combine::Combining;
use crate::serving::conn::ConnInfo;
use crate::serving::connections::{Admit, ConnState};
use crate::serving::cut::Cut;
use crate::serving::io::{HyperIo, LocalExec, PlainStream, TlsTransport};
use crate::serving::turn::Turn;
use crate::serving::unread::BodyRead;
use crate::serving::upgrade::{Http1, Upgradable};
use futures_lite::future;
use futures_lite::FutureExt;
use glommio::net::TcpListener;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::server::conn::auto;
use std::cell::Cell;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Concurrent HTTP/2 streams per connection (kube-apiserver's default).
const MAX_STREAMS_PER_CONNECTION: u32 = 1000;

/// How long shutdown waits for open connections before giving up on them.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// A client that opens a connection but does not finish the TLS handshake
/// in this long is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a listener's connections are spoken to.
#[derive(Clone)]
pub enum Transport {
    /// The plain-HTTP port (loopback only, privileged).
    Plain,
    Tls(futures_rustls::TlsAcceptor),
}

impl Transport {
    pub fn tls(config: Arc<rustls::ServerConfig>) -> Self {
        Transport::Tls(futures_rustls::TlsAcceptor::from(config))
    }
}

/// Which hyper server a connection gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// Plain port: HTTP/2 if the client opens with its preface.
    Detect,
    Http1,
    Http2,
}

/// Accepts and serves until shutdown, then drains.
///
/// A failing `accept` (out of descriptors, above all) backs off instead of
/// spinning — 5 ms, doubling to 1 s, as Go's server does — so the
/// executor's other tasks run and close connections, and an untrusted idle
/// connection is evicted to give a descriptor back. Failures are logged at
/// most once a second.
pub async fn serve(
    listener: TcpListener,
    api: Rc<Api>,
    transport: Transport,
) -> std::io::Result<()> {
    let open = Rc::new(Cell::new(0usize));
    let shutdown = api.shutdown().clone();
    crate::serving::lane::install();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = future::or(async { Some(listener.accept().await) }, async {
            shutdown.wait().await;
            None
        })
        .await;
        let stream = match accepted {
            None => break,
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                let e = std::io::Error::from(e);
                api.connections.evict_one();
                let delay = backoff.failed(&e);
                future::or(glommio::timer::sleep(delay), shutdown.wait()).await;
                continue;
            }
        };
        backoff.succeeded();
        let state = match api.connections.admit(Instant::now()) {
            Admit::Serve(s) => s,
            Admit::Refuse => {
                backoff.refused();
                drop(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (api, open, transport) = (api.clone(), open.clone(), transport.clone());
        open.set(open.get() + 1);
        // Each poll of a connection sends at most a turn's share of body.
        glommio::spawn_local(Turn::new(async move {
            let peer = stream.peer_addr().ok();
            // Each transport's future is boxed on its own: inline, every
            // connection's task would be sized for the largest (TLS, ~12
            // KiB) where a plain one needs ~4 KiB — memory that idle
            // watchers hold for as long as they watch.
            match transport {
                Transport::Plain => Box::pin(serve_connection(stream, api, peer, state)).await,
                Transport::Tls(acceptor) => {
                    Box::pin(serve_tls(stream, api, acceptor, peer, state)).await
                }
            }
            open.set(open.get() - 1);
        }))
        .detach();
    }
    drop(listener);
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while open.get() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// The accept loop's back-off and its rate-limited log.
#[derive(Default)]
struct AcceptBackoff {
    delay: Duration,
    failures: u64,
    refused: u64,
    last_log: Option<Instant>,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);

    fn failed(&mut self, e: &std::io::Error) -> Duration {
        self.failures += 1;
        self.delay = (self.delay * 2).clamp(Self::FIRST, Self::MAX);
        if self.may_log() {
            tracing::warn!(error = %e, failures = self.failures, retry_in = ?self.delay, "accept failed");
            self.failures = 0;
        }
        self.delay
    }

    fn refused(&mut self) {
        self.refused += 1;
        if self.may_log() {
            tracing::warn!(
                refused = self.refused,
                "connection limit reached with no idle unauthenticated connection to close: refusing new connections"
            );
            self.refused = 0;
        }
    }

    fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }

    fn may_log(&mut self) -> bool {
        let now = Instant::now();
        if self
            .last_log
            .is_some_and(|t| now.saturating_duration_since(t) < Duration::from_secs(1))
        {
            return false;
        }
        self.last_log = Some(now);
        true
    }
}

async fn serve_connection(
    stream: glommio::net::TcpStream,
    api: Rc<Api>,
    peer: Option<std::net::SocketAddr>,
    state: Rc<ConnState>,
) {
    let conn = Rc::new(ConnInfo::plain(peer, state.clone()));
    let h2 = future::or(speaks_h2(&stream), async {
        state.abort.aborted().await;
        false
    })
    .await;
    if state.abort.is_aborted() {
        return;
    }
    if h2 {
        state.set_multiplexed();
        let io = HyperIo::over(Combining::new(PlainStream(stream.buffered())), state);
        drive(io, api, conn, Protocol::Detect).await;
    } else {
        drive(HyperIo::new(stream, state), api, conn, Protocol::Http1).await;
    }
}

async fn serve_tls(
    stream: glommio::net::TcpStream,
    api: Rc<Api>,
    acceptor: futures_rustls::TlsAcceptor,
    peer: Option<std::net::SocketAddr>,
    state: Rc<ConnState>,
) {
    // The handshake ends early when the connection is evicted to make room.
    let handshake = future::or(async { Some(acceptor.accept(stream).await) }, async {
        future::or(
            glommio::timer::sleep(HANDSHAKE_TIMEOUT),
            state.abort.aborted(),
        )
        .await;
        None
    })
    .await;
    let tls = match handshake {
        Some(Ok(tls)) => tls,
        Some(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            return;
        }
        None => return,
    };
    let (_, session) = tls.get_ref();
    let h2 = session.alpn_protocol() == Some(b"h2");
    let chain = session
        .peer_certificates()
        .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
        .unwrap_or_default();
    let conn = Rc::new(ConnInfo::tls(peer, chain, state.clone()));
    if h2 {
        state.set_multiplexed();
        let io = HyperIo::over(Combining::new(TlsTransport::new(tls)), state);
        drive(io, api, conn, Protocol::Http2).await;
    } else {
        drive(
            HyperIo::over(TlsTransport::new(tls), state),
            api,
            conn,
            Protocol::Http1,
        )
        .await;
    }
}

/// Whether a plain connection opens with HTTP/2's preface ("PRI * HTTP/2.0…"
/// cannot start an HTTP/1.1 request). Only peeks: hyper reads it again.
async fn speaks_h2(stream: &glommio::net::TcpStream) -> bool {
    let mut buf = [0u8; 3];
    for _ in 0..100 {
        match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if buf[..n] != b"PRI"[..n] => return false,
            Ok(3) => return true,
            // Fewer bytes than the prefix so far: look again shortly.
            Ok(_) => glommio::timer::sleep(Duration::from_millis(1)).await,
        }
    }
    false
}

/// Serves one connection until it ends, the server shuts down (then
/// gracefully), or the connection is aborted or closed as idle.
async fn drive<I>(io: I, api: Rc<Api>, conn: Rc<ConnInfo>, protocol: Protocol)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
{
    let abort = conn.state.abort.clone();
    let conn_state = conn.state.clone();
    let chain = api.clone();
    // Only HTTP/1.1 connections can be handed to a tunnel after a 101.
    let upgradable = (protocol == Protocol::Http1).then(Upgradable::new);
    let service = service_fn(move |mut req: Request<Incoming>| {
        let (api, conn) = (chain.clone(), conn.clone());
        // Only a request asking to upgrade needs to know it may.
        if let Some(u) = upgradable.filter(|_| req.headers().contains_key(http::header::UPGRADE)) {
            req.extensions_mut().insert(u);
        }
        // Counted from here until its response body is done (or dropped):
        // the connection is busy, not idle, all that time.
        let active = conn.state.request_started();
        let body_read = BodyRead::watch(&mut req);
        // Boxed: hyper keeps a stream's service future inside its stream
        // task, and glommio's spawn and every layer above move it by value;
        // unboxed, each move copied the whole handler state machine (the
        // largest memcpy per create).
        Box::pin(async move {
            // Read on the first poll, inside the stream's task (HTTP/2).
            req.extensions_mut()
                .insert(Cut::for_request(&conn.state.abort));
            // A bug in one handler must not take the executor (and every
            // other connection on it) down: answer 500 instead, as Go's
            // net/http does for a panicking handler.
            let served = std::panic::AssertUnwindSafe(crate::filters::serve(&api, &conn, req))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("handler panicked; answered 500");
                    crate::filters::Served::from(crate::render::response::error(
                        &kubeshard_core::status::ApiError::internal("the request handler failed"),
                        crate::render::response::Render::JSON,
                    ))
                });
            let mut resp = served.into_response(active);
            if let Some(read) = body_read {
                read.close_if_unread(&mut resp);
            }
            Ok::<_, Infallible>(resp)
        })
    });
    // kube-apiserver's --http2-max-streams-per-connection default: informers
    // multiplex many watches over one connection.
    match protocol {
        Protocol::Detect => {
            let mut builder = auto::Builder::new(LocalExec);
            builder
                .http2()
                .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
            run(builder.serve_connection(io, service), &api, abort).await;
        }
        Protocol::Http2 => {
            let mut builder = hyper::server::conn::http2::Builder::new(LocalExec);
            builder.max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
            run(builder.serve_connection(io, service), &api, abort).await;
        }
        Protocol::Http1 => {
            let builder = hyper::server::conn::http1::Builder::new();
            let served = builder.serve_connection(io, service);
            let id = upgradable.expect("set for HTTP/1.1");
            run(Http1::new(served, id, conn_state), &api, abort).await;
        }
    }
}

/// A hyper connection that can be asked to finish gracefully.
trait Graceful: Future {
    fn graceful(self: Pin<&mut Self>);
}

/// The bounds every hyper server connection here shares.
macro_rules! graceful {
    ($conn:ty, $($extra:tt)*) => {
        impl<I, S, $($extra)*> Graceful for $conn
        where
            Self: Future,
            I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
            S: hyper::service::HttpService<Incoming>,
            S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
            S::ResBody: hyper::body::Body + 'static,
            <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        {
            fn graceful(self: Pin<&mut Self>) {
                self.graceful_shutdown();
            }
        }
    };
}

graceful!(auto::Connection<'_, I, S, E>, E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>);
graceful!(hyper::server::conn::http2::Connection<I, S, E>, E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>);
impl<I, S, B> Graceful for Http1<I, S>
where
    Self: Future,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    S: hyper::service::HttpService<Incoming, ResBody = B> + Unpin,
    S::Future: Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful(self: Pin<&mut Self>) {
        self.get_mut().graceful_shutdown();
    }
}

/// Drives a connection until it ends, the server shuts down (then
/// gracefully: in-flight requests finish), it is closed as idle (also
/// gracefully, for at most [`IDLE_CLOSE_GRACE`]) or it is aborted.
async fn run<C: Graceful>(conn: C, api: &Api, abort: ConnAbort) {
    let shutdown = api.shutdown().clone();
    let mut conn = std::pin::pin!(conn);
    let ended = future::or(
        future::or(
            async {
                let _ = conn.as_mut().await;
                End::Finished
            },
            async {
                shutdown.wait().await;
                End::Shutdown
            },
        ),
        async {
            match abort.wait().await {
                Ending::Idle => End::Idle,
                Ending::Abort => End::Aborted,
            }
        },
    )
    .await;
    match ended {
        End::Shutdown => {
            conn.as_mut().graceful();
            let _ = future::or(
                async {
                    let _ = conn.await;
                },
                abort.aborted(),
            )
            .await;
        }
        End::Idle => {
            conn.as_mut().graceful();
            let _ = future::or(
                async {
                    let _ = conn.await;
                },
                async {
                    future::or(glommio::timer::sleep(IDLE_CLOSE_GRACE), abort.aborted()).await;
                },
            )
            .await;
        }
        // Finished, or aborted: dropping the connection closes the socket.
        End::Finished | End::Aborted => {}
    }
}

/// How long an idle connection asked to close may take to say goodbye
/// (HTTP/2's GOAWAY) before it is dropped.
const IDLE_CLOSE_GRACE: Duration = Duration::from_secs(2);

enum End {
    Finished,
    Shutdown,
    Idle,
    Aborted,
}
