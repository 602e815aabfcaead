//! Authentication over TLS against the real binary: client certificates
//! (trusted, untrusted, none), static tokens, bootstrap tokens,
//! service-account tokens (bound and legacy; expired, forged, garbled;
//! deleted accounts), anonymous requests, and the review APIs that
//! expose them (TokenReview, SelfSubjectReview / `kubectl auth whoami`).

mod common;
use common::tls::{kubectl, service_account_token, Who};
use common::*;
use serde_json::{json, Value};

fn whoami(s: &Server, who: &Who) -> (u16, Value) {
    s.client(who).post(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
}

fn user_of(s: &Server, who: &Who) -> Value {
    let (code, r) = whoami(s, who);
    assert_eq!(code, 201, "{who:?}: {r}");
    r["status"]["userInfo"].clone()
}

#[test]
fn tls_with_and_without_client_certificates() {
    let s = Server::start(2);
    // No certificate: anonymous, which may read health but nothing else.
    let anon = s.client(&Who::Anonymous);
    let (code, _, body) = anon.raw("GET", "/healthz", vec![]);
    assert_eq!((code, body.as_str()), (200, "ok"));
    let (code, body) = anon.get("/api/v1/namespaces");
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    // A certificate from the server's CA: CN is the user, O the groups.
    let alice = Who::cert("alice", &["dev", "qa"]);
    let u = user_of(&s, &alice);
    assert_eq!(u["username"], "alice");
    assert_eq!(u["groups"], json!(["dev", "qa", "system:authenticated"]));
    // A system:masters certificate may do anything.
    let admin = s.client(&Who::cert("root", &["system:masters"]));
    assert_eq!(admin.get("/api/v1/namespaces").0, 200);
    // A certificate from an unknown CA is refused with 401, not
    // downgraded to anonymous (even for what anonymous may read).
    let stranger = s.client(&Who::StrangerCert("mallory".into()));
    let (code, body) = stranger.get("/healthz");
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["reason"], "Unauthorized");
    // Every response carries an Audit-ID.
    let (_, headers, _) = anon.raw("GET", "/version", vec![]);
    assert!(headers.get("audit-id").is_some_and(|v| !v.is_empty()));
}

#[test]
fn http2_over_tls_is_negotiated() {
    let s = Server::start(1);
    let ca = s.dir.path().join("ca.crt");
    std::fs::write(&ca, s.ca_pem()).unwrap();
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
            "--cacert",
        ])
        .arg(&ca)
        .arg(format!("{}/healthz", s.secure_base()))
        .output()
        .expect("curl");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "2 200",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn static_tokens_and_garbled_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "s3cret,bob,bob-uid,\"ops,dev\"\n").unwrap();
    let s = Server::start_with(1, &["--token-auth-file", file.to_str().unwrap()]);
    let u = user_of(&s, &Who::token("s3cret"));
    assert_eq!(u["username"], "bob");
    assert_eq!(u["uid"], "bob-uid");
    assert_eq!(u["groups"], json!(["ops", "dev", "system:authenticated"]));
    for bad in [
        "nope",
        "s3cret2",
        "a.b.c",
        "abcdef.0123456789abcdef",
        "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
    ] {
        let (code, body) = s.client(&Who::token(bad)).get("/healthz");
        assert_eq!(code, 401, "{bad}: {body}");
    }
}

#[test]
fn anonymous_can_be_turned_off() {
    let s = Server::start_with(1, &["--anonymous-auth=false"]);
    assert_eq!(s.client(&Who::Anonymous).get("/healthz").0, 401);
    assert_eq!(s.client(&Who::cert("alice", &[])).get("/healthz").0, 200);
}

fn sign(claims: &Value, key_pem: &str) -> String {
    let key = jsonwebtoken::EncodingKey::from_ec_pem(key_pem.as_bytes()).unwrap();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
        claims,
        &key,
    )
    .unwrap()
}

#[test]
fn service_account_tokens() {
    let s = Server::start(2);
    namespace(&s, "apps");
    let token = service_account_token(&s, "apps", "builder");
    let u = user_of(&s, &Who::token(&token));
    assert_eq!(u["username"], "system:serviceaccount:apps:builder");
    assert_eq!(
        u["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:apps",
            "system:authenticated"
        ])
    );
    assert!(u["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap()
        .starts_with("JTI="));
    let (_, sa) = s.get("/api/v1/namespaces/apps/serviceaccounts/builder");
    assert_eq!(u["uid"], sa["metadata"]["uid"]);

    // A TokenReview agrees, and reports the audiences.
    let (code, review) = s.client(&Who::cert("root", &["system:masters"])).post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}),
    );
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:apps:builder"
    );
    assert_eq!(
        review["status"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );

    // Expired, forged and wrongly-addressed tokens are 401.
    let key = s.pki("sa.key");
    let now = chrono::Utc::now().timestamp();
    let claims = |exp: i64, aud: &str| {
        json!({
            "iss": "https://kubernetes.default.svc.cluster.local", "aud": [aud],
            "sub": "system:serviceaccount:apps:builder", "exp": exp, "iat": now - 7200,
            "kubernetes.io": {"namespace": "apps", "serviceaccount": {"name": "builder", "uid": sa["metadata"]["uid"]}}
        })
    };
    let good = sign(
        &claims(now + 600, "https://kubernetes.default.svc.cluster.local"),
        &key,
    );
    assert_eq!(
        user_of(&s, &Who::token(&good))["username"],
        "system:serviceaccount:apps:builder"
    );
    let expired = sign(
        &claims(now - 3600, "https://kubernetes.default.svc.cluster.local"),
        &key,
    );
    let other_key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let forged = sign(
        &claims(now + 600, "https://kubernetes.default.svc.cluster.local"),
        &other_key,
    );
    let wrong_aud = sign(&claims(now + 600, "vault"), &key);
    let mut tampered = token.clone();
    tampered.insert(token.len() / 2, 'x');
    for (what, t) in [
        ("expired", expired),
        ("forged", forged),
        ("audience", wrong_aud),
        ("garbled", tampered),
    ] {
        let (code, body) = s.client(&Who::token(&t)).get("/healthz");
        assert_eq!(code, 401, "{what}: {body}");
    }

    // Deleting the account ends its tokens; a new account of the same
    // name (another uid) does not revive them.
    assert_eq!(
        s.delete("/api/v1/namespaces/apps/serviceaccounts/builder")
            .0,
        200
    );
    assert_eq!(s.client(&Who::token(&token)).get("/healthz").0, 401);
    s.post(
        "/api/v1/namespaces/apps/serviceaccounts",
        &json!({"metadata": {"name": "builder"}}),
    );
    assert_eq!(s.client(&Who::token(&token)).get("/healthz").0, 401);
    assert_eq!(s.client(&Who::token(&good)).get("/healthz").0, 401);
}

#[test]
fn token_request_validation_and_bound_objects() {
    let s = Server::start(1);
    namespace(&s, "apps");
    s.post(
        "/api/v1/namespaces/apps/serviceaccounts",
        &json!({"metadata": {"name": "runner"}}),
    );
    let path = "/api/v1/namespaces/apps/serviceaccounts/runner/token";
    let (code, body) = s.post(path, &json!({"spec": {"expirationSeconds": 60}}));
    assert_eq!(code, 422, "{body}");
    let (code, _) = s.post(
        "/api/v1/namespaces/apps/serviceaccounts/ghost/token",
        &json!({"spec": {}}),
    );
    assert_eq!(code, 404);
    // Bound to a secret: works while the secret exists.
    let (_, secret) = s.post(
        "/api/v1/namespaces/apps/secrets",
        &json!({"metadata": {"name": "anchor"}}),
    );
    let (code, tr) = s.post(
        path,
        &json!({"spec": {"audiences": ["api", "vault"], "expirationSeconds": 1200,
            "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "anchor"}}}),
    );
    assert_eq!(code, 201, "{tr}");
    assert_eq!(
        tr["spec"]["boundObjectRef"]["uid"],
        secret["metadata"]["uid"]
    );
    assert_eq!(tr["spec"]["expirationSeconds"], 1200);
    let token = tr["status"]["token"].as_str().unwrap().to_string();
    // Not for this server's audience, but a TokenReview for "vault" says yes.
    assert_eq!(s.client(&Who::token(&token)).get("/healthz").0, 401);
    let review = |aud: &str| {
        s.post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &json!({"spec": {"token": token, "audiences": [aud]}}),
        )
        .1
    };
    assert_eq!(review("vault")["status"]["authenticated"], true);
    assert_eq!(review("vault")["status"]["audiences"], json!(["vault"]));
    assert_eq!(review("elsewhere")["status"]["authenticated"], false);
    s.delete("/api/v1/namespaces/apps/secrets/anchor");
    assert_eq!(review("vault")["status"]["authenticated"], false);
}

#[test]
fn legacy_service_account_token_secrets() {
    let s = Server::start(2);
    namespace(&s, "apps");
    s.post(
        "/api/v1/namespaces/apps/serviceaccounts",
        &json!({"metadata": {"name": "old"}}),
    );
    s.post(
        "/api/v1/namespaces/apps/secrets",
        &json!({"metadata": {"name": "old-token", "annotations": {"kubernetes.io/service-account.name": "old"}},
                "type": "kubernetes.io/service-account-token"}),
    );
    // The token controller fills the secret in (poll: it runs after the create).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let token = loop {
        let (_, secret) = s.get("/api/v1/namespaces/apps/secrets/old-token");
        if let Some(t) = secret["data"]["token"].as_str() {
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD.decode(t).unwrap();
            assert!(secret["data"]["ca.crt"].is_string());
            break String::from_utf8(raw).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "token never filled: {secret}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(
        user_of(&s, &Who::token(&token))["username"],
        "system:serviceaccount:apps:old"
    );
    // Deleting the secret revokes it.
    s.delete("/api/v1/namespaces/apps/secrets/old-token");
    assert_eq!(s.client(&Who::token(&token)).get("/healthz").0, 401);
}

#[test]
fn bootstrap_tokens() {
    let s = Server::start_with(2, &["--enable-bootstrap-token-auth"]);
    use base64::Engine;
    let b64 = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
    let secret = |id: &str, expiration: &str| {
        json!({"metadata": {"name": format!("bootstrap-token-{id}")}, "type": "bootstrap.kubernetes.io/token",
            "data": {"token-id": b64(id), "token-secret": b64("0123456789abcdef"),
                "usage-bootstrap-authentication": b64("true"), "expiration": b64(expiration),
                "auth-extra-groups": b64("system:bootstrappers:workers")}})
    };
    assert_eq!(
        s.post(
            "/api/v1/namespaces/kube-system/secrets",
            &secret("abcdef", "2999-01-01T00:00:00Z")
        )
        .0,
        201
    );
    assert_eq!(
        s.post(
            "/api/v1/namespaces/kube-system/secrets",
            &secret("zzzzzz", "2001-01-01T00:00:00Z")
        )
        .0,
        201
    );
    let u = user_of(&s, &Who::token("abcdef.0123456789abcdef"));
    assert_eq!(u["username"], "system:bootstrap:abcdef");
    assert_eq!(
        u["groups"],
        json!([
            "system:bootstrappers",
            "system:bootstrappers:workers",
            "system:authenticated"
        ])
    );
    for bad in [
        "zzzzzz.0123456789abcdef",
        "abcdef.0123456789abcdee",
        "qqqqqq.0123456789abcdef",
    ] {
        assert_eq!(s.client(&Who::token(bad)).get("/healthz").0, 401, "{bad}");
    }
}

#[test]
fn kubectl_auth_whoami_and_the_admin_kubeconfig() {
    let s = Server::start(2);
    // The kubeconfig the server writes works as it is.
    let admin = s.data_dir.join("admin.kubeconfig");
    let (code, out, err) = kubectl(&admin, &["get", "ns"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kube-system"), "{out}");
    let (code, out, err) = kubectl(&admin, &["auth", "whoami"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("kubeshard-admin") && out.contains("system:masters"),
        "{out}"
    );
    // And for a certificate user without any role.
    let (code, out, err) = kubectl(
        &s.kubeconfig(&Who::cert("carol", &["team"])),
        &["auth", "whoami", "-o", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"]["userInfo"]["username"], "carol");
    let (code, _, err) = kubectl(
        &s.kubeconfig(&Who::cert("carol", &["team"])),
        &["get", "pods"],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains(r#"User "carol" cannot list resource "pods""#),
        "{err}"
    );
}

#[test]
fn certificates_keys_and_tokens_survive_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let mut first = Server::launch(2, data.path(), &[]).unwrap();
    namespace(&first, "apps");
    let token = service_account_token(&first, "apps", "keeper");
    let ca = first.ca_pem();
    let sa_key = first.pki("sa.key");
    first.stop();
    let second = Server::launch(2, data.path(), &[]).unwrap();
    assert_eq!(second.ca_pem(), ca, "the CA is reused");
    assert_eq!(second.pki("sa.key"), sa_key, "the token key is reused");
    assert_eq!(
        user_of(&second, &Who::token(&token))["username"],
        "system:serviceaccount:apps:keeper"
    );
    // The admin kubeconfig is rewritten for the new port and still works.
    let (code, out, err) = kubectl(
        &second.data_dir.join("admin.kubeconfig"),
        &["get", "sa", "-n", "apps"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("keeper"), "{out}");
}
