//! A webhook server for tests: HTTPS on a free loopback port with a
//! certificate from its own CA (for `caBundle`), valid for 127.0.0.1 and
//! the Service names given; keeps connections open (HTTP/1.1 keep-alive)
//! and answers each JSON POST with what its handler makes of it. Records
//! every request body and path, and how many connections were opened.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub type Handler = dyn Fn(&str, Value) -> Value + Send + Sync;

pub struct Webhook {
    pub port: u16,
    /// The CA's certificate (PEM), for `caBundle`.
    pub ca_pem: String,
    /// (path, body) of every request, in order.
    pub requests: Arc<Mutex<Vec<(String, Value)>>>,
    pub connections: Arc<AtomicUsize>,
}

impl Webhook {
    pub fn start(names: &[&str], handler: Arc<Handler>) -> Webhook {
        let mut sans: Vec<String> = vec!["127.0.0.1".into()];
        sans.extend(names.iter().map(|n| n.to_string()));
        let (ca_pem, leaf, key) = super::tls::ca_and_serving_cert("webhook-test-ca", sans);
        let config = super::tls::server_config(&leaf, &key);
        let requests: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let connections = Arc::new(AtomicUsize::new(0));
        let (seen, opened) = (requests.clone(), connections.clone());
        let port = super::tls::serve_tls(config, move |tls| {
            opened.fetch_add(1, Ordering::SeqCst);
            let _ = serve(tls, &seen, &*handler);
        });
        Webhook {
            port,
            ca_pem,
            requests,
            connections,
        }
    }

    /// The CA as a `caBundle` value (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

fn serve(
    tls: super::tls::ServerStream,
    seen: &Mutex<Vec<(String, Value)>>,
    handler: &Handler,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(tls);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let path = request_line.split(' ').nth(1).unwrap_or("").to_string();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.trim().eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock().unwrap().push((path.clone(), request.clone()));
        let answer = serde_json::to_vec(&handler(&path, request)).unwrap();
        let w = reader.get_mut();
        write!(
            w,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        )?;
        w.write_all(&answer)?;
        w.flush()?;
    }
}
