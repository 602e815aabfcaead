//! CertificateSigningRequests: the server records who asked, the request
//! never changes, and only `/approval` decides — a decision, once made,
//! stays.

mod common;
use common::tls::Who;
use common::*;
use serde_json::{json, Value};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/// base64 of a PEM-framed certificate request.
const REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQgotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";

fn csr(name: &str, signer: &str) -> Value {
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": REQUEST, "signerName": signer, "usages": ["client auth"],
                 "username": "mallory", "groups": ["system:masters"]}})
}

fn decision(kind: &str) -> Value {
    json!({"type": kind, "status": "True", "reason": "ByTest", "message": "decided in a test"})
}

#[test]
fn requester_is_recorded_and_only_approval_decides() {
    let s = Server::start(1);
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
