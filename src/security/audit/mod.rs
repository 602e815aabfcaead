//! Audit: every request the policy selects is recorded as audit.k8s.io/v1
//! Events, one JSON line per stage (RequestReceived, ResponseStarted for
//! long-running requests, ResponseComplete, Panic), with the user, the
//! impersonated user, verb, object, response status, timestamps and the
//! authorization decision; at level Request the request body and at
//! RequestResponse the response body too. Every response carries an
//! `Audit-ID` header, whether or not it is audited.

mod writer;

use crate::request::RequestInfo;
use crate::serving::body::{Body, ChunkStream};
use crate::serving::frames::Frames;
use bytes::Bytes;
use kubeshard_core::audit::{Level, Policy, Stage};
use kubeshard_core::authn::{Attributes, UserInfo};
use serde_json::{json, Map, Value};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use writer::LogWriter;

/// The policy and the log, shared by every executor.
pub struct Auditor {
    policy: Policy,
    log: LogWriter,
}

impl Auditor {
    pub fn start(policy_text: &str, log: &std::path::Path) -> Result<Self, String> {
        Ok(Self {
            policy: Policy::parse(policy_text)?,
            log: LogWriter::open(log)?,
        })
    }
}

/// Where a handler leaves the request body for an audit event at level
/// Request or above (the body is read by the handler, after this filter).
#[derive(Clone, Default)]
pub struct RequestBodySink(Arc<Mutex<Option<CapturedBody>>>);

/// A request body and its content type.
type CapturedBody = (Option<String>, Bytes);

impl RequestBodySink {
    pub fn put(&self, content_type: Option<&str>, body: &[u8]) {
        *self.0.lock().expect("not poisoned") = Some((
            content_type.map(str::to_string),
            Bytes::copy_from_slice(body),
        ));
    }

    fn take(&self) -> Option<CapturedBody> {
        self.0.lock().expect("not poisoned").take()
    }
}

/// One request's audit record, filled in as the chain proceeds.
pub struct Record {
    auditor: Arc<Auditor>,
    level: Level,
    omit: Vec<Stage>,
    /// The policy's `omitManagedFields`: ownership records are bulky and
    /// rarely what an auditor wants, so they can be left out of the
    /// request and response objects.
    omit_managed_fields: bool,
    event: Map<String, Value>,
    pub body: Option<RequestBodySink>,
}

/// Drops `metadata.managedFields` from an object, or from every item of
/// a list, as kube does for a policy that omits them.
fn strip_managed_fields(v: &mut Value) {
    fn strip_one(v: &mut Value) {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    }
    strip_one(v);
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip_one);
    }
}

/// kube's audit timestamps: RFC 3339 with microseconds.
fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// What the audit filter knows about a request when it starts.
pub struct Incoming<'a> {
    pub audit_id: &'a str,
    pub received: chrono::DateTime<chrono::Utc>,
    pub uri: &'a str,
    pub user_agent: Option<&'a str>,
    pub source_ips: Vec<String>,
}

impl Record {
    /// Starts a record if the policy audits this request (and logs its
    /// RequestReceived stage). The request's details are asked for only
    /// then: formatting addresses for every unaudited request was ~2% of a
    /// create's instructions.
    pub fn begin<'a>(
        auditor: Option<&Arc<Auditor>>,
        user: &UserInfo,
        attrs: &Attributes,
        info: &RequestInfo,
        req: impl FnOnce() -> Incoming<'a>,
    ) -> Option<Record> {
        let auditor = auditor?;
        let decision = auditor.policy.evaluate(user, attrs);
        if decision.level == Level::None {
            return None;
        }
        let req = req();
        let mut e = Map::new();
        e.insert("kind".into(), json!("Event"));
        e.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
        e.insert("level".into(), json!(decision.level.as_str()));
        e.insert("auditID".into(), json!(req.audit_id));
        e.insert("stage".into(), json!(""));
        e.insert("requestURI".into(), json!(req.uri));
        e.insert("verb".into(), json!(attrs.verb));
        e.insert("user".into(), user.to_json());
        e.insert("sourceIPs".into(), json!(req.source_ips));
        if let Some(ua) = req.user_agent {
            e.insert("userAgent".into(), json!(ua));
        }
        if info.is_resource_request {
            let mut o = Map::new();
            o.insert("resource".into(), json!(info.resource));
            if !info.namespace.is_empty() {
                o.insert("namespace".into(), json!(info.namespace));
            }
            if !info.name.is_empty() {
                o.insert("name".into(), json!(info.name));
            }
            if !info.group.is_empty() {
                o.insert("apiGroup".into(), json!(info.group));
            }
            o.insert("apiVersion".into(), json!(info.version));
            if !info.subresource.is_empty() {
                o.insert("subresource".into(), json!(info.subresource));
            }
            e.insert("objectRef".into(), Value::Object(o));
        }
        e.insert(
            "requestReceivedTimestamp".into(),
            json!(timestamp(req.received)),
        );
        let r = Record {
            auditor: auditor.clone(),
            level: decision.level,
            omit: decision.omit_stages,
            omit_managed_fields: decision.omit_managed_fields,
            event: e,
            body: (decision.level >= Level::Request).then(RequestBodySink::default),
        };
        r.emit(Stage::RequestReceived);
        Some(r)
    }

    pub fn set_impersonated(&mut self, user: &UserInfo) {
        self.event.insert("impersonatedUser".into(), user.to_json());
    }

    pub fn annotate(&mut self, key: &str, value: &str) {
        let ann = self.event.entry("annotations").or_insert_with(|| json!({}));
        if let Some(m) = ann.as_object_mut() {
            m.insert(key.to_string(), json!(value));
        }
    }

    fn emit(&self, stage: Stage) {
        if self.omit.contains(&stage) {
            return;
        }
        let mut e = self.event.clone();
        e.insert("stage".into(), json!(stage.as_str()));
        e.insert(
            "stageTimestamp".into(),
            json!(timestamp(chrono::Utc::now())),
        );
        match serde_json::to_vec(&Value::Object(e)) {
            Ok(line) => {
                self.auditor.log.write(line);
                crate::request::metrics::audit_event();
            }
            Err(e) => tracing::error!(error = %e, "audit event did not serialize"),
        }
    }

    /// A request or response object as the policy has it logged.
    fn as_logged(&self, mut v: Value) -> Value {
        if self.omit_managed_fields {
            strip_managed_fields(&mut v);
        }
        v
    }

    fn set_response(&mut self, resp: &http::Response<Body>) {
        let code = resp.status().as_u16();
        let mut status = json!({"metadata": {}, "code": code});
        let ct = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let protobuf = ct.is_some_and(kubeshard_core::protobuf::is_protobuf);
        // A protobuf answer is logged as the JSON it transcodes to.
        let is_json = protobuf || ct.is_some_and(|ct| ct.starts_with("application/json"));
        let all = match resp.body() {
            Body::Chunks { chunks, .. } if is_json => {
                Some(chunks.iter().flat_map(|c| c.iter().copied()).collect())
            }
            // Lists are only ever logged whole, never read for a Status.
            Body::List(Some(list)) if is_json && self.level >= Level::RequestResponse => {
                Some(list.to_vec())
            }
            _ => None,
        };
        let body = all.and_then(|all: Vec<u8>| match protobuf {
            true => kubeshard_core::protobuf::decode_object(&all).ok(),
            false => serde_json::from_slice::<Value>(&all).ok(),
        });
        if code >= 300 {
            if let Some(b) = body.as_ref().filter(|b| b["kind"] == "Status") {
                for k in ["status", "message", "reason", "details"] {
                    if let Some(v) = b.get(k) {
                        status[k] = v.clone();
                    }
                }
            }
        }
        self.event.insert("responseStatus".into(), status);
        if let Some(sink) = &self.body {
            if let Some((ct, bytes)) = sink.take() {
                if let Some(v) = decode_body(ct.as_deref(), &bytes) {
                    let v = self.as_logged(v);
                    self.event.insert("requestObject".into(), v);
                }
            }
        }
        if self.level >= Level::RequestResponse {
            if let Some(b) = body {
                let b = self.as_logged(b);
                self.event.insert("responseObject".into(), b);
            }
        }
    }

    /// Logs the end of the request: ResponseComplete now, or for a
    /// streamed response ResponseStarted now and ResponseComplete when
    /// the stream ends.
    pub fn finish(mut self, resp: http::Response<Body>) -> http::Response<Body> {
        if let Some(notes) = resp
            .extensions()
            .get::<crate::render::warnings::AuditAnnotations>()
        {
            for (k, v) in &notes.0 {
                self.annotate(k, v);
            }
        }
        self.set_response(&resp);
        let (parts, body) = resp.into_parts();
        let body = match body {
            Body::Stream(inner) => {
                self.emit(Stage::ResponseStarted);
                Body::Stream(Box::pin(Audited {
                    inner,
                    record: Some(self),
                }))
            }
            chunks => {
                self.emit(Stage::ResponseComplete);
                chunks
            }
        };
        http::Response::from_parts(parts, body)
    }

    /// A handler panicked.
    pub fn panicked(mut self) {
        self.event.insert(
            "responseStatus".into(),
            json!({"metadata": {}, "code": 500, "status": "Failure", "message": "the request handler failed"}),
        );
        self.emit(Stage::Panic);
    }
}

/// The request body as JSON: JSON as is, YAML converted, protobuf
/// transcoded.
fn decode_body(content_type: Option<&str>, body: &[u8]) -> Option<Value> {
    if body.is_empty() {
        return None;
    }
    let ct = content_type.unwrap_or("application/json");
    if kubeshard_core::protobuf::is_protobuf(ct) {
        return kubeshard_core::protobuf::decode_object(body).ok();
    }
    if ct.contains("yaml") {
        return serde_yaml::from_slice(body).ok();
    }
    serde_json::from_slice(body).ok()
}

/// A streamed body that logs ResponseComplete when it ends (or is
/// dropped, when the client goes away).
struct Audited {
    inner: Pin<Box<dyn ChunkStream>>,
    record: Option<Record>,
}

impl ChunkStream for Audited {
    fn poll_chunk(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Frames>> {
        let polled = self.inner.as_mut().poll_chunk(cx);
        if let Poll::Ready(None) = polled {
            if let Some(r) = self.record.take() {
                r.emit(Stage::ResponseComplete);
            }
        }
        polled
    }
}

impl Drop for Audited {
    fn drop(&mut self) {
        if let Some(r) = self.record.take() {
            r.emit(Stage::ResponseComplete);
        }
    }
}
