//! One listener per executor on the shared port (SO_REUSEPORT, which
//! glommio sets), serving HTTP/1.1 and prior-knowledge HTTP/2 on each
//! accepted connection, with graceful shutdown: stop accepting, let
//! in-flight requests finish, end watches.

use super::abort::ConnAbort;
use super::combine::Combining;
use super::io::{HyperIo, LocalExec, PlainStream};
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
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Concurrent HTTP/2 streams per connection (kube-apiserver's default).
const MAX_STREAMS_PER_CONNECTION: u32 = 1000;

/// How long shutdown waits for open connections before giving up on them.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Accepts and serves until shutdown, then drains.
pub async fn serve(listener: TcpListener, api: Rc<Api>) -> std::io::Result<()> {
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
        let (api, open) = (api.clone(), open.clone());
        open.set(open.get() + 1);
        glommio::spawn_local(async move {
            serve_connection(stream, api).await;
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

async fn serve_connection(stream: glommio::net::TcpStream, api: Rc<Api>) {
    if speaks_h2(&stream).await {
        let io = HyperIo::over(Combining::new(PlainStream(stream.buffered())));
        drive(io, api).await;
    } else {
        drive(HyperIo::new(stream), api).await;
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
/// gracefully), or the connection is aborted.
async fn drive<I>(io: I, api: Rc<Api>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
{
    let shutdown = api.shutdown().clone();
    let abort = ConnAbort::default();
    let for_requests = abort.clone();
    let service = service_fn(move |mut req: Request<Incoming>| {
        let api = api.clone();
        req.extensions_mut().insert(for_requests.clone());
        async move {
            // A bug in one handler must not take the executor (and every
            // other connection on it) down: answer 500 instead, as Go's
            // net/http does for a panicking handler.
            let resp = std::panic::AssertUnwindSafe(api.handle(req))
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
    });
    let mut builder = auto::Builder::new(LocalExec);
    // kube-apiserver's --http2-max-streams-per-connection default: informers
    // multiplex many watches over one connection.
    builder
        .http2()
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    let conn = builder.serve_connection(io, service);
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
        conn.as_mut().graceful_shutdown();
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
