//! The client over TLS against a local rustls + hyper server: CA
//! verification, ALPN choosing HTTP/2 or HTTP/1.1, skip-verify, bearer
//! tokens and client certificates.

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubeshard_bench::client::Client;
use kubeshard_bench::target::Target;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

struct Pem {
    cert: String,
    key: String,
}

fn self_signed(names: &[&str]) -> Pem {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names).unwrap();
    Pem {
        cert: ck.cert.pem(),
        key: ck.signing_key.serialize_pem(),
    }
}

/// Answers "<HTTP version> <Authorization> <client cert?>".
async fn serve(server: &Pem, client_ca: Option<&Pem>) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(ca.cert.as_bytes()).unwrap())
                .unwrap();
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(v)
        }
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(server.cert.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(server.key.as_bytes()).unwrap(),
        )
        .unwrap();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let has_client_cert = tls.get_ref().1.peer_certificates().is_some();
                let svc = service_fn(move |req: Request<Incoming>| async move {
                    let auth = req
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-")
                        .to_string();
                    let body = format!("{:?} {auth} {has_client_cert}", req.version());
                    Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(body))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    port
}

fn target(port: u16, http2: bool) -> Target {
    let mut t = Target::parse(&format!("https://127.0.0.1:{port}"), false).unwrap();
    t.http2 = http2;
    t
}

async fn get(t: &Target) -> Result<String, String> {
    let c = Client::new(t, 1, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    let r = c
        .request(0, Method::GET, "/", None)
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(r.status, 200);
    Ok(String::from_utf8(r.body.to_vec()).unwrap())
}

#[tokio::test]
async fn verifies_the_server_and_negotiates_alpn() {
    let server = self_signed(&["127.0.0.1", "localhost"]);
    let port = serve(&server, None).await;

    let mut t = target(port, false);
    t.tls_settings.ca_pem = Some(server.cert.clone().into_bytes());
    t.authorization = Some("Bearer s3cret".into());
    assert_eq!(get(&t).await.unwrap(), "HTTP/1.1 Bearer s3cret false");

    t.http2 = true;
    let c = Client::new(&t, 1, Duration::from_secs(5)).unwrap();
    assert_eq!(get(&t).await.unwrap(), "HTTP/2.0 Bearer s3cret false");
    // A watch-style stream shares the HTTP/2 connection.
    let (code, _) = c.stream(Some(0), "/").await.unwrap();
    assert_eq!(code, 200);

    // Another CA: refused. Skip-verify: accepted.
    let other = self_signed(&["127.0.0.1"]);
    let mut bad = target(port, false);
    bad.tls_settings.ca_pem = Some(other.cert.into_bytes());
    let e = get(&bad).await.unwrap_err();
    assert!(e.contains("TLS"), "{e}");
    let mut insecure = target(port, true);
    insecure.tls_settings.insecure_skip_verify = true;
    assert!(get(&insecure).await.unwrap().starts_with("HTTP/2.0"));
}

#[tokio::test]
async fn presents_a_client_certificate() {
    let server = self_signed(&["127.0.0.1"]);
    let client = self_signed(&["kubeshard-bench"]);
    let port = serve(&server, Some(&client)).await;
    let mut t = target(port, false);
    t.tls_settings.ca_pem = Some(server.cert.clone().into_bytes());
    // Without a certificate the server refuses the handshake.
    assert!(get(&t).await.is_err());
    t.tls_settings.client_cert_pem = Some(client.cert.into_bytes());
    t.tls_settings.client_key_pem = Some(client.key.into_bytes());
    assert_eq!(get(&t).await.unwrap(), "HTTP/1.1 - true");
}
