//! Audit: the policy picks a level per request; the log holds one JSON
//! event per stage with what that level promises, and every response
//! carries its Audit-ID.

mod common;
use common::tls::rbac::{bind, role, rule, subject};
use common::tls::Who;
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: None
  resources: [{group: "", resources: ["secrets"]}]
- level: RequestResponse
  namespaces: ["rr"]
- level: RequestResponse
  namespaces: ["rr-omit"]
  omitManagedFields: true
- level: Request
  namespaces: ["req"]
- level: Metadata
  omitStages: ["RequestReceived"]
"#;

struct Audited {
    s: Server,
    log: std::path::PathBuf,
}

fn server() -> Audited {
    let (s, log) = start_audited(2, POLICY);
    Audited { s, log }
}

impl Audited {
    /// Every complete line of the log (the writer may be mid-line).
    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad audit line {l}: {e}")))
            .collect()
    }

    /// The events of one request, once its last expected stage is logged
    /// (the writer flushes asynchronously).
    fn of(&self, audit_id: &str, last_stage: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mine: Vec<Value> = self
                .events()
                .into_iter()
                .filter(|e| e["auditID"] == audit_id)
                .collect();
            if mine.iter().any(|e| e["stage"] == last_stage) {
                return mine;
            }
            assert!(
                Instant::now() < deadline,
                "no {last_stage} for {audit_id}: {mine:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect()
}

/// A rule with omitManagedFields logs the objects without their
/// ownership records, objects and lists alike; other rules keep them.
#[test]
fn omit_managed_fields_leaves_ownership_out_of_logged_objects() {
    let a = server();
    let s = &a.s;
    let admin = s.client(&Who::cert("root", &["system:masters"]));
    let with_id = |id: &str| admin.clone_with("Audit-ID", id);
    for ns in ["rr", "rr-omit"] {
        namespace(s, ns);
        let (code, _, _) = with_id(&format!("{ns}-create")).raw(
            "POST",
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            configmap("c", json!({"a": "b"})).to_string().into_bytes(),
        );
        assert_eq!(code, 201);
        let (code, _, _) = with_id(&format!("{ns}-list")).raw(
            "GET",
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            Vec::new(),
        );
        assert_eq!(code, 200);
    }
    let created = |ns: &str| {
        a.of(&format!("{ns}-create"), "ResponseComplete")
            .pop()
            .unwrap()
    };
    let listed = |ns: &str| {
        a.of(&format!("{ns}-list"), "ResponseComplete")
            .pop()
            .unwrap()
    };

    let kept = created("rr");
    assert!(
        kept["responseObject"]["metadata"]["managedFields"].is_array(),
        "{kept}"
    );
    let kept = listed("rr");
    assert!(
        kept["responseObject"]["items"][0]["metadata"]["managedFields"].is_array(),
        "{kept}"
    );

    let omitted = created("rr-omit");
    assert_eq!(
        omitted["responseObject"]["metadata"]["name"], "c",
        "{omitted}"
    );
    assert!(
        omitted["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "{omitted}"
    );
    assert_eq!(
        omitted["requestObject"]["metadata"]["name"], "c",
        "{omitted}"
    );
    let omitted = listed("rr-omit");
    let item = &omitted["responseObject"]["items"][0]["metadata"];
    assert_eq!(item["name"], "c", "{omitted}");
    assert!(item.get("managedFields").is_none(), "{omitted}");
}

#[test]
fn audit_levels_and_stages() {
    let a = server();
    let s = &a.s;
    for ns in ["rr", "req", "meta"] {
        namespace(s, ns);
    }
    role(
        s,
        "meta",
        "cm-reader",
        vec![rule(&["get"], &[""], &["configmaps"])],
    );
    bind(
        s,
        "meta",
        "alice-reads",
        "Role",
        "cm-reader",
        vec![subject("User", "alice")],
    );
    let admin = s.client(&Who::cert("root", &["system:masters"]));
    let with_id = |id: &str| admin.clone_with("Audit-ID", id);

    // RequestResponse: both bodies, status, object, user, stages.
    let (code, headers, _) = with_id("rr-create").raw(
        "POST",
        "/api/v1/namespaces/rr/configmaps",
        configmap("c1", json!({"a": "b"})).to_string().into_bytes(),
    );
    assert_eq!(code, 201);
    assert_eq!(headers["audit-id"], "rr-create");
    let ev = a.of("rr-create", "ResponseComplete");
    assert_eq!(stages(&ev), ["RequestReceived", "ResponseComplete"]);
    let done = &ev[1];
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["verb"], "create");
    assert_eq!(done["requestURI"], "/api/v1/namespaces/rr/configmaps");
    assert_eq!(done["user"]["username"], "root");
    assert_eq!(
        done["user"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(done["sourceIPs"], json!(["127.0.0.1"]));
    assert_eq!(
        done["objectRef"],
        json!({"resource": "configmaps", "namespace": "rr", "apiVersion": "v1"})
    );
    assert_eq!(done["responseStatus"]["code"], 201);
    assert_eq!(done["requestObject"]["metadata"]["name"], "c1");
    assert_eq!(done["responseObject"]["metadata"]["name"], "c1");
    assert!(done["responseObject"]["metadata"]["uid"].is_string());
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    for ts in ["requestReceivedTimestamp", "stageTimestamp"] {
        assert!(
            chrono::DateTime::parse_from_rfc3339(done[ts].as_str().unwrap()).is_ok(),
            "{done}"
        );
    }

    // Request: the request body only.
    with_id("req-create").raw(
        "POST",
        "/api/v1/namespaces/req/configmaps",
        configmap("c2", json!({})).to_string().into_bytes(),
    );
    let done = a.of("req-create", "ResponseComplete").pop().unwrap();
    assert_eq!(done["level"], "Request");
    assert_eq!(done["requestObject"]["metadata"]["name"], "c2");
    assert!(done.get("responseObject").is_none(), "{done}");

    // Metadata, with RequestReceived omitted by the rule; as alice (by
    // impersonation) and refused.
    s.post(
        "/api/v1/namespaces/meta/configmaps",
        &configmap("c3", json!({})),
    );
    let (code, _, _) =
        with_id("meta-get").raw("GET", "/api/v1/namespaces/meta/configmaps/c3", vec![]);
    assert_eq!(code, 200);
    let ev = a.of("meta-get", "ResponseComplete");
    assert_eq!(stages(&ev), ["ResponseComplete"]);
    assert_eq!(ev[0]["level"], "Metadata");
    assert_eq!(ev[0]["objectRef"]["name"], "c3");
    assert!(ev[0].get("requestObject").is_none() && ev[0].get("responseObject").is_none());
    let (code, _, _) = with_id("meta-as-alice")
        .with_header("Impersonate-User", "alice")
        .raw("DELETE", "/api/v1/namespaces/meta/configmaps/c3", vec![]);
    assert_eq!(code, 403);
    let done = a.of("meta-as-alice", "ResponseComplete").pop().unwrap();
    assert_eq!(done["user"]["username"], "root");
    assert_eq!(done["impersonatedUser"]["username"], "alice");
    assert_eq!(done["responseStatus"]["code"], 403);
    assert_eq!(done["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );

    // A watch is long-running: ResponseStarted, then ResponseComplete when it ends.
    let (code, _, _) = with_id("meta-watch").raw(
        "GET",
        "/api/v1/namespaces/meta/configmaps?watch=1&timeoutSeconds=1",
        vec![],
    );
    assert_eq!(code, 200);
    assert_eq!(
        stages(&a.of("meta-watch", "ResponseComplete")),
        ["ResponseStarted", "ResponseComplete"]
    );

    // A failed credential is audited too.
    let (code, _, _) = s
        .client(&Who::token("nonsense"))
        .clone_with("Audit-ID", "bad-token")
        .raw("GET", "/api/v1/namespaces", vec![]);
    assert_eq!(code, 401);
    assert_eq!(
        a.of("bad-token", "ResponseComplete").pop().unwrap()["responseStatus"]["code"],
        401
    );

    // Level None: secrets and health checks leave no trace (but still
    // carry an Audit-ID).
    let (_, headers, _) =
        with_id("quiet-secret").raw("GET", "/api/v1/namespaces/meta/secrets", vec![]);
    assert_eq!(headers["audit-id"], "quiet-secret");
    with_id("quiet-health").raw("GET", "/healthz", vec![]);
    // A later request's event proves the writer caught up past them.
    with_id("marker").raw("GET", "/api/v1/namespaces/meta/configmaps", vec![]);
    a.of("marker", "ResponseComplete");
    let ids: Vec<Value> = a.events().iter().map(|e| e["auditID"].clone()).collect();
    assert!(!ids.contains(&json!("quiet-secret")) && !ids.contains(&json!("quiet-health")));
}
