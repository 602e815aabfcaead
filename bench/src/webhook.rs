//! `kubeshard-bench webhook`: an admission webhook that admits every
//! request as fast as it can answer, over HTTPS on loopback — the "fast
//! local validating webhook" the admission benchmarks put in front of
//! creates. It reports its own time per review (body read to answer
//! written) every ten seconds on stderr, so a run can tell the server's
//! share of the added latency from the webhook's.

use anyhow::Result;
use bytes::Bytes;
use clap::Args;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use parking_lot::Mutex;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Args, Serialize)]
pub struct WebhookArgs {
    /// Loopback port to listen on.
    #[arg(long)]
    pub port: u16,
    /// Serving certificate (PEM).
    #[arg(long)]
    pub cert: PathBuf,
    /// Its key (PEM).
    #[arg(long)]
    pub key: PathBuf,
}

type Times = Arc<Mutex<Histogram<u64>>>;

/// Serves until killed.
pub async fn serve(args: &WebhookArgs) -> Result<()> {
    let (certs, key) = crate::tls::serving_identity(&args.cert, &args.key)?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let times: Times = Arc::new(Mutex::new(
        Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
    ));
    let report = times.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let h = report.lock();
            if !h.is_empty() {
                eprintln!(
                    "webhook: {} reviews, own time p50 {} µs p99 {} µs max {} µs",
                    h.len(),
                    h.value_at_quantile(0.5),
                    h.value_at_quantile(0.99),
                    h.max()
                );
            }
        }
    });
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let (acceptor, times) = (acceptor.clone(), times.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(move |req| review(req, times.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
    }
}

/// Admits the AdmissionReview in `req`.
async fn review(
    req: Request<hyper::body::Incoming>,
    times: Times,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = req.into_body().collect().await?.to_bytes();
    let started = Instant::now();
    let review: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true},
    });
    let bytes = Bytes::from(serde_json::to_vec(&answer).expect("JSON values serialize"));
    let _ = times
        .lock()
        .record((started.elapsed().as_micros() as u64).max(1));
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(bytes))
        .expect("a valid response"))
}
