//! Connection-level attacks from outside: a flood of connections up to
//! (and past) the process's descriptor limit, slowloris clients that
//! trickle request heads, and idle keep-alive connections. During and
//! after each, an administrator gets an answer within a second, and once
//! the attackers leave the server gives back its descriptors and its
//! cores by itself.

mod common;
use common::tls::Who;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// An administrator's GET over a new TLS connection, and the plain
/// port's /readyz, each within a second.
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

/// Opens `n` TCP connections to the secure port that never speak.
fn flood(s: &Server, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", s.secure_port)).ok())
        .collect()
}

/// Waits until the server's descriptors are back near `baseline`.
fn descriptors_come_back(s: &Server, baseline: usize) {
    eventually(20, "descriptors to be released", || {
        (s.open_fds() <= baseline + 16).then_some(())
    });
}

/// The server's CPU use over one second, in percent of one core.
fn cpu_percent(s: &Server) -> u64 {
    let before = s.cpu_ticks();
    std::thread::sleep(Duration::from_secs(1));
    s.cpu_ticks() - before // clock ticks are 1/100 s
}

#[test]
fn a_connection_flood_past_the_descriptor_limit_locks_nobody_out() {
    // 400 descriptors: the connection cap is 272.
    let s = Server::start_with_fd_limit(2, &[], 400);
    admin_answers_within_a_second(&s);
    let baseline = s.open_fds();
    // Unauthenticated connections, twice as many as the process could
    // ever hold, opened while an administrator keeps working — for as
    // long as the flood takes (it used to stop after ten checks, short of
    // 400 connections on a loaded machine), and at least ten checks.
    let flooder = {
        let port = s.secure_port;
        std::thread::spawn(move || {
            let mut held = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while held.len() < 800 && Instant::now() < deadline {
                if let Ok(c) = TcpStream::connect(("127.0.0.1", port)) {
                    held.push(c);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            held
        })
    };
    let mut checks = 0;
    while checks < 10 || !flooder.is_finished() {
        admin_answers_within_a_second(&s);
        std::thread::sleep(Duration::from_millis(100));
        checks += 1;
    }
    let held = flooder.join().unwrap();
    assert!(
        held.len() > 400,
        "the flood opened only {} connections",
        held.len()
    );
    admin_answers_within_a_second(&s);
    let (_, _, metrics) = s.get_with("/metrics", "text/plain");
    assert!(
        metrics.contains("kubeshard_connections_max 272"),
        "{metrics}"
    );
    drop(held);
    descriptors_come_back(&s, baseline);
    assert!(
        cpu_percent(&s) < 20,
        "the server keeps a core busy after the flood"
    );
    admin_answers_within_a_second(&s);
}

#[test]
fn accept_failing_for_want_of_descriptors_backs_off_and_recovers() {
    // A cap above the descriptor limit: `accept` itself runs out.
    let s = Server::start_with_fd_limit(2, &["--max-connections", "5000"], 300);
    let baseline = s.open_fds();
    let held = flood(&s, 600);
    // Out of descriptors, the accept loops back off instead of spinning.
    let busy = cpu_percent(&s);
    assert!(busy < 50, "accept failures spin: {busy}% of a core");
    drop(held);
    descriptors_come_back(&s, baseline);
    admin_answers_within_a_second(&s);
    let failures = s.log().matches("accept failed").count();
    assert!(failures > 0, "the flood never exhausted descriptors");
    assert!(failures < 60, "accept failures logged {failures} times");
}

#[test]
fn slowloris_and_idle_connections_are_closed() {
    let s = Server::start_with(
        1,
        &[
            "--request-header-timeout",
            "1s",
            "--connection-idle-timeout",
            "3s",
        ],
    );
    let baseline = s.open_fds();
    // Trickling a request head, one header line at a time.
    let mut slow: Vec<_> = (0..20).map(|_| s.raw_tls(&Who::Anonymous)).collect();
    for c in &mut slow {
        c.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
    }
    // Idle keep-alive, after one finished request.
    let mut idle = s.raw_tls(&Who::Anonymous);
    idle.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    // Silent after the handshake.
    let mut silent = s.raw_tls(&Who::Anonymous);
    silent.conn.complete_io(&mut silent.sock).unwrap();
    let started = Instant::now();
    let mut closed = vec![false; slow.len()];
    while closed.iter().any(|c| !c) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "trickling heads were never cut"
        );
        for (i, c) in slow.iter_mut().enumerate() {
            if !closed[i]
                && c.write_all(b"X-Slow: 1\r\n")
                    .and_then(|_| c.flush())
                    .is_err()
            {
                closed[i] = true;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "trickling heads outlived the header timeout: {:?}",
        started.elapsed()
    );
    // The idle and the silent connections end at the idle timeout.
    for c in [&mut idle, &mut silent] {
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest);
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    drop((slow, idle, silent));
    descriptors_come_back(&s, baseline);
}
