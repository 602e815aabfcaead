//! Clients that ask for large responses and then do not read them: a LIST
//! held open by readers that never read counts against the in-flight
//! limit while it drains, holds bounded memory, and is cut off at its
//! request's deadline; on HTTP/2 a stalled watch is cut off by resetting
//! its stream while the connection's other streams go on.

mod common;
use common::tls::rbac::{bind, cluster_role, rule, subject};
use common::tls::{RawTls, Who};
use common::*;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

fn admin_answers_within_a_second(s: &Server) {
    let t = Instant::now();
    let (code, body) = s
        .client(&Who::cert("root", &["system:masters"]))
        .get("/api/v1/namespaces/default");
    assert_eq!(code, 200, "{body}");
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "admin GET took {:?}",
        t.elapsed()
    );
    let t = Instant::now();
    assert_eq!(s.get("/readyz").0, 200);
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "/readyz took {:?}",
        t.elapsed()
    );
}

/// ~12 MB of ConfigMaps in namespace `big`.
fn fill(s: &Server) {
    namespace(s, "big");
    let payload = "x".repeat(6000);
    std::thread::scope(|scope| {
        for t in 0..4 {
            let payload = &payload;
            scope.spawn(move || {
                for i in 0..500 {
                    let cm = json!({"metadata": {"name": format!("cm-{t}-{i}")}, "data": {"k": payload}});
                    assert_eq!(s.post("/api/v1/namespaces/big/configmaps", &cm).0, 201);
                }
            });
        }
    });
}

/// A TLS connection with a tiny receive buffer that sends a LIST and
/// never reads the answer.
fn stalled_list(s: &Server, who: &Who) -> RawTls {
    let mut c = s.raw_tls(who);
    socket2::SockRef::from(&c.sock)
        .set_recv_buffer_size(4096)
        .unwrap();
    c.write_all(b"GET /api/v1/namespaces/big/configmaps HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    c.flush().unwrap();
    c
}

fn inflight_read_only(s: &Server) -> u64 {
    let (_, _, text) = s.get_with("/metrics", "text/plain");
    text.lines()
        .find_map(|l| {
            l.strip_prefix("apiserver_current_inflight_requests{request_kind=\"readOnly\"} ")
        })
        .and_then(|v| v.trim().parse().ok())
        .expect("the in-flight gauge")
}

#[test]
fn lists_nobody_reads_are_counted_bounded_and_cut_off() {
    let s = Server::start_with(
        2,
        &[
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight",
            "40",
            "--request-timeout",
            "4s",
        ],
    );
    fill(&s);
    cluster_role(
        &s,
        "cm-reader",
        json!({}),
        vec![rule(&["list", "get"], &[""], &["configmaps"])],
    );
    bind(
        &s,
        "",
        "reader",
        "ClusterRole",
        "cm-reader",
        vec![subject("User", "reader")],
    );
    let reader = Who::cert("reader", &[]);
    // Warm up: one whole list, read.
    let (code, _) = s.client(&reader).get("/api/v1/namespaces/big/configmaps");
    assert_eq!(code, 200);
    let rss_before = s.rss_kib();
    let started = Instant::now();
    let stalled: Vec<RawTls> = (0..100).map(|_| stalled_list(&s, &reader)).collect();
    // The unread responses hold their slots: the limit is reached and
    // stays reached while they drain.
    eventually(10, "the in-flight limit to fill", || {
        (inflight_read_only(&s) == 40).then_some(())
    });
    let grown_mib = s.rss_kib().saturating_sub(rss_before) / 1024;
    assert!(
        grown_mib < 150,
        "100 unread 12 MB lists grew the server by {grown_mib} MiB"
    );
    admin_answers_within_a_second(&s);
    // Past the request timeout the unread responses are cut off and the
    // slots come back.
    eventually(15, "the unread lists to be cut off", || {
        (inflight_read_only(&s) == 0).then_some(())
    });
    assert!(
        started.elapsed() > Duration::from_secs(3),
        "cut off before the deadline"
    );
    admin_answers_within_a_second(&s);
    drop(stalled);
}

/// HTTP/2: one stream stops reading (its window stays full), another on
/// the same connection keeps reading. The stalled one is reset; the other
/// and the connection live on.
#[test]
fn a_stalled_http2_watch_is_reset_alone() {
    let s = Server::start_with(1, &["--watch-stall-timeout", "1s"]);
    namespace(&s, "a");
    namespace(&s, "b");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
            .await
            .unwrap();
        let (client, conn) = h2::client::Builder::new()
            .initial_window_size(65_535)
            .initial_connection_window_size(64 << 20)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.unwrap();
        let watch = |client: &mut h2::client::SendRequest<bytes::Bytes>, path: &str| {
            let req = http::Request::get(format!("http://127.0.0.1{path}"))
                .body(())
                .unwrap();
            client.send_request(req, true).unwrap().0
        };
        let stalled = watch(&mut client, "/api/v1/namespaces/a/configmaps?watch=1");
        let healthy = watch(&mut client, "/api/v1/namespaces/b/configmaps?watch=1");
        let mut stalled = stalled.await.unwrap().into_body();
        let mut healthy = healthy.await.unwrap().into_body();
        // Fill the stalled stream's window (and then some) without
        // releasing it.
        let big = "y".repeat(40_000);
        for i in 0..6 {
            let cm = json!({"metadata": {"name": format!("big-{i}")}, "data": {"k": big}});
            assert_eq!(s.post("/api/v1/namespaces/a/configmaps", &cm).0, 201);
        }
        let mut seen = 0;
        let reset = tokio::time::timeout(Duration::from_secs(15), async {
            loop {
                match stalled.data().await {
                    Some(Ok(d)) => seen += d.len(), // read, never released
                    Some(Err(e)) => break e,
                    None => panic!("the stalled watch ended instead of being reset"),
                }
            }
        })
        .await
        .expect("the stalled stream was never reset");
        assert!(seen <= 65_535, "the stream got past its window: {seen}");
        assert_eq!(reset.reason(), Some(h2::Reason::CANCEL), "{reset}");
        // The other watch, on the same connection, still gets its events.
        let cm = json!({"metadata": {"name": "after"}, "data": {"k": "v"}});
        assert_eq!(s.post("/api/v1/namespaces/b/configmaps", &cm).0, 201);
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), async {
            while !String::from_utf8_lossy(&got).contains("\"after\"") {
                let d = healthy.data().await.expect("healthy watch ended").unwrap();
                let _ = healthy.flow_control().release_capacity(d.len());
                got.extend_from_slice(&d);
            }
        })
        .await
        .expect("the healthy watch stopped getting events");
        // And the connection takes new requests.
        let mut client = client.ready().await.unwrap();
        let resp = watch(&mut client, "/version").await.unwrap();
        assert_eq!(resp.status(), 200);
    });
}
