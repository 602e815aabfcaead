//! etcd's transactions made on the executor that needs them, over an
//! HTTP/2 connection of its own to each member.
//!
//! The etcd-client thread ([`super::bridge`]) costs a create two thread
//! hand-offs on top of its gRPC work: the executor wakes that thread,
//! which wakes the executor back with the answer. On the pinned runs of
//! BENCHMARKS.md that thread spent ~66 µs per create and neither core was
//! full — the rate was bound by the hand-offs, not by CPU. Here the
//! request is framed as gRPC and sent by hyper's HTTP/2 client on the
//! executor's own reactor, so a write never leaves its core until it
//! reaches etcd.
//!
//! Only plain-`http://` members are reached this way; with TLS to etcd
//! the calls keep going through the bridge. Reads of a single key use a
//! transaction holding one range operation, which etcd serves as a
//! linearizable read, like the range call it replaces.

use super::bridge::{Pool, CALL_TIMEOUT};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use etcd_client::proto::{PbTxnRequest, PbTxnResponse};
use etcd_client::{Txn, TxnResponse};
use glommio::net::TcpStream;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use prost::Message;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// How long connecting to a member may take before the next one is tried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// gRPC's status for "the server cannot take this now" (no leader, a
/// member shutting down): the call may go to another member when
/// repeating it is harmless.
const UNAVAILABLE: u32 = 14;

/// Why a call failed, as far as moving to another member goes.
#[derive(Debug)]
enum Failure {
    /// The request never left (no connection to the member).
    Unsent(String),
    /// The member went away with the request sent: only a call that may
    /// be repeated goes again.
    Lost(String),
    /// etcd answered with an error (a failed comparison is not one).
    Refused(String),
}

impl Failure {
    fn message(self) -> String {
        match self {
            Failure::Unsent(m) | Failure::Lost(m) | Failure::Refused(m) => m,
        }
    }
}

/// One executor's connections to the etcd members (made when first
/// needed), and the member calls go to now — shared with the bridge's
/// pool, so a member found dead by either is left by both.
pub struct Local {
    members: Vec<String>,
    /// Each member's `Txn` method, made once.
    txn_uris: Vec<http::Uri>,
    pool: Arc<Pool>,
    conns: RefCell<Vec<Option<SendRequest<Full<Bytes>>>>>,
    /// One connection attempt per member at a time: the calls that find
    /// no connection (all of them, after a fail-over under load) wait for
    /// it instead of each dialling the member.
    dialing: Vec<glommio::sync::Semaphore>,
}

impl Local {
    /// A client for `endpoints` when every one is plain `http://`
    /// (kube's flag takes bare `host:port` as well); none otherwise.
    pub fn new(endpoints: &[String], pool: Arc<Pool>) -> Option<Rc<Self>> {
        let members = plain_members(endpoints)?;
        // The pool holds the members that answered at start, in order:
        // its places are these only when every one did.
        if members.len() != pool.members() {
            return None;
        }
        let txn_uris = members
            .iter()
            .map(|m| format!("http://{m}/etcdserverpb.KV/Txn").parse().ok())
            .collect::<Option<Vec<_>>>()?;
        Some(Rc::new(Self {
            conns: RefCell::new(vec![None; members.len()]),
            dialing: members
                .iter()
                .map(|_| glommio::sync::Semaphore::new(1))
                .collect(),
            txn_uris,
            members,
            pool,
        }))
    }

    /// Runs `txn` on the current member, moving to the next while the
    /// failure allows it (as the bridge's `with_failover`).
    pub async fn txn(&self, txn: Txn, idempotent: bool) -> Result<TxnResponse, String> {
        let body = frame(&PbTxnRequest::from(txn));
        let mut last = String::new();
        for attempt in 0..2 * self.members.len() {
            let member = self.pool.current();
            match self.call(member, body.clone()).await {
                Ok(resp) => return Ok(TxnResponse(resp)),
                Err(Failure::Unsent(m)) => last = m,
                Err(Failure::Lost(m)) if idempotent => last = m,
                Err(f) => return Err(f.message()),
            }
            self.conns.borrow_mut()[member] = None;
            self.pool.failed(member);
            glommio::timer::sleep(Duration::from_millis(25 << attempt.min(4))).await;
        }
        Err(last)
    }

    async fn call(&self, member: usize, body: Bytes) -> Result<PbTxnResponse, Failure> {
        let mut sender = self.connection(member).await?;
        let req = http::Request::post(self.txn_uris[member].clone())
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .header(http::header::TE, "trailers")
            .body(Full::new(body))
            .map_err(|e| Failure::Unsent(e.to_string()))?;
        let exchange = async {
            let resp = sender.send_request(req).await.map_err(|e| {
                if e.is_canceled() || sender.is_closed() {
                    Failure::Unsent(format!("transport error: {e}"))
                } else {
                    Failure::Lost(format!("transport error: {e}"))
                }
            })?;
            let (head, body) = resp.into_parts();
            let collected = body
                .collect()
                .await
                .map_err(|e| Failure::Lost(format!("transport error: {e}")))?;
            // A trailers-only answer carries its status in the headers.
            let trailers = collected.trailers().cloned();
            let status = trailers.as_ref().unwrap_or(&head.headers);
            check_status(head.status, status)?;
            unframe(collected.to_bytes())
        };
        match glommio::timer::timeout(CALL_TIMEOUT, async { Ok(exchange.await) }).await {
            Ok(answer) => answer,
            Err(_) => Err(Failure::Lost("etcd did not answer in time".into())),
        }
    }

    /// This executor's connection to `member`, made if there is none (or
    /// the last one closed).
    async fn connection(&self, member: usize) -> Result<SendRequest<Full<Bytes>>, Failure> {
        let open = || {
            self.conns.borrow()[member]
                .as_ref()
                .filter(|c| !c.is_closed())
                .cloned()
        };
        if let Some(c) = open() {
            return Ok(c);
        }
        let _dialing = self.dialing[member].acquire_permit(1).await;
        // Another call may have connected while this one waited.
        if let Some(c) = open() {
            return Ok(c);
        }
        let addr = &self.members[member];
        let unsent =
            |e: &dyn std::fmt::Display| Failure::Unsent(format!("connect error: {addr}: {e}"));
        let stream = glommio::timer::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr.as_str()))
            .await
            .map_err(|e| unsent(&e))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http2::Builder::new(LocalExec)
            .handshake(crate::hyper_io::HyperIo::new(stream))
            .await
            .map_err(|e| unsent(&e))?;
        glommio::spawn_local(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "an etcd connection ended");
            }
        })
        .detach();
        self.conns.borrow_mut()[member] = Some(sender.clone());
        Ok(sender)
    }
}

/// `host:port` of every member when all are plain `http://` (or bare
/// `host:port`, as kube's flag takes them); none when any is not.
fn plain_members(endpoints: &[String]) -> Option<Vec<String>> {
    let members = endpoints
        .iter()
        .map(|e| match e.strip_prefix("http://") {
            Some(rest) => Some(rest.trim_end_matches('/').to_string()),
            None if !e.contains("://") => Some(e.clone()),
            None => None,
        })
        .collect::<Option<Vec<_>>>()?;
    (!members.is_empty()).then_some(members)
}

/// A message in gRPC's length-prefixed framing, uncompressed.
fn frame(msg: &impl Message) -> Bytes {
    let len = msg.encoded_len();
    let mut buf = BytesMut::with_capacity(5 + len);
    buf.put_u8(0);
    buf.put_u32(len as u32);
    msg.encode(&mut buf).expect("the buffer holds the message");
    buf.freeze()
}

/// The one message of a unary answer.
fn unframe(mut body: Bytes) -> Result<PbTxnResponse, Failure> {
    let bad = |why: &str| Failure::Lost(format!("etcd's answer is malformed: {why}"));
    if body.len() < 5 {
        return Err(bad("shorter than a gRPC frame"));
    }
    if body.get_u8() != 0 {
        return Err(bad("compressed, and none was asked for"));
    }
    let len = body.get_u32() as usize;
    if body.len() != len {
        return Err(bad("the frame's length does not match"));
    }
    PbTxnResponse::decode(body).map_err(|e| bad(&e.to_string()))
}

/// gRPC's verdict on a call: the HTTP status, then `grpc-status` and
/// `grpc-message` (percent-encoded).
fn check_status(http: http::StatusCode, headers: &http::HeaderMap) -> Result<(), Failure> {
    if http != http::StatusCode::OK {
        return Err(Failure::Lost(format!("etcd answered HTTP {http}")));
    }
    let code = headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u32>().ok());
    match code {
        Some(0) => Ok(()),
        None => Err(Failure::Lost("etcd's answer has no grpc-status".into())),
        Some(code) => {
            let message = headers
                .get("grpc-message")
                .map(|m| percent_decoded(m.as_bytes()))
                .unwrap_or_default();
            let text = format!("grpc status {code}: {message}");
            Err(if code == UNAVAILABLE {
                Failure::Lost(text)
            } else {
                Failure::Refused(text)
            })
        }
    }
}

fn percent_decoded(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (raw[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Spawns hyper's connection tasks on the current executor.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: std::future::Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, fut: F) {
        glommio::spawn_local(fut).detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_a_bad_one_is_refused() {
        let resp = PbTxnResponse {
            succeeded: true,
            ..Default::default()
        };
        let framed = frame(&resp);
        assert_eq!(framed[0], 0);
        assert_eq!(
            u32::from_be_bytes(framed[1..5].try_into().unwrap()) as usize,
            framed.len() - 5
        );
        assert!(unframe(framed.clone()).unwrap().succeeded);
        assert!(matches!(
            unframe(framed.slice(..framed.len() - 1)),
            Err(Failure::Lost(_))
        ));
        assert!(matches!(
            unframe(Bytes::from_static(b"\x01\0\0\0\0")),
            Err(Failure::Lost(_))
        ));
        assert!(matches!(
            unframe(Bytes::from_static(b"\0\0")),
            Err(Failure::Lost(_))
        ));
    }

    #[test]
    fn grpc_status_decides_what_may_go_to_another_member() {
        let mut h = http::HeaderMap::new();
        assert!(matches!(
            check_status(http::StatusCode::OK, &h),
            Err(Failure::Lost(_))
        ));
        h.insert("grpc-status", "0".parse().unwrap());
        assert!(check_status(http::StatusCode::OK, &h).is_ok());
        h.insert("grpc-status", "14".parse().unwrap());
        h.insert("grpc-message", "etcdserver:%20no%20leader".parse().unwrap());
        match check_status(http::StatusCode::OK, &h) {
            Err(Failure::Lost(m)) => assert!(m.contains("etcdserver: no leader"), "{m}"),
            other => panic!("{other:?}"),
        }
        h.insert("grpc-status", "9".parse().unwrap());
        assert!(matches!(
            check_status(http::StatusCode::OK, &h),
            Err(Failure::Refused(_))
        ));
        assert!(matches!(
            check_status(http::StatusCode::BAD_GATEWAY, &http::HeaderMap::new()),
            Err(Failure::Lost(_))
        ));
    }

    #[test]
    fn grpc_messages_are_percent_decoded() {
        assert_eq!(percent_decoded(b"a%20b%zz%"), "a b%zz%");
    }

    #[test]
    fn only_plain_members_are_reached_from_the_executor() {
        let eps = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            plain_members(&eps(&["http://127.0.0.1:2379/", "localhost:2380"])),
            Some(eps(&["127.0.0.1:2379", "localhost:2380"]))
        );
        assert_eq!(plain_members(&eps(&["http://a:1", "https://b:2"])), None);
        assert_eq!(plain_members(&[]), None);
    }
}
