//! `Warning:` response headers (RFC 7234 style, code 299, as kube sends
//! them), collected while a request runs — possibly on another shard, so
//! the collector is shareable.

use crate::serving::body::Body;
use http::{HeaderValue, Response};
use kubeshard_core::status::go_quote;
use parking_lot::Mutex;
use std::sync::Arc;

/// Warnings gathered for one request.
#[derive(Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    /// Adds warnings not given yet: an update that runs again after a
    /// conflict finds the same things again, and kube's recorder keeps one
    /// of each too.
    pub fn extend(&self, more: impl IntoIterator<Item = String>) {
        let mut all = self.0.lock();
        for w in more {
            if !all.contains(&w) {
                all.push(w);
            }
        }
    }

    /// Adds the gathered warnings to a response.
    pub fn apply(&self, mut resp: Response<Body>) -> Response<Body> {
        for text in self.0.lock().iter() {
            if let Ok(v) = HeaderValue::from_str(&format!("299 - {}", go_quote(text))) {
                resp.headers_mut().append("Warning", v);
            }
        }
        resp
    }
}
