//! A stand-in kubelet for the connect subresources: HTTPS on a free
//! loopback port, answering container logs, WebSocket exec (kube's
//! `v5.channel.k8s.io` framing, as kubectl speaks it), a raw upgrade that
//! echoes, and anything else with the path it was asked for. Records every
//! request line and the client certificate's presence.

use std::io::{BufRead, BufReader, Read, Write};

use std::sync::{Arc, Mutex};

pub struct FakeKubelet {
    pub port: u16,
    /// Each request as "METHOD /path?query".
    pub requests: Arc<Mutex<Vec<String>>>,
}

const LOG: &str = "log line 1\nlog line 2\n";

impl FakeKubelet {
    pub fn start() -> FakeKubelet {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let config = super::tls::server_config(&cert, &key);
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = requests.clone();
        let port = super::tls::serve_tls(config, move |tls| {
            let _ = serve(tls, &seen);
        });
        FakeKubelet { port, requests }
    }

    pub fn saw(&self, prefix: &str) -> Option<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.starts_with(prefix))
            .cloned()
    }
}

type Tls = super::tls::ServerStream;

fn serve(tls: Tls, seen: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(tls);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        head.push(line.trim_end().to_string());
    }
    let request_line = head.first().cloned().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    seen.lock().unwrap().push(format!("{method} {target}"));
    let header = |name: &str| {
        head.iter()
            .find_map(|h| {
                let (k, v) = h.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let upgrade = header("upgrade").to_ascii_lowercase();
    if target.starts_with("/containerLogs/") {
        return respond(reader.get_mut(), "200 OK", LOG);
    }
    if upgrade == "websocket" && target.starts_with("/exec/") {
        let accept = websocket_accept(&header("sec-websocket-key"));
        write!(
            reader.get_mut(),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
        )?;
        let w = reader.get_mut();
        frame(w, 1, b"hello from exec\n")?;
        frame(w, 3, br#"{"metadata":{},"status":"Success"}"#)?;
        // A normal closure (1000): kubectl treats any other as an error.
        w.write_all(&[0x88, 0x02, 0x03, 0xE8])?;
        w.flush()?;
        // Drain until the client closes.
        let mut sink = [0u8; 1024];
        while reader.read(&mut sink)? > 0 {}
        return Ok(());
    }
    if upgrade == "echo" {
        reader.get_mut().write_all(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n",
        )?;
        reader.get_mut().flush()?;
        let mut buf = [0u8; 1024];
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            reader.get_mut().write_all(&buf[..n])?;
            reader.get_mut().flush()?;
        }
    }
    respond(
        reader.get_mut(),
        "200 OK",
        &format!("kubelet saw {method} {target}\n"),
    )
}

fn respond(w: &mut Tls, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    w.flush()?;
    w.conn.send_close_notify();
    w.flush()
}

/// One unmasked binary WebSocket frame carrying `data` on a channel.
fn frame(w: &mut Tls, channel: u8, data: &[u8]) -> std::io::Result<()> {
    let len = data.len() + 1;
    assert!(len < 126, "short frames only");
    w.write_all(&[0x82, len as u8, channel])?;
    w.write_all(data)
}

fn websocket_accept(key: &str) -> String {
    use base64::Engine;
    use sha1::Digest;
    let mut h = sha1::Sha1::new();
    h.update(key.as_bytes());
    h.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}
