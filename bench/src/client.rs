//! A small HTTP client over hyper 1 with a fixed set of connections.
//!
//! A benchmark must control exactly how many connections it opens and how
//! requests map onto them, which a pooling client hides; so each worker
//! uses "slot" `worker % connections`. An HTTP/1.1 slot carries one request
//! at a time (workers sharing it queue on its lock), an HTTP/2 slot is a
//! multiplexed connection that any number of workers use at once.

use crate::target::Target;
use crate::tls;
use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

type Body = Full<Bytes>;

/// A complete response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Bytes,
}

impl Response {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why a request got no response. Counted apart from HTTP error codes.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    #[error("connect: {0}")]
    Connect(String),
    #[error("timeout")]
    Timeout,
    #[error("transport: {0}")]
    Transport(String),
}

impl ClientError {
    /// The key this error is counted under in results.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::Connect(_) => "connect",
            ClientError::Timeout => "timeout",
            ClientError::Transport(_) => "transport",
        }
    }
}

enum Sender {
    H1(http1::SendRequest<Body>),
    H2(http2::SendRequest<Body>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

struct Inner {
    target: Target,
    tls: Option<tokio_rustls::TlsConnector>,
    host: HeaderValue,
    authorization: Option<HeaderValue>,
    impersonate: Option<HeaderValue>,
    scheme: &'static str,
    slots: Vec<Mutex<Option<Sender>>>,
    timeout: Duration,
}

/// Cheap to clone; clones share the connections.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// No connection is opened until a request needs one.
    pub fn new(target: &Target, connections: usize, timeout: Duration) -> anyhow::Result<Client> {
        let tls = if target.tls {
            let cfg = tls::client_config(&target.tls_settings, target.http2)?;
            Some(tokio_rustls::TlsConnector::from(cfg))
        } else {
            None
        };
        let authorization = match &target.authorization {
            Some(a) => {
                let mut v = HeaderValue::from_str(a)?;
                v.set_sensitive(true);
                Some(v)
            }
            None => None,
        };
        let impersonate = match &target.impersonate {
            Some(u) => Some(HeaderValue::from_str(u)?),
            None => None,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                impersonate,
                host: HeaderValue::from_str(&target.authority())?,
                scheme: if target.tls { "https" } else { "http" },
                target: target.clone(),
                tls,
                authorization,
                slots: (0..connections.max(1)).map(|_| Mutex::new(None)).collect(),
                timeout,
            }),
        })
    }

    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    pub fn connections(&self) -> usize {
        self.inner.slots.len()
    }

    /// Sends a request on connection `slot` (modulo the connection count)
    /// and reads the whole response, within the client's timeout.
    pub async fn request(
        &self,
        slot: usize,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Response, ClientError> {
        let inner = &self.inner;
        let deadline = tokio::time::Instant::now() + inner.timeout;
        let slot = &inner.slots[slot % inner.slots.len()];
        let mut guard = tokio::time::timeout_at(deadline, slot.lock())
            .await
            .map_err(|_| ClientError::Timeout)?;
        if guard.as_ref().is_none_or(Sender::is_closed) {
            *guard = None;
            *guard = Some(
                tokio::time::timeout_at(deadline, self.dial())
                    .await
                    .map_err(|_| ClientError::Timeout)??,
            );
        }
        match guard.as_mut().expect("connected above") {
            Sender::H2(s) => {
                let mut s = s.clone();
                drop(guard);
                let req = self.build(method, path, body, true);
                tokio::time::timeout_at(deadline, async move {
                    s.ready().await.map_err(transport)?;
                    let resp = s.send_request(req).await.map_err(transport)?;
                    collect(resp).await
                })
                .await
                .map_err(|_| ClientError::Timeout)?
            }
            Sender::H1(s) => {
                let req = self.build(method, path, body, false);
                let result = tokio::time::timeout_at(deadline, async {
                    s.ready().await.map_err(transport)?;
                    let resp = s.send_request(req).await.map_err(transport)?;
                    collect(resp).await
                })
                .await
                .map_err(|_| ClientError::Timeout)
                .and_then(|r| r);
                if result.is_err() {
                    // The connection may hold half a response: never reuse it.
                    *guard = None;
                }
                result
            }
        }
    }

    /// Starts a streaming request (a watch) and returns its status and body.
    /// With `slot` on an HTTP/2 client the stream shares that connection;
    /// otherwise it gets a connection of its own, closed when the body is
    /// dropped. Only the response head is bound by the timeout.
    pub async fn stream(
        &self,
        slot: Option<usize>,
        path: &str,
    ) -> Result<(u16, Incoming), ClientError> {
        let inner = &self.inner;
        let fut = async {
            let sender = match slot {
                Some(i) if inner.target.http2 => {
                    let slot = &inner.slots[i % inner.slots.len()];
                    let mut guard = slot.lock().await;
                    if guard.as_ref().is_none_or(Sender::is_closed) {
                        *guard = Some(self.dial().await?);
                    }
                    match guard.as_ref().expect("connected above") {
                        Sender::H2(s) => Sender::H2(s.clone()),
                        // The server refused h2 in ALPN: a connection of its own.
                        Sender::H1(_) => self.dial().await?,
                    }
                }
                _ => self.dial().await?,
            };
            let resp = match sender {
                Sender::H1(mut s) => {
                    let req = self.build(Method::GET, path, None, false);
                    s.ready().await.map_err(transport)?;
                    s.send_request(req).await.map_err(transport)?
                }
                Sender::H2(mut s) => {
                    let req = self.build(Method::GET, path, None, true);
                    s.ready().await.map_err(transport)?;
                    s.send_request(req).await.map_err(transport)?
                }
            };
            Ok((resp.status().as_u16(), resp.into_body()))
        };
        tokio::time::timeout(inner.timeout, fut)
            .await
            .map_err(|_| ClientError::Timeout)?
    }

    fn build(&self, method: Method, path: &str, body: Option<Bytes>, h2: bool) -> Request<Body> {
        let inner = &self.inner;
        let pq = format!("{}{}", inner.target.base_path, path);
        let uri = if h2 {
            format!("{}://{}{}", inner.scheme, inner.target.authority(), pq)
        } else {
            pq
        };
        let accept = if inner.target.protobuf && method == Method::GET {
            "application/vnd.kubernetes.protobuf"
        } else {
            "application/json"
        };
        let mut b = Request::builder()
            .method(method)
            .uri(uri)
            .header(ACCEPT, HeaderValue::from_static(accept));
        if !h2 {
            b = b.header(HOST, inner.host.clone());
        }
        if let Some(a) = &inner.authorization {
            b = b.header(AUTHORIZATION, a.clone());
        }
        if let Some(u) = &inner.impersonate {
            b = b.header("impersonate-user", u.clone());
        }
        if body.is_some() {
            b = b.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        b.body(Full::new(body.unwrap_or_default()))
            .expect("paths built by the bench are valid URIs")
    }

    /// Opens one connection (TCP, TLS if https, then the HTTP handshake).
    async fn dial(&self) -> Result<Sender, ClientError> {
        let inner = &self.inner;
        let addrs = inner
            .target
            .resolve()
            .await
            .map_err(|e| ClientError::Connect(format!("{e:#}")))?;
        let tcp = TcpStream::connect(&addrs[..])
            .await
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let (io, h2): (Box<dyn Io>, bool) = match &inner.tls {
            Some(connector) => {
                let name = rustls::pki_types::ServerName::try_from(inner.target.host.clone())
                    .map_err(|e| ClientError::Connect(e.to_string()))?;
                let s = connector
                    .connect(name, tcp)
                    .await
                    .map_err(|e| ClientError::Connect(format!("TLS: {e}")))?;
                let h2 = s.get_ref().1.alpn_protocol() == Some(b"h2");
                (Box::new(s), h2)
            }
            None => (Box::new(tcp), inner.target.http2),
        };
        let io = TokioIo::new(io);
        if h2 {
            // Fixed, generous windows: small (adaptive, starting) windows
            // make the server split events into tiny DATA frames, which
            // h2 counts against its small-frame budget and answers with
            // GOAWAY "too_many_data_frames" once a busy load generator
            // falls behind reading them.
            let (send, conn) = http2::Builder::new(TokioExecutor::new())
                .initial_stream_window_size(1 << 20)
                .initial_connection_window_size(32 << 20)
                .handshake(io)
                .await
                .map_err(|e| ClientError::Connect(format!("h2 handshake: {e}")))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Sender::H2(send))
        } else {
            let (send, conn) = http1::handshake(io)
                .await
                .map_err(|e| ClientError::Connect(format!("http/1.1 handshake: {e}")))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Sender::H1(send))
        }
    }
}

fn transport(e: hyper::Error) -> ClientError {
    ClientError::Transport(e.to_string())
}

async fn collect(resp: http::Response<Incoming>) -> Result<Response, ClientError> {
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(transport)?
        .to_bytes();
    Ok(Response { status, body })
}
