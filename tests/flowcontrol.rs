//! Overload protection: max-in-flight limits (with APF off; `apf.rs`
//! covers APF) answer 429 with Retry-After
//! while system:masters, health checks and watches still get through;
//! --request-timeout answers 504; oversized bodies 413.

mod common;
use common::tls::rbac::{bind, subject};
use common::tls::Who;
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// A read that the server holds for ~3 s: a list at a future
/// resourceVersion waits for it, then gives up with 504.
const SLOW: &str = "/api/v1/namespaces/default/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan";

fn inflight(s: &Server) -> i64 {
    let (_, _, text) = s.get_with("/metrics", "*/*");
    text.lines()
        .find(|l| l.starts_with("apiserver_current_inflight_requests{request_kind=\"readOnly\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no inflight gauge: {text}"))
}

#[test]
fn a_flood_gets_429_but_admins_and_probes_get_through() {
    let s = Server::start_with(
        2,
        &[
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight",
            "2",
            "--max-mutating-requests-inflight",
            "1",
        ],
    );
    bind(
        &s,
        "",
        "flood-views",
        "ClusterRole",
        "view",
        vec![subject("User", "flood")],
    );
    let flood = Who::cert("flood", &[]);
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let c = s.client(&flood);
            std::thread::spawn(move || c.get(SLOW).0)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(3);
    while inflight(&s) < 2 {
        assert!(
            Instant::now() < deadline,
            "slow requests never got in flight"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let c = s.client(&flood);
    let (code, headers, body) = c.raw("GET", "/api/v1/namespaces/default/configmaps", vec![]);
    assert_eq!(code, 429, "{body}");
    assert_eq!(headers["retry-after"], "1");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["reason"], "TooManyRequests");
    assert_eq!(v["details"]["retryAfterSeconds"], 1);
    // Exempt: system:masters, health probes, watches; and mutating
    // requests count separately (this one gets as far as authorization).
    assert_eq!(
        s.client(&Who::cert("root", &["system:masters"]))
            .get("/api/v1/namespaces")
            .0,
        200
    );
    assert_eq!(s.client(&Who::Anonymous).get("/healthz").0, 200);
    assert_eq!(s.client(&Who::Anonymous).get("/readyz").0, 200);
    assert_eq!(
        c.get("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")
            .0,
        200
    );
    assert_eq!(
        c.post(
            "/api/v1/namespaces/default/configmaps",
            &configmap("x", json!({}))
        )
        .0,
        403
    );
    assert_eq!(inflight(&s), 2);
    for t in slow {
        assert_eq!(t.join().unwrap(), 504);
    }
    assert_eq!(inflight(&s), 0);
    assert_eq!(c.get("/api/v1/namespaces/default/configmaps").0, 200);
}

#[test]
fn request_timeout_is_504() {
    let s = Server::start_with(1, &["--request-timeout", "500ms"]);
    let admin = s.client(&Who::cert("root", &["system:masters"]));
    let started = Instant::now();
    let (code, body) = admin.get(SLOW);
    assert_eq!(code, 504, "{body}");
    assert_eq!(body["reason"], "Timeout");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("request did not complete within requested timeout"),
        "{body}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "took {:?}",
        started.elapsed()
    );
    // ?timeout= may ask for less than the server's limit.
    let s2 = Server::start(1);
    let started = Instant::now();
    let (code, _) = s2
        .client(&Who::cert("root", &["system:masters"]))
        .get(&format!("{SLOW}&timeout=200ms"));
    assert_eq!(code, 504);
    assert!(started.elapsed() < Duration::from_millis(2000));
    // Watches are long-running: not cut by the request timeout.
    let started = Instant::now();
    let (code, _) = admin.get("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1");
    assert_eq!(code, 200);
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[test]
fn oversized_bodies_are_413_over_tls() {
    let s = Server::start(1);
    let c = s.client(&Who::cert("root", &["system:masters"]));
    let big = vec![b' '; 3 * 1024 * 1024 + 1];
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    ] {
        let (code, _, body) = c.raw("POST", path, big.clone());
        assert_eq!(code, 413, "{path}: {body}");
    }
}
