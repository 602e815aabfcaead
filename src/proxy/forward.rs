//! Forwarding one request to a backend and its answer back: streamed both
//! ways, and for a protocol upgrade (exec, attach, port-forward, a
//! WebSocket through a proxy) the 101 passed on and the two connections
//! joined by a tunnel.

use super::dial::{BackendIo, Dialer, Endpoint};
use super::tunnel::splice;
use crate::serving::body::{Body, ChunkStream};
use crate::serving::frames::Frames;
use crate::serving::upgrade::{ClientIo, Upgradable};
use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use hyper::body::{Body as _, Incoming};
use kubeshard_core::status::ApiError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Headers that describe one connection, not the message (RFC 9110
/// 7.6.1), and the caller's credentials, which are for this server only.
const NOT_FORWARDED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "authorization",
    "host",
];

fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

pub fn copy_headers(from: &HeaderMap, to: &mut HeaderMap, upgrade: bool) {
    // Headers the sender named in `Connection` are for this hop only too.
    let per_hop: Vec<String> = from
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    for (name, value) in from {
        let n = name.as_str();
        if NOT_FORWARDED.contains(&n)
            || n.starts_with("impersonate-")
            // An authenticating proxy's identity headers were for this
            // server (kube drops them once read).
            || n.starts_with("x-remote-")
            || per_hop.iter().any(|h| h == n)
        {
            continue;
        }
        to.append(name.clone(), value.clone());
    }
    if upgrade {
        for h in [header::CONNECTION, header::UPGRADE] {
            for v in from.get_all(&h) {
                to.append(h.clone(), v.clone());
            }
        }
    }
}

/// Why the backend could not be reached, as kube words it for this kind
/// of backend.
pub struct Unreachable {
    pub code: u16,
    pub prefix: &'static str,
}

/// kubelets: `error dialing backend: …` (500).
pub const KUBELET: Unreachable = Unreachable {
    code: 500,
    prefix: "error dialing backend",
};
/// pods, services, nodes through `proxy`: 503.
pub const PROXIED: Unreachable = Unreachable {
    code: 503,
    prefix: "error trying to reach service",
};

pub fn unreachable_error(u: &Unreachable, e: impl std::fmt::Display) -> ApiError {
    let reason = if u.code == 503 {
        "ServiceUnavailable"
    } else {
        "InternalError"
    };
    ApiError::new(u.code, reason, format!("{}: {e}", u.prefix))
}

/// Refuses an upgrade the client's connection cannot make.
pub fn check_upgrade(req: &Request<Incoming>) -> Result<bool, ApiError> {
    let upgrade = is_upgrade(req.headers());
    if upgrade && req.extensions().get::<Upgradable>().is_none() {
        return Err(ApiError::bad_request(
            "protocol upgrades need an HTTP/1.1 connection",
        ));
    }
    Ok(upgrade)
}

/// Sends `req` to `path_and_query` at `ep` and answers what came back.
pub async fn forward(
    dialer: &Dialer,
    ep: &Endpoint,
    path_and_query: &str,
    req: Request<Incoming>,
    unreachable: &Unreachable,
) -> Result<Response<Body>, ApiError> {
    check_upgrade(&req)?;
    let stream = dialer
        .dial(ep)
        .await
        .map_err(|e| unreachable_error(unreachable, e))?;
    let out = outgoing(req, path_and_query, &ep.authority(), |_| {})?;
    exchange(stream, out, unreachable).await
}

/// The request to send on: `req` at `path_and_query`, with the end-to-end
/// headers only, then those `add` puts in.
pub fn outgoing(
    req: Request<Incoming>,
    path_and_query: &str,
    authority: &str,
    add: impl FnOnce(&mut HeaderMap),
) -> Result<Request<Incoming>, ApiError> {
    let upgrade = is_upgrade(req.headers());
    crate::serving::unread::BodyRead::mark(&req);
    let (parts, body) = req.into_parts();
    let mut out = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query)
        .body(body)
        .map_err(|e| ApiError::bad_request(format!("cannot forward this request: {e}")))?;
    copy_headers(&parts.headers, out.headers_mut(), upgrade);
    if let Ok(host) = HeaderValue::from_str(authority) {
        out.headers_mut().insert(header::HOST, host);
    }
    add(out.headers_mut());
    *out.extensions_mut() = parts.extensions;
    Ok(out)
}

/// Sends `out` (from [`outgoing`]) over a new connection `stream` and
/// answers what came back; an upgrade is passed through.
pub async fn exchange(
    stream: super::dial::Stream,
    out: Request<Incoming>,
    unreachable: &Unreachable,
) -> Result<Response<Body>, ApiError> {
    let upgrade = is_upgrade(out.headers());
    let upgradable = out.extensions().get::<Upgradable>().copied();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(BackendIo::new(stream))
        .await
        .map_err(|e| unreachable_error(unreachable, e))?;
    let mut conn = Box::pin(conn.without_shutdown());
    let mut sent = Box::pin(sender.send_request(out));
    // The backend's connection may finish (a `Connection: close` answer
    // read to its end) before the response is picked up: it is there.
    let mut conn_done = None;
    let answer = std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = sent.as_mut().poll(cx) {
            return Poll::Ready(r.map_err(|e| e.to_string()));
        }
        if conn_done.is_none() {
            match conn.as_mut().poll(cx) {
                Poll::Ready(Ok(parts)) => conn_done = Some(parts),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e.to_string())),
                Poll::Pending => return Poll::Pending,
            }
            if let Poll::Ready(r) = sent.as_mut().poll(cx) {
                return Poll::Ready(r.map_err(|e| e.to_string()));
            }
        }
        Poll::Ready(Err("the backend closed the connection".into()))
    })
    .await
    .map_err(|e| unreachable_error(unreachable, e))?;
    drop(sent);
    let (head, backend_body) = answer.into_parts();
    let switching = head.status == StatusCode::SWITCHING_PROTOCOLS;
    let resp = response_head(&head, switching);
    if switching {
        let Some(id) = upgradable.filter(|_| upgrade) else {
            return Err(ApiError::internal("the backend switched protocols unasked"));
        };
        // The backend's side is ready once its connection has handed
        // over the socket.
        let backend = match conn_done {
            Some(parts) => parts,
            None => conn.await.map_err(|e| unreachable_error(unreachable, e))?,
        };
        let (backend_io, backend_early): (Box<dyn ClientIo>, _) =
            (Box::new(backend.io), backend.read_buf);
        id.set(Box::new(move |client, client_early| {
            Box::pin(splice(client, client_early, backend_io, backend_early))
        }));
        return resp
            .body(Body::full(bytes::Bytes::new()))
            .map_err(|e| ApiError::internal(&e.to_string()));
    }
    // The backend connection carries the body: it runs until the body is
    // read (or the client goes and the body is dropped).
    if conn_done.is_none() {
        glommio::spawn_local(async move {
            let _ = conn.await;
        })
        .detach();
    }
    resp.body(Body::Stream(Box::pin(Forwarded::new(backend_body))))
        .map_err(|e| ApiError::internal(&e.to_string()))
}

/// The client's response head for a backend's: its status and end-to-end
/// headers.
pub fn response_head(head: &http::response::Parts, switching: bool) -> http::response::Builder {
    let mut resp = Response::builder().status(head.status);
    if let Some(h) = resp.headers_mut() {
        copy_headers(&head.headers, h, switching);
    }
    resp
}

/// A backend's response body, passed on as it arrives; `on_end` runs
/// once it was read to its end (a kept connection goes back to its pool).
pub struct Forwarded {
    body: Incoming,
    on_end: Option<Box<dyn FnOnce()>>,
}

impl Forwarded {
    pub fn new(body: Incoming) -> Self {
        Self { body, on_end: None }
    }

    pub fn on_end(body: Incoming, f: impl FnOnce() + 'static) -> Self {
        Self {
            body,
            on_end: Some(Box::new(f)),
        }
    }
}

impl ChunkStream for Forwarded {
    fn poll_chunk(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frames>> {
        loop {
            match std::task::ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    // The last bytes of a body of known length: whoever
                    // sends them on may not ask for the end after them.
                    if self.body.is_end_stream() {
                        if let Some(f) = self.on_end.take() {
                            f();
                        }
                    }
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Poll::Ready(Some(Frames::from(data)));
                        }
                    }
                }
                None => {
                    if let Some(f) = self.on_end.take() {
                        f();
                    }
                    return Poll::Ready(None);
                }
                // A backend that fails mid-body ends the response short,
                // as a proxy can do no better once the head is sent.
                Some(Err(_)) => return Poll::Ready(None),
            }
        }
    }
}

/// A GET of `path` at `ep` for a health check: the status and body (at
/// most 64 KiB of it), or why there was none.
pub async fn probe(dialer: &Dialer, ep: &Endpoint, path: &str) -> Result<(u16, String), String> {
    let url = format!(
        "{}://{}{path}",
        if ep.scheme == super::Scheme::Https {
            "https"
        } else {
            "http"
        },
        ep.authority()
    );
    let stream = dialer
        .dial(ep)
        .await
        .map_err(|e| format!("Get {url:?}: {e}"))?;
    let (status, body) = get_once(stream, ep, path, &[], 64 * 1024)
        .await
        .map_err(|e| format!("Get {url:?}: {e}"))?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// One GET of `path` with `headers` over a new connection `stream` to
/// `ep`: the status and body (at most `limit` bytes), or why there was
/// none.
pub async fn get_once(
    stream: super::dial::Stream,
    ep: &Endpoint,
    path: &str,
    headers: &[(&str, &str)],
    limit: usize,
) -> Result<(u16, bytes::Bytes), String> {
    use http_body_util::BodyExt;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(BackendIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    glommio::spawn_local(async move {
        let _ = conn.await;
    })
    .detach();
    let mut req = Request::builder()
        .uri(path)
        .header(header::HOST, ep.authority());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = http_body_util::Limited::new(resp.into_body(), limit)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_end_to_end_headers_are_forwarded() {
        let mut from = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-trace-hop"),
            ("x-trace-hop", "1"),
            ("authorization", "Bearer secret"),
            ("impersonate-user", "root"),
            ("x-remote-user", "carol"),
            ("accept", "text/plain"),
            ("transfer-encoding", "chunked"),
        ] {
            from.append(k, HeaderValue::from_static(v));
        }
        let mut to = HeaderMap::new();
        copy_headers(&from, &mut to, false);
        let names: Vec<&str> = to.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["accept"]);
        let mut up = HeaderMap::new();
        from.insert("connection", HeaderValue::from_static("Upgrade"));
        from.insert("upgrade", HeaderValue::from_static("websocket"));
        copy_headers(&from, &mut up, true);
        assert_eq!(up["upgrade"], "websocket");
        assert_eq!(up["connection"], "Upgrade");
    }
}
