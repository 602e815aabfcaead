//! Single requests built to hurt: a watch by name that must not see its
//! neighbours, a certificate that expires on an open connection, patches
//! that multiply an object or make merging quadratic, and the odd inputs
//! (a patch type on a create, forged continue tokens, a watch from the
//! far future) that must get kube's clear refusals.

mod common;
use common::tls::rbac::{bind, cluster_role, role, subject};
use common::tls::{http1, sign_client_cert_until, Client, Who};
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant, SystemTime};

fn admin(s: &Server) -> Client {
    s.client(&Who::cert("root", &["system:masters"]))
}

/// The administrator still gets an answer while an attack runs: within
/// two seconds, a TLS handshake and a GET on a shared machine that may be
/// loaded (a second failed there once at 1.3 s, with a compiler running);
/// the attacks it guards against held the core for 13 s and more.
fn admin_answers_promptly(s: &Server) {
    let t = Instant::now();
    let (code, body) = admin(s).get("/api/v1/namespaces/default");
    assert_eq!(code, 200, "{body}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "admin GET took {:?}",
        t.elapsed()
    );
}

fn secret(name: &str) -> Value {
    json!({"metadata": {"name": name}, "stringData": {"password": format!("{name}-secret")}})
}

/// Events of a watch that ends by itself (timeoutSeconds).
fn watch_events(c: &Client, path: &str) -> (u16, Vec<Value>) {
    let (code, _, text) = c.raw("GET", path, vec![]);
    let events = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (code, events)
}

fn names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["object"]["metadata"]["namespace"].as_str().unwrap_or(""),
                e["object"]["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn a_watch_by_name_sees_that_name_only() {
    let s = Server::start(2);
    for ns in ["team-a", "team-b"] {
        namespace(&s, ns);
    }
    for (ns, n) in [
        ("team-a", "s1"),
        ("team-a", "s2"),
        ("team-b", "s1"),
        ("team-b", "s3"),
    ] {
        assert_eq!(
            s.post(&format!("/api/v1/namespaces/{ns}/secrets"), &secret(n))
                .0,
            201
        );
    }
    role(
        &s,
        "team-a",
        "s1-only",
        vec![
            json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1"]}),
        ],
    );
    bind(
        &s,
        "team-a",
        "w",
        "Role",
        "s1-only",
        vec![subject("User", "w")],
    );
    cluster_role(
        &s,
        "any-s1",
        json!({}),
        vec![
            json!({"verbs": ["watch", "list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1"]}),
        ],
    );
    bind(
        &s,
        "",
        "cw",
        "ClusterRole",
        "any-s1",
        vec![subject("User", "cw")],
    );
    let w = s.client(&Who::cert("w", &[]));
    let cw = s.client(&Who::cert("cw", &[]));
    let t = "timeoutSeconds=2";

    // Changes to every secret while the watches run.
    let writer = {
        let base = s.base.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let agent = ureq::agent();
            for (ns, n) in [
                ("team-a", "s1"),
                ("team-a", "s2"),
                ("team-b", "s1"),
                ("team-b", "s3"),
            ] {
                let _ = agent
                    .patch(format!("{base}/api/v1/namespaces/{ns}/secrets/{n}"))
                    .header("Content-Type", "application/merge-patch+json")
                    .send(r#"{"metadata":{"labels":{"touched":"yes"}}}"#);
            }
        })
    };
    let (code, events) = watch_events(
        &w,
        &format!("/api/v1/watch/namespaces/team-a/secrets/s1?{t}"),
    );
    assert_eq!(code, 200);
    assert!(events.len() >= 2, "{events:?}");
    assert!(
        names(&events).iter().all(|n| n == "team-a/s1"),
        "{:?}",
        names(&events)
    );
    let (code, events) = watch_events(
        &w,
        &format!("/api/v1/namespaces/team-a/secrets?watch=1&fieldSelector=metadata.name%3Ds1&{t}"),
    );
    assert_eq!(code, 200);
    assert!(!events.is_empty() && names(&events).iter().all(|n| n == "team-a/s1"));
    let (code, events) = watch_events(&cw, &format!("/api/v1/watch/secrets/s1?{t}"));
    assert_eq!(code, 200);
    let mut seen = names(&events);
    seen.dedup();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["team-a/s1", "team-b/s1"]);
    writer.join().unwrap();

    // Not allowed: the collection, the cluster-wide name without a
    // cluster role, another name.
    assert_eq!(w.get("/api/v1/namespaces/team-a/secrets?watch=1").0, 403);
    assert_eq!(w.get("/api/v1/watch/secrets/s1").0, 403);
    assert_eq!(w.get("/api/v1/watch/namespaces/team-a/secrets/s2").0, 403);
    // A selector naming another object than the path is refused.
    let (code, body) = admin(&s)
        .get("/api/v1/watch/namespaces/team-a/secrets/s1?fieldSelector=metadata.name%3Ds2");
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "fieldSelector metadata.name doesn't match requested name"
    );
    // GET of a named object with ?watch is a GET (as in kube): the object.
    let (code, body) = w.get("/api/v1/namespaces/team-a/secrets/s1?watch=true");
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["name"], "s1");
    // A list selecting its one allowed name is allowed, and holds it only.
    let (code, body) = w.get("/api/v1/namespaces/team-a/secrets?fieldSelector=metadata.name%3Ds1");
    assert_eq!(code, 200, "{body}");
    assert_eq!(names_of(&body), ["s1"]);
}

fn names_of(list: &Value) -> Vec<String> {
    common::names(list)
}

#[test]
fn a_certificate_that_expires_stops_working_on_its_open_connection() {
    let s = Server::start(1);
    let expiry = SystemTime::now() + Duration::from_secs(3);
    let creds = sign_client_cert_until(&s.ca_pem(), &s.pki("ca.key"), "root-soon", expiry);
    bind(
        &s,
        "",
        "soon",
        "ClusterRole",
        "cluster-admin",
        vec![subject("User", "root-soon")],
    );
    let mut c = s.raw_tls_with(Some(creds));
    let (code, body) = http1(&mut c, "GET", "/api/v1/namespaces/default");
    assert_eq!(code, 200, "{body}");
    while SystemTime::now() < expiry + Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, body) = http1(&mut c, "GET", "/api/v1/namespaces/default");
    assert_eq!(code, 401, "{body}");
}

#[test]
fn odd_inputs_get_kube_s_refusals() {
    let s = Server::start(1);
    // A patch type is not a body a create can take.
    let (code, body) = s.send(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json-patch+json",
        br#"{"metadata":{"name":"x"}}"#,
    );
    assert_eq!(code, 415, "{body}");
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    use base64::Engine;
    let token = |rv: &str| {
        base64::engine::general_purpose::URL_SAFE.encode(format!(
            r#"{{"v":"meta.k8s.io/v1","rv":{rv},"ns":"default","name":"a"}}"#
        ))
    };
    // A revision past i64 is no revision.
    let (code, body) = s.get(&format!(
        "/api/v1/configmaps?limit=1&continue={}",
        token("18446744073709551615")
    ));
    assert_eq!(code, 400, "{body}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("invalid continue token: continue key is not valid"));
    // One the server has not reached is waited for, then refused.
    let t = Instant::now();
    let (code, body) = s.get(&format!(
        "/api/v1/configmaps?limit=1&continue={}",
        token("9223372036854775807")
    ));
    assert_eq!(code, 504, "{body}");
    assert!(t.elapsed() >= Duration::from_secs(2));
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    // A watch from the far future ends with kube's error event.
    let w = s.watch("/api/v1/configmaps?watch=1&resourceVersion=9999999999");
    let events = w.rest();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 504);
    assert!(events[0]["object"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Timeout: Too large resource version: 9999999999"));
}

#[test]
fn a_copying_json_patch_cannot_multiply_an_object() {
    let s = Server::start(1);
    let cm = json!({"metadata": {"name": "bomb"}, "data": {"seed": "z".repeat(1000)}});
    assert_eq!(s.post("/api/v1/namespaces/default/configmaps", &cm).0, 201);
    let rss = s.rss_kib();
    let ops: Vec<Value> = (0..30)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/x{i}")}))
        .collect();
    let t = Instant::now();
    let (code, body) = s.patch(
        "/api/v1/namespaces/default/configmaps/bomb",
        "application/json-patch+json",
        &Value::Array(ops),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
    let grown = s.rss_kib().saturating_sub(rss) / 1024;
    assert!(grown < 64, "the patch grew the server by {grown} MiB");
    admin_answers_promptly(&s);
    // Too many operations: 413, as kube counts them.
    let ops: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/metadata/name", "value": "bomb"}))
        .collect();
    let (code, body) = s.patch(
        "/api/v1/namespaces/default/configmaps/bomb",
        "application/json-patch+json",
        &Value::Array(ops),
    );
    assert_eq!(code, 413, "{body}");
    assert_eq!(
        body["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
    // A merge patch whose result would outgrow any request is refused.
    let big = json!({"metadata": {"name": "big"}, "data": {"a": "q".repeat(2 << 20)}});
    assert_eq!(s.post("/api/v1/namespaces/default/configmaps", &big).0, 201);
    let (code, body) = s.patch(
        "/api/v1/namespaces/default/configmaps/big",
        "application/merge-patch+json",
        &json!({"data": {"b": "r".repeat(2 << 20)}}),
    );
    assert_eq!(
        code,
        413,
        "{}",
        &body.to_string()[..200.min(body.to_string().len())]
    );
    let (_, stored) = s.get("/api/v1/namespaces/default/configmaps/big");
    assert!(stored["data"].get("b").is_none());
}

const TEMPLATES: &str = "/api/v1/namespaces/default/podtemplates";

#[test]
fn strategic_merge_of_thousands_of_containers_does_not_hold_the_core() {
    // One shard: the patch and the administrator's request share a core.
    let s = Server::start(1);
    for (pod, what, name_of) in [
        (
            "distinct",
            "distinct names",
            (|i: usize| format!("c{i}")) as fn(usize) -> String,
        ),
        ("repeated", "one name repeated", |_| "dup".to_string()),
    ] {
        // A PodTemplate: its pod spec merges as a pod's (whose own spec
        // is immutable).
        let p = json!({"metadata": {"name": pod},
            "template": {"spec": {"containers": [{"name": "c0", "image": "x"}]}}});
        assert_eq!(s.post(TEMPLATES, &p).0, 201);
        let containers: Vec<Value> = (0..16_000)
            .map(|i| json!({"name": name_of(i), "image": "x"}))
            .collect();
        let patch = json!({"template": {"spec": {"containers": containers}}});
        let url = s.url(&format!("{TEMPLATES}/{pod}"));
        let sent = std::thread::spawn(move || {
            let t = Instant::now();
            let code = ureq::agent()
                .patch(&url)
                .header("Content-Type", "application/strategic-merge-patch+json")
                .config()
                .http_status_as_error(false)
                .build()
                .send(patch.to_string())
                .map(|r| r.status().as_u16())
                .unwrap_or(0);
            (code, t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        admin_answers_promptly(&s);
        let (code, took) = sent.join().unwrap();
        // Merged (200), or refused for the size of the result (413).
        assert!(code == 200 || code == 413, "{what}: {code}");
        assert!(
            took < Duration::from_secs(5),
            "{what}: the patch took {took:?}"
        );
        admin_answers_promptly(&s);
    }
    let (_, p) = s.get(&format!("{TEMPLATES}/distinct"));
    assert_eq!(
        p["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        16_000
    );
    let (_, p) = s.get(&format!("{TEMPLATES}/repeated"));
    assert_eq!(
        p["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
