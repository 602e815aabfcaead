//! An HTTP/1.1 request whose body the server never read (refused before
//! reading: 403, 404, 405) leaves hyper unable to reuse the connection,
//! and it closes it once the response is out — but the response did not
//! say so, so a client that pools connections sends its next request into
//! a closed socket. Such responses now say `Connection: close`, as the
//! client must then open a new connection anyway.

use http::{HeaderValue, Request, Response};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set once a request's body was read to its end (or drained).
#[derive(Clone, Default)]
pub struct BodyRead(Arc<AtomicBool>);

impl BodyRead {
    /// Watches `req` if it is an HTTP/1 request with a body still to come.
    pub fn watch<B: hyper::body::Body>(req: &mut Request<B>) -> Option<BodyRead> {
        if req.version() >= http::Version::HTTP_2 || req.body().is_end_stream() {
            return None;
        }
        let read = BodyRead::default();
        req.extensions_mut().insert(read.clone());
        Some(read)
    }

    /// Records that the request's body was consumed.
    pub fn mark<B>(req: &Request<B>) {
        if let Some(read) = Self::of(req) {
            read.done();
        }
    }

    /// The request's watch, to mark it once its body is read to the end.
    pub fn of<B>(req: &Request<B>) -> Option<BodyRead> {
        req.extensions().get::<BodyRead>().cloned()
    }

    /// The body was read to its end.
    pub fn done(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Tells the client the connection ends with `resp` if the body was
    /// left unread.
    pub fn close_if_unread<B>(&self, resp: &mut Response<B>) {
        // A 101 hands the connection over: its Connection header names the
        // upgrade.
        if resp.status() == http::StatusCode::SWITCHING_PROTOCOLS {
            return;
        }
        if !self.0.load(Ordering::Relaxed) {
            resp.headers_mut()
                .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    #[test]
    fn only_unread_http1_bodies_close_the_connection() {
        let mut req = Request::new(Full::new(bytes::Bytes::from_static(b"{}")));
        let read = BodyRead::watch(&mut req).expect("a body to watch");
        let mut resp = Response::new(());
        read.close_if_unread(&mut resp);
        assert_eq!(resp.headers()["connection"], "close");
        BodyRead::mark(&req);
        let mut resp = Response::new(());
        read.close_if_unread(&mut resp);
        assert!(resp.headers().get("connection").is_none());
        let mut empty = Request::new(Full::new(bytes::Bytes::new()));
        assert!(BodyRead::watch(&mut empty).is_none());
        let mut h2 = Request::new(Full::new(bytes::Bytes::from_static(b"{}")));
        *h2.version_mut() = http::Version::HTTP_2;
        assert!(BodyRead::watch(&mut h2).is_none());
    }
}
