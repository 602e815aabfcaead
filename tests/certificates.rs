//! CertificateSigningRequests: the server records who asked, the request
//! never changes, and only `/approval` decides — a decision, once made,
//! stays.

mod common;
use common::tls::{self, Who};
use common::*;
use serde_json::{json, Value};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/// base64 of a PEM-framed block (what `status.certificate` carries).
const REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQgotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";

/// base64 of a real certificate request for `name` in group `dev`
/// (CertificateSubjectRestriction parses the client signer's requests).
fn request(name: &str) -> String {
    use base64::Engine;
    let (pem, _) = tls::certificate_request(name, "dev");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn csr(name: &str, signer: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": request(name), "signerName": signer, "usages": ["client auth"],
                 "username": "mallory", "groups": ["system:masters"]}})
}

fn decision(kind: &str) -> Value {
    json!({"type": kind, "status": "True", "reason": "ByTest", "message": "decided in a test"})
}

#[test]
fn requester_is_recorded_and_only_approval_decides() {
    // The test plays the signer: the built-in one stays off.
    let s = Server::start_with(1, &["--controllers=*,-csrsigning"]);
    let alice = s.client(&Who::cert("alice", &["system:masters", "dev"]));
    let (code, created) = alice.post(CSRS, &csr("alice", "kubernetes.io/kube-apiserver-client"));
    assert_eq!(code, 201, "{created}");
    // Whatever the body claimed, the spec names the authenticated user.
    assert_eq!(created["spec"]["username"], "alice");
    let groups = created["spec"]["groups"].as_array().unwrap();
    assert!(groups.contains(&json!("dev")) && groups.contains(&json!("system:authenticated")));
    assert_eq!(created["status"], json!({}));
    let one = format!("{CSRS}/alice");

    // The spec never changes; metadata does.
    let mut put = created.clone();
    put["spec"]["signerName"] = json!("example.com/other");
    put["metadata"]["labels"] = json!({"team": "a"});
    let (code, updated) = s.put(&one, &put);
    assert_eq!(code, 200, "{updated}");
    assert_eq!(
        updated["spec"]["signerName"],
        "kubernetes.io/kube-apiserver-client"
    );
    assert_eq!(updated["metadata"]["labels"]["team"], "a");

    // A signer writing /status cannot approve.
    let mut st = updated.clone();
    st["status"] = json!({"conditions": [decision("Approved")]});
    let (code, refused) = s.put(&format!("{one}/status"), &st);
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["details"]["causes"][0]["field"],
        "status.conditions"
    );

    // /approval decides; the server stamps the condition's times.
    let (_, current) = s.get(&one);
    let mut approve = current.clone();
    approve["status"] = json!({"conditions": [decision("Approved")]});
    let (code, approved) = s.put(&format!("{one}/approval"), &approve);
    assert_eq!(code, 200, "{approved}");
    let cond = &approved["status"]["conditions"][0];
    assert_eq!(cond["type"], "Approved");
    assert!(cond["lastUpdateTime"].is_string() && cond["lastTransitionTime"].is_string());

    // /status carries the certificate and keeps the decision.
    let mut signed = approved.clone();
    signed["status"]["certificate"] = json!(REQUEST);
    let (code, signed) = s.put(&format!("{one}/status"), &signed);
    assert_eq!(code, 200, "{signed}");
    assert_eq!(signed["status"]["certificate"], REQUEST);
    assert_eq!(signed["status"]["conditions"][0]["type"], "Approved");

    // A decision cannot be taken back, nor joined by its opposite.
    let mut undo = signed.clone();
    undo["status"]["conditions"] = json!([]);
    let (code, refused) = s.put(&format!("{one}/approval"), &undo);
    assert_eq!(code, 422, "{refused}");
    let mut both = signed.clone();
    both["status"]["conditions"] = json!([decision("Approved"), decision("Denied")]);
    let (code, refused) = s.put(&format!("{one}/approval"), &both);
    assert_eq!(code, 422, "{refused}");

    // The signer is a selectable field.
    s.post(CSRS, &csr("bob", "example.com/custom"));
    let (_, list) = s.get(&format!(
        "{CSRS}?fieldSelector=spec.signerName%3Dexample.com%2Fcustom"
    ));
    assert_eq!(names(&list), vec!["bob"]);
}

#[test]
fn kubectl_certificate_approve_and_deny() {
    let s = Server::start(1);
    s.post(
        CSRS,
        &csr("approve-me", "kubernetes.io/kube-apiserver-client"),
    );
    s.post(CSRS, &csr("deny-me", "kubernetes.io/kube-apiserver-client"));
    let kc = s.kubeconfig(&Who::cert("admin", &["system:masters"]));
    let (code, out, err) = tls::kubectl(&kc, &["certificate", "approve", "approve-me"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = tls::kubectl(&kc, &["certificate", "deny", "deny-me"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, a) = s.get(&format!("{CSRS}/approve-me"));
    assert_eq!(a["status"]["conditions"][0]["type"], "Approved", "{a}");
    let (_, d) = s.get(&format!("{CSRS}/deny-me"));
    assert_eq!(d["status"]["conditions"][0]["type"], "Denied", "{d}");
}

fn request_for(
    name: &str,
    user: &str,
    group: &str,
    signer: &str,
    usages: Value,
) -> (Value, String) {
    use base64::Engine;
    let (pem, key) = tls::certificate_request(user, group);
    let body = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
                 "signerName": signer, "usages": usages, "expirationSeconds": 3600}});
    (body, key)
}

fn approve(s: &Server, name: &str) {
    let (_, csr) = s.get(&format!("{CSRS}/{name}"));
    let mut approve = csr.clone();
    approve["status"] = json!({"conditions": [decision("Approved")]});
    let (code, out) = s.put(&format!("{CSRS}/{name}/approval"), &approve);
    assert_eq!(code, 200, "{out}");
}

/// The built-in signer issues what an approved request asks for, and the
/// certificate authenticates its subject; a request its signer may not
/// sign is marked Failed instead.
#[test]
fn approved_requests_are_signed_and_the_certificate_works() {
    use base64::Engine;
    let s = Server::start(1);
    let (req, key) = request_for(
        "alice-client",
        "alice",
        "dev",
        "kubernetes.io/kube-apiserver-client",
        json!(["digital signature", "client auth"]),
    );
    assert_eq!(s.post(CSRS, &req).0, 201);
    approve(&s, "alice-client");
    let issued = eventually(10, "a certificate", || {
        let (_, csr) = s.get(&format!("{CSRS}/alice-client"));
        csr["status"]["certificate"].as_str().map(str::to_string)
    });
    let pem = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(issued)
            .unwrap(),
    )
    .unwrap();
    assert!(pem.contains("BEGIN CERTIFICATE"), "{pem}");
    let alice = s.client(&Who::Issued(pem, key));
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, me) = alice.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", &review);
    assert_eq!(code, 201, "{me}");
    assert_eq!(me["status"]["userInfo"]["username"], "alice");
    let groups = me["status"]["userInfo"]["groups"].as_array().unwrap();
    assert!(groups.contains(&json!("dev")), "{me}");

    // Server auth from the client signer, and a kubelet certificate for a
    // user: refused, with a Failed condition.
    for (name, user, group, signer, usages) in [
        (
            "bad-usage",
            "bob",
            "dev",
            "kubernetes.io/kube-apiserver-client",
            json!(["server auth"]),
        ),
        (
            "not-a-node",
            "bob",
            "dev",
            "kubernetes.io/kubelet-serving",
            json!(["server auth"]),
        ),
    ] {
        let (req, _) = request_for(name, user, group, signer, usages);
        assert_eq!(s.post(CSRS, &req).0, 201);
        approve(&s, name);
        let failed = eventually(10, "a Failed condition", || {
            let (_, csr) = s.get(&format!("{CSRS}/{name}"));
            csr["status"]["conditions"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["type"] == "Failed").cloned())
        });
        assert_eq!(failed["reason"], "SignerValidationFailure", "{failed}");
        let (_, csr) = s.get(&format!("{CSRS}/{name}"));
        assert!(csr["status"]["certificate"].is_null(), "{csr}");
    }
}

/// CertificateApproval: updating `/approval` is not enough; the approver
/// needs `approve` on the request's signer (by name or `<domain>/*`).
#[test]
fn approving_needs_the_approve_verb_on_the_signer() {
    use common::tls::rbac::{bind, cluster_role, rule};
    let s = Server::start(1);
    s.post(CSRS, &csr("one", "kubernetes.io/kube-apiserver-client"));
    s.post(CSRS, &csr("two", "example.com/custom"));
    // carol gets a ClusterRole of these rules, bound to her by name.
    let grant = |role: &str, rules: Vec<Value>| {
        cluster_role(&s, role, json!({}), rules);
        let carol =
            json!({"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"});
        bind(
            &s,
            "",
            &format!("carol-{role}"),
            "ClusterRole",
            role,
            vec![carol],
        );
    };
    let approve_signer = |signer: &str| {
        vec![
            json!({"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"],
                    "resources": ["signers"], "resourceNames": [signer]}),
        ]
    };
    grant(
        "csr-approver",
        vec![
            rule(
                &["get", "list", "watch"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
            ),
            rule(
                &["update"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/approval"],
            ),
        ],
    );
    let kc = s.kubeconfig(&Who::cert("carol", &[]));
    let approve = |name: &str| tls::kubectl(&kc, &["certificate", "approve", name]);
    let (code, out, err) = approve("one");
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""),
        "{err}"
    );
    // Granted the signer by name: that one, and not the other signer.
    grant(
        "client-signer-approver",
        approve_signer("kubernetes.io/kube-apiserver-client"),
    );
    let (code, out, err) = approve("one");
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = approve("two");
    assert_ne!(code, 0);
    assert!(err.contains("signerName \"example.com/custom\""), "{err}");
    // A domain wildcard covers every signer of the domain.
    grant("example-approver", approve_signer("example.com/*"));
    let (code, out, err) = approve("two");
    assert_eq!(code, 0, "{out}{err}");
}
