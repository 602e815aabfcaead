//! The server as a webhook client (kube's webhook client manager): a
//! `clientConfig` — a URL, or a Service reference resolved through the
//! Service's EndpointSlices — called over HTTPS verified with its
//! `caBundle`, asynchronously on the executor, with connections kept for
//! the next call. CRD conversion webhooks call through here.

mod config;
pub mod tls;

pub use config::{ClientConfig, Target};

use crate::context::Api;
use crate::proxy::dial::{BackendIo, Endpoint, Scheme};
use crate::proxy::pool;
use bytes::Bytes;
use http::{header, Request};
use http_body_util::{BodyExt, Full};
use std::time::Duration;

thread_local! {
    static IDLE: pool::Idle<Full<Bytes>> = pool::Idle::default();
}

/// The most a webhook may answer (kube bounds its webhook responses too):
/// a conversion of a long list is the largest answer expected.
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

/// POSTs `body` (JSON) to the webhook and answers its response body, or
/// why there was none, in the form kube's errors quote (`Post "<url>": …`).
pub async fn post_json(
    api: &Api,
    cfg: &ClientConfig,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Bytes, String> {
    let url = cfg.display_url();
    let failed = |e: &dyn std::fmt::Display| format!("Post {url:?}: {e}");
    let call = async {
        let (ep, server_name, path) = config::resolve(api, cfg).await.map_err(|e| failed(&e))?;
        let tls = tls::client_config(&cfg.ca_bundle).map_err(|e| failed(&e))?;
        let key = pool::Key::new(&ep, &server_name, &cfg.ca_bundle);
        let body = Bytes::from(body);
        // A kept connection the webhook closed meanwhile fails before any
        // answer: then once more on a new one.
        for fresh in [false, true] {
            let sender = match IDLE.with(|i| i.take(&key, fresh)) {
                Some(s) => s,
                None => {
                    let name = rustls::pki_types::ServerName::try_from(server_name.clone())
                        .map_err(|e| failed(&e))?;
                    let stream = api
                        .config
                        .backends
                        .dialer
                        .connect(&ep, Some((tls.clone(), name)))
                        .await
                        .map_err(|e| failed(&e))?;
                    pool::handshake(BackendIo::new(stream))
                        .await
                        .map_err(|e| failed(&e))?
                }
            };
            let req = Request::post(path.as_str())
                .header(header::HOST, ep.authority())
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json")
                .body(Full::new(body.clone()))
                .map_err(|e| failed(&e))?;
            let mut sender = sender;
            let resp = match sender.send_request(req).await {
                Ok(r) => r,
                Err(e) if !fresh && (e.is_canceled() || e.is_closed()) => continue,
                Err(e) => return Err(failed(&e)),
            };
            let status = resp.status();
            let bytes = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE)
                .collect()
                .await
                .map_err(|e| failed(&e))?
                .to_bytes();
            IDLE.with(|i| i.give_back(key, sender));
            if !status.is_success() {
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).into_owned();
                return Err(failed(&format!(
                    "the server responded with status {}: {}",
                    status.as_u16(),
                    text.trim()
                )));
            }
            return Ok(bytes);
        }
        Err(failed(&"connection closed"))
    };
    let expired = async {
        glommio::timer::Timer::new(timeout).await;
        Err(failed(&format!(
            "context deadline exceeded (Client.Timeout exceeded after {}s)",
            timeout.as_secs_f64()
        )))
    };
    futures_lite::future::or(call, expired).await
}

impl ClientConfig {
    /// The URL the webhook is called at, for messages (kube's form: a
    /// Service as `https://<name>.<namespace>.svc:<port><path>`).
    pub fn display_url(&self) -> String {
        match &self.target {
            Target::Url(u) => u.clone(),
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => format!("https://{name}.{namespace}.svc:{port}{path}"),
        }
    }
}

/// An endpoint of the webhook (never restricted to routable addresses:
/// webhooks run anywhere, loopback included, but never on the
/// privileged port, which the dialer refuses).
fn endpoint(host: String, port: u16) -> Endpoint {
    Endpoint {
        scheme: Scheme::Https,
        host,
        port,
        kubelet: false,
        routable_only: false,
    }
}
