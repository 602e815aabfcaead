//! `Warning:` response headers (RFC 7234 style, code 299, as kube sends
//! them), collected while a request runs — possibly on another shard, so
//! the collector is shareable — and the audit annotations admission adds
//! on the way (carried to the audit record on the response).

use crate::serving::body::Body;
use http::{HeaderValue, Response};
use kubeshard_core::status::go_quote;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

/// Warnings and audit annotations gathered for one request.
#[derive(Clone, Default)]
pub struct Warnings(Arc<Mutex<Notes>>);

#[derive(Default)]
struct Notes {
    warnings: Vec<String>,
    annotations: Vec<(String, String)>,
    /// Mutating webhooks run one after another: their times add up.
    mutating_webhooks: Duration,
    /// Validating webhooks run together: the longest counts.
    validating_webhooks: Duration,
}

/// How long a request waited on admission webhooks, handed to the request
/// metrics as a response extension: kube's SLI latency
/// (`apiserver_request_sli_duration_seconds`) leaves it out, as it
/// depends on the cluster's webhooks, not on the server.
#[derive(Clone, Copy, Debug, Default)]
pub struct WebhookLatency(pub Duration);

/// Audit annotations a request's handling added, handed to the audit
/// record as a response extension.
#[derive(Clone, Default)]
pub struct AuditAnnotations(pub Vec<(String, String)>);

impl Warnings {
    /// Adds warnings not given yet: an update that runs again after a
    /// conflict finds the same things again, and kube's recorder keeps one
    /// of each too.
    pub fn extend(&self, more: impl IntoIterator<Item = String>) {
        let mut notes = self.0.lock();
        for w in more {
            if !notes.warnings.contains(&w) {
                notes.warnings.push(w);
            }
        }
    }

    /// Sets an audit annotation (the first value of a key stays, as in
    /// kube).
    pub fn annotate(&self, key: String, value: String) {
        let mut notes = self.0.lock();
        if !notes.annotations.iter().any(|(k, _)| *k == key) {
            notes.annotations.push((key, value));
        }
    }

    /// Adds the time a webhook call took.
    pub fn webhook_took(&self, mutating: bool, took: Duration) {
        let mut notes = self.0.lock();
        if mutating {
            notes.mutating_webhooks += took;
        } else {
            notes.validating_webhooks = notes.validating_webhooks.max(took);
        }
    }

    /// A refused write's answer: its Status with the warnings gathered on
    /// the way (kube sends a webhook's warnings with its refusal too).
    pub fn refused(
        &self,
        e: kubeshard_core::status::ApiError,
        render: super::response::Render,
    ) -> Result<Response<Body>, kubeshard_core::status::ApiError> {
        let empty = {
            let notes = self.0.lock();
            notes.warnings.is_empty()
                && notes.annotations.is_empty()
                && notes.mutating_webhooks.is_zero()
                && notes.validating_webhooks.is_zero()
        };
        if empty {
            return Err(e);
        }
        Ok(self.apply(super::response::error(&e, render)))
    }

    /// Adds the gathered warnings (and annotations) to a response.
    pub fn apply(&self, mut resp: Response<Body>) -> Response<Body> {
        let notes = self.0.lock();
        for text in &notes.warnings {
            if let Ok(v) = HeaderValue::from_str(&format!("299 - {}", go_quote(text))) {
                resp.headers_mut().append("Warning", v);
            }
        }
        if !notes.annotations.is_empty() {
            resp.extensions_mut()
                .insert(AuditAnnotations(notes.annotations.clone()));
        }
        let webhooks = notes.mutating_webhooks + notes.validating_webhooks;
        if !webhooks.is_zero() {
            resp.extensions_mut().insert(WebhookLatency(webhooks));
        }
        resp
    }
}
