//! One listener per executor on each shared port (SO_REUSEPORT, which
//! glommio sets): the secure port speaks TLS with ALPN h2/http1.1 and picks
//! hyper's HTTP/2 or HTTP/1.1 server from the negotiated protocol; the
//! optional plain port serves HTTP/1.1 and prior-knowledge HTTP/2. Both
//! shut down gracefully: stop accepting, let in-flight requests finish, end
//! watches.

use super::abort::ConnAbort;
use super::conn::ConnInfo;
use super::io::{HyperIo, LocalExec, TlsIo};
use crate::handlers::Api;
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

/// Accepts and serves until shutdown, then drains.
pub async fn serve(
    listener: TcpListener,
    api: Rc<Api>,
    transport: Transport,
) -> std::io::Result<()> {
    let open = Rc::new(Cell::new(0usize));
    let shutdown = api.shutdown().clone();
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
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (api, open, transport) = (api.clone(), open.clone(), transport.clone());
        open.set(open.get() + 1);
        glommio::spawn_local(async move {
            let peer = stream.peer_addr().ok();
            match transport {
                Transport::Plain => serve_plain(stream, api, Rc::new(ConnInfo::plain(peer))).await,
                Transport::Tls(acceptor) => serve_tls(stream, api, acceptor, peer).await,
            }
            open.set(open.get() - 1);
        })
        .detach();
    }
    drop(listener);
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while open.get() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// The hyper service of one connection: the filter chain, with a panic in
/// it answered 500 instead of taking the executor down.
fn service(
    api: Rc<Api>,
    conn: Rc<ConnInfo>,
    abort: ConnAbort,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = hyper::Response<super::body::Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<hyper::Response<super::body::Body>, Infallible>>,
> {
    service_fn(move |mut req: Request<Incoming>| {
        let (api, conn) = (api.clone(), conn.clone());
        req.extensions_mut().insert(abort.clone());
        async move {
            // A bug in one handler must not take the executor (and every
            // other connection on it) down: answer 500 instead, as Go's
            // net/http does for a panicking handler.
            let resp = std::panic::AssertUnwindSafe(crate::filters::serve(&api, &conn, req))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("handler panicked; answered 500");
                    crate::handlers::response::error(
                        &kubeshard_core::status::ApiError::internal("the request handler failed"),
                        crate::handlers::response::Render::JSON,
                    )
                });
            Ok::<_, Infallible>(resp)
        }
    })
}

async fn serve_plain(stream: glommio::net::TcpStream, api: Rc<Api>, conn: Rc<ConnInfo>) {
    let abort = ConnAbort::default();
    let svc = service(api.clone(), conn, abort.clone());
    let mut builder = auto::Builder::new(LocalExec);
    // kube-apiserver's --http2-max-streams-per-connection default: informers
    // multiplex many watches over one connection.
    builder
        .http2()
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    let conn = builder.serve_connection(HyperIo::new(stream), svc);
    drive(conn, &api, abort).await;
}

async fn serve_tls(
    stream: glommio::net::TcpStream,
    api: Rc<Api>,
    acceptor: futures_rustls::TlsAcceptor,
    peer: Option<std::net::SocketAddr>,
) {
    let handshake = future::or(async { Some(acceptor.accept(stream).await) }, async {
        glommio::timer::sleep(HANDSHAKE_TIMEOUT).await;
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
    let conn = Rc::new(ConnInfo::tls(peer, chain));
    let abort = ConnAbort::default();
    let svc = service(api.clone(), conn, abort.clone());
    let io = TlsIo::new(tls);
    if h2 {
        let mut builder = hyper::server::conn::http2::Builder::new(LocalExec);
        builder.max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
        drive(builder.serve_connection(io, svc), &api, abort).await;
    } else {
        let builder = hyper::server::conn::http1::Builder::new();
        drive(builder.serve_connection(io, svc), &api, abort).await;
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
graceful!(hyper::server::conn::http1::Connection<I, S>,);

/// Serves a connection until it ends, the server shuts down (then
/// gracefully: in-flight requests finish) or a request aborts it.
async fn drive<C: Graceful>(conn: C, api: &Api, abort: ConnAbort) {
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
            abort.wait().await;
            End::Aborted
        },
    )
    .await;
    if let End::Shutdown = ended {
        conn.as_mut().graceful();
        let _ = future::or(
            async {
                let _ = conn.await;
            },
            abort.wait(),
        )
        .await;
    }
    // Finished, or aborted: dropping the connection closes the socket.
}

enum End {
    Finished,
    Shutdown,
    Aborted,
}
