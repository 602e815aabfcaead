//! Bad input gets the right metav1.Status and never damages stored data.

mod common;
use common::*;
use serde_json::json;
use std::io::{Read, Write};

fn assert_status(body: &serde_json::Value, code: u16, reason: &str) {
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["status"], "Failure");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
}

each_shard_count!(decode_errors, |shards| {
    let s = Server::start(shards);
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, body) = s.send("POST", cms, "application/json", b"{\"metadata\": ");
    assert_eq!(code, 400);
    assert_status(&body, 400, "BadRequest");
    let (code, body) = s.send("POST", cms, "application/yaml", b"metadata: [unclosed");
    assert_eq!(code, 400, "{body}");
    let (code, body) = s.send("POST", cms, "application/json", b"[1,2]");
    assert_eq!(code, 400, "{body}");
    let (code, body) = s.post(
        cms,
        &json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    );
    assert_eq!(code, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("v2"));
    let (code, _) = s.post(
        cms,
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
    );
    assert_eq!(code, 400);
    let (code, body) = s.post(
        cms,
        &json!({"metadata": {"name": "x", "namespace": "kube-system"}}),
    );
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    let (code, body) = s.send("POST", cms, "text/plain", b"hello");
    assert_eq!(code, 415);
    assert_status(&body, 415, "UnsupportedMediaType");
    let (code, _, text) = s.get_with("/api/v1/namespaces/default/configmaps", "text/html");
    assert_eq!(code, 406, "{text}");
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_status(&body, 406, "NotAcceptable");
    // Nothing above was stored.
    let (_, list) = s.get(cms);
    assert!(names(&list).is_empty(), "{list}");
});

each_shard_count!(validation_errors, |shards| {
    let s = Server::start(shards);
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, body) = s.post(cms, &json!({"metadata": {"name": "Bad_Name", "labels": {"ok": "v", "-bad": "x", "k": "bad value!"}}}));
    assert_eq!(code, 422, "{body}");
    assert_status(&body, 422, "Invalid");
    assert_eq!(body["details"]["kind"], "ConfigMap");
    assert_eq!(body["details"]["name"], "Bad_Name");
    let causes = body["details"]["causes"].as_array().unwrap();
    let fields: Vec<&str> = causes
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"metadata.name"), "{fields:?}");
    assert!(
        fields
            .iter()
            .filter(|f| f.starts_with("metadata.labels"))
            .count()
            >= 2,
        "{fields:?}"
    );
    assert!(
        causes.iter().all(|c| c["reason"] == "FieldValueInvalid"),
        "{causes:?}"
    );
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("ConfigMap \"Bad_Name\" is invalid: "));
    let (code, body) = s.post(
        cms,
        &json!({"metadata": {"name": "a", "annotations": {"bad key": "v"}}}),
    );
    assert_eq!(code, 422, "{body}");
    let (code, body) = s.post(cms, &json!({"metadata": {}}));
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");
    // Namespaces are DNS labels: dots are not allowed.
    let (code, _) = s.post("/api/v1/namespaces", &json!({"metadata": {"name": "a.b"}}));
    assert_eq!(code, 422);
    // A missing namespace is 404.
    let (code, body) = s.post(
        "/api/v1/namespaces/nope/configmaps",
        &configmap("x", json!({})),
    );
    assert_eq!(code, 404);
    assert_eq!(body["message"], "namespaces \"nope\" not found");
    // PUT name mismatch.
    let (code, _) = s.post(cms, &configmap("real", json!({})));
    assert_eq!(code, 201);
    let (code, body) = s.put(&format!("{cms}/real"), &configmap("other", json!({})));
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the name of the object (other) does not match the name on the URL (real)"
    );
    let (code, _) = s.put(&format!("{cms}/absent"), &configmap("absent", json!({})));
    assert_eq!(code, 404);
});

each_shard_count!(routing_errors, |shards| {
    let s = Server::start(shards);
    let (code, body) = s.get("/api/v1/namespaces/default/widgets");
    assert_eq!(code, 404);
    assert_status(&body, 404, "NotFound");
    let (code, _) = s.get("/apis/nope.example.com/v1/things");
    assert_eq!(code, 404);
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps/x/status");
    assert_eq!(code, 404, "configmaps have no status subresource");
    // Namespaces do not support deletecollection.
    let (code, body) = s.delete("/api/v1/namespaces");
    assert_eq!(code, 405, "{body}");
    assert_status(&body, 405, "MethodNotAllowed");
    let (code, _) = s.send(
        "POST",
        "/api/v1/namespaces/default/configmaps/named",
        "application/json",
        b"{}",
    );
    assert_eq!(code, 405);
    let (code, body) = s.get("/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(");
    assert_eq!(code, 400);
    assert_eq!(
        body["message"], "unable to parse requirement: found '', expected: ',', ')' or identifier",
        "the parser's words, said once"
    );
    let (code, body) = s.delete("/api/v1/namespaces/default/configmaps?labelSelector=a%3D%3D%3Db");
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "unable to parse requirement: found '=', expected: identifier"
    );
    let (code, body) =
        s.get("/api/v1/namespaces/default/configmaps?fieldSelector=spec.nodeName%3Dx");
    assert_eq!(code, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("field label not supported"),
        "{body}"
    );
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps?limit=abc");
    assert_eq!(code, 400);
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps?continue=garbage");
    assert_eq!(code, 400);
});

#[test]
fn oversized_body_is_413_and_nothing_stored() {
    let s = Server::start(2);
    let big = "x".repeat(3 * 1024 * 1024 + 10);
    let body = json!({"metadata": {"name": "big"}, "data": {"k": big}}).to_string();
    let (code, resp) = s.send(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        body.as_bytes(),
    );
    assert_eq!(code, 413, "{resp}");
    assert_status(&resp, 413, "RequestEntityTooLarge");
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps/big");
    assert_eq!(code, 404);
}

/// A client that promises a body and hangs up halfway leaves nothing
/// behind, and the server keeps serving.
#[test]
fn request_ending_mid_body_stores_nothing() {
    let s = Server::start(2);
    let body = json!({"metadata": {"name": "half"}, "data": {"k": "v"}}).to_string();
    for _ in 0..5 {
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        write!(
            conn,
            "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            body.len() + 100,
            &body[..body.len() / 2]
        )
        .unwrap();
        conn.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = String::new();
        let _ = conn.read_to_string(&mut out);
        assert!(!out.contains(" 201 "), "{out}");
    }
    let (code, _) = s.get("/api/v1/namespaces/default/configmaps/half");
    assert_eq!(code, 404);
    assert_eq!(s.get("/readyz").0, 200);
}

/// A request refused before its body is read ends its connection, and the
/// response says so — a client that pools connections must not send its
/// next request into it. A request whose body was read keeps it open.
#[test]
fn a_refused_body_closes_the_connection_and_says_so() {
    let s = Server::start(1);
    let head = |request: &str| {
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        conn.write_all(request.as_bytes()).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while !out.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&out).to_lowercase()
    };
    let refused = head("POST /api/v1/namespaces/default/configmaps/named HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    assert!(refused.starts_with("http/1.1 405"), "{refused}");
    assert!(refused.contains("connection: close"), "{refused}");
    let body = json!({"metadata": {"name": "kept"}}).to_string();
    let created = head(&format!("POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    assert!(created.starts_with("http/1.1 201"), "{created}");
    assert!(!created.contains("connection: close"), "{created}");
}

/// Random bytes in every body position never crash the server.
#[test]
fn garbage_bodies_never_crash() {
    let s = Server::start(2);
    let (_, c) = s.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("keep", json!({})),
    );
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    for i in 0..300 {
        let len = 1 + (i * 7) % 200;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed & 0xff) as u8 | 0x80
            })
            .collect();
        for (method, path, ct) in [
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
            ),
            (
                "PUT",
                "/api/v1/namespaces/default/configmaps/keep",
                "application/yaml",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/default/configmaps/keep",
                "application/merge-patch+json",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/default/configmaps/keep",
                "application/json-patch+json",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/default/configmaps/keep",
                "application/json",
            ),
        ] {
            let (code, _, _) = s.send_raw(method, path, ct, &bytes);
            assert!(
                code == 400 || code == 422 || code == 404 || code == 409 || code == 200,
                "{method} {path}: {code}"
            );
        }
    }
    let (code, now) = s.get("/api/v1/namespaces/default/configmaps/keep");
    assert_eq!(code, 200);
    assert_eq!(now["data"], c["data"]);
}

/// Extreme query values are answered, never crash the server.
#[test]
fn extreme_query_values() {
    let s = Server::start(2);
    let cms = "/api/v1/namespaces/default/configmaps";
    s.post(cms, &configmap("one", json!({})));
    let mut w = s.watch(&format!(
        "{cms}?watch=1&timeoutSeconds=18446744073709551615&resourceVersion=0"
    ));
    assert_eq!(w.next_event().unwrap()["type"], "ADDED");
    drop(w);
    let (code, _) = s.get(&format!("{cms}?limit=-5"));
    assert_eq!(code, 200);
    let (code, _) = s.get(&format!("{cms}?limit=99999999999999999999"));
    assert_eq!(code, 400);
    let (code, _) = s.get(&format!("{cms}?watch=1&timeoutSeconds=-1"));
    assert_eq!(code, 400);
    let (code, _) = s.get(&format!(
        "{cms}?resourceVersion=18446744073709551615&resourceVersionMatch=Exact&timeoutSeconds=1"
    ));
    assert_eq!(code, 504);
    assert_eq!(s.get("/readyz").0, 200, "{}", s.log());
}
