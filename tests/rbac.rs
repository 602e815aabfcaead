//! Authorization over TLS: who can do what, with users from every
//! authenticator against Roles and ClusterRoles bound in a namespace and
//! cluster-wide, aggregated roles, resourceNames, subresources and
//! nonResourceURLs. Each cell's HTTP answer (200 / 401 / 403, or the
//! handler's own 404 once authorized) is checked, and `kubectl auth can-i`
//! must agree with it. Also escalation prevention, `can-i --list`, and the
//! authorizer modes.

mod common;
use common::tls::rbac::{bind, cluster_role, role, rule, subject};
use common::tls::{kubectl, service_account_token, Who};
use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const BOOTSTRAP_TOKEN: &str = "abcdef.0123456789abcdef";

/// The cluster every matrix cell runs against.
struct Fixture {
    s: Server,
    who: Vec<(&'static str, Who)>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bob-token,bob,bob-uid,ops\n").unwrap();
    let s = Server::start_with(
        2,
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--enable-bootstrap-token-auth",
        ],
    );
    std::mem::forget(dir); // the server reads the file only at start, but keep it for its lifetime
    namespace(&s, "ns-a");
    namespace(&s, "ns-b");
    let pod = |name: &str| json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    for ns in ["ns-a", "ns-b"] {
        assert_eq!(
            s.post(&format!("/api/v1/namespaces/{ns}/pods"), &pod("p1"))
                .0,
            201
        );
        for cm in ["cm-1", "cm-2"] {
            assert_eq!(
                s.post(
                    &format!("/api/v1/namespaces/{ns}/configmaps"),
                    &configmap(cm, json!({}))
                )
                .0,
                201
            );
        }
    }
    let robot = service_account_token(&s, "ns-a", "robot");
    use base64::Engine;
    let b64 = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
    s.post(
        "/api/v1/namespaces/kube-system/secrets",
        &json!({"metadata": {"name": "bootstrap-token-abcdef"}, "type": "bootstrap.kubernetes.io/token",
            "data": {"token-id": b64("abcdef"), "token-secret": b64("0123456789abcdef"),
                     "usage-bootstrap-authentication": b64("true")}}),
    );

    // alice (certificate, group dev): reads pods in ns-a, incl. logs; the
    // bootstrap "view" role in ns-b.
    role(
        &s,
        "ns-a",
        "pod-reader",
        vec![rule(&["get", "list"], &[""], &["pods", "pods/log"])],
    );
    bind(
        &s,
        "ns-a",
        "alice-reads",
        "Role",
        "pod-reader",
        vec![subject("User", "alice")],
    );
    bind(
        &s,
        "ns-b",
        "alice-views",
        "ClusterRole",
        "view",
        vec![subject("User", "alice")],
    );
    // bob (static token, group ops): one named configmap, everywhere.
    cluster_role(
        &s,
        "cm-one",
        json!({}),
        vec![
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm-1"]}),
        ],
    );
    bind(
        &s,
        "",
        "ops-cm-one",
        "ClusterRole",
        "cm-one",
        vec![subject("Group", "ops")],
    );
    // robot (service account): /metrics, and any status in ns-a.
    cluster_role(
        &s,
        "metrics-reader",
        json!({}),
        vec![json!({"verbs": ["get"], "nonResourceURLs": ["/metrics"]})],
    );
    bind(
        &s,
        "",
        "robot-metrics",
        "ClusterRole",
        "metrics-reader",
        vec![subject("ServiceAccount", "ns-a/robot")],
    );
    role(
        &s,
        "ns-a",
        "status-writer",
        vec![rule(&["get", "update"], &["*"], &["*/status"])],
    );
    bind(
        &s,
        "ns-a",
        "robot-status",
        "Role",
        "status-writer",
        vec![json!({"kind": "ServiceAccount", "name": "robot"})],
    );
    // The bootstrapper: an aggregated role, filled from a labelled part.
    let (code, agg) = s.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]}}),
    );
    assert_eq!(code, 201, "{agg}");
    cluster_role(
        &s,
        "agg-part",
        json!({"agg": "yes"}),
        vec![rule(&["list"], &["apps"], &["deployments"])],
    );
    bind(
        &s,
        "ns-b",
        "boot-agg",
        "ClusterRole",
        "agg",
        vec![subject("Group", "system:bootstrappers")],
    );
    wait_for(
        &s,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/agg",
        |r| r["rules"].as_array().is_some_and(|a| !a.is_empty()),
    );

    Fixture {
        who: vec![
            ("alice", Who::cert("alice", &["dev"])),
            ("bob", Who::token("bob-token")),
            ("robot", Who::token(&robot)),
            ("boot", Who::token(BOOTSTRAP_TOKEN)),
            ("anonymous", Who::Anonymous),
            ("stranger", Who::StrangerCert("alice".into())),
            (
                "garbled",
                Who::token("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"),
            ),
        ],
        s,
    }
}

/// Polls `path` (as admin) until `ready` holds: a readiness probe for
/// work a controller does after a write.
fn wait_for(s: &Server, path: &str, ready: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, v) = s.get(path);
        if ready(&v) {
            return;
        }
        assert!(Instant::now() < deadline, "{path} never became ready: {v}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One cell: who, method, path, expected status, and the `kubectl auth
/// can-i` arguments that ask the same question (None where kubectl
/// cannot ask: no identity, or a failed one).
struct Cell {
    who: &'static str,
    method: &'static str,
    path: &'static str,
    expect: u16,
    can_i: Option<&'static [&'static str]>,
}

const fn cell(
    who: &'static str,
    method: &'static str,
    path: &'static str,
    expect: u16,
    can_i: Option<&'static [&'static str]>,
) -> Cell {
    Cell {
        who,
        method,
        path,
        expect,
        can_i,
    }
}

const MATRIX: &[Cell] = &[
    // alice: Role in ns-a (namespaced), bootstrap aggregated "view" in ns-b.
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1",
        200,
        Some(&["get", "pods/p1", "-n", "ns-a"]),
    ),
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-a/pods",
        200,
        Some(&["list", "pods", "-n", "ns-a"]),
    ),
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-b/pods/p1",
        200,
        Some(&["get", "pods/p1", "-n", "ns-b"]),
    ),
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-b/configmaps/cm-2",
        200,
        Some(&["get", "configmaps/cm-2", "-n", "ns-b"]),
    ),
    cell(
        "alice",
        "DELETE",
        "/api/v1/namespaces/ns-a/pods/p1",
        403,
        Some(&["delete", "pods/p1", "-n", "ns-a"]),
    ),
    cell(
        "alice",
        "DELETE",
        "/api/v1/namespaces/ns-b/pods/p1",
        403,
        Some(&["delete", "pods/p1", "-n", "ns-b"]),
    ),
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-a/configmaps/cm-1",
        403,
        Some(&["get", "configmaps/cm-1", "-n", "ns-a"]),
    ),
    cell(
        "alice",
        "GET",
        "/api/v1/pods",
        403,
        Some(&["list", "pods", "-A"]),
    ),
    // Authorized for pods/log: the pod is not scheduled, so its log is
    // empty (200), as kube answers.
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1/log",
        200,
        Some(&["get", "pods/p1", "--subresource", "log", "-n", "ns-a"]),
    ),
    cell(
        "alice",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1/status",
        403,
        Some(&["get", "pods/p1", "--subresource", "status", "-n", "ns-a"]),
    ),
    cell("alice", "GET", "/metrics", 403, Some(&["get", "/metrics"])),
    cell("alice", "GET", "/healthz", 200, Some(&["get", "/healthz"])),
    cell("alice", "GET", "/apis", 200, Some(&["get", "/apis"])),
    // bob: a ClusterRole limited by resourceNames, bound to his group.
    cell(
        "bob",
        "GET",
        "/api/v1/namespaces/ns-a/configmaps/cm-1",
        200,
        Some(&["get", "configmaps/cm-1", "-n", "ns-a"]),
    ),
    cell(
        "bob",
        "GET",
        "/api/v1/namespaces/ns-b/configmaps/cm-1",
        200,
        Some(&["get", "configmaps/cm-1", "-n", "ns-b"]),
    ),
    cell(
        "bob",
        "GET",
        "/api/v1/namespaces/ns-a/configmaps/cm-2",
        403,
        Some(&["get", "configmaps/cm-2", "-n", "ns-a"]),
    ),
    cell(
        "bob",
        "GET",
        "/api/v1/namespaces/ns-a/configmaps",
        403,
        Some(&["list", "configmaps", "-n", "ns-a"]),
    ),
    cell(
        "bob",
        "PUT",
        "/api/v1/namespaces/ns-a/configmaps/cm-1",
        403,
        Some(&["update", "configmaps/cm-1", "-n", "ns-a"]),
    ),
    cell(
        "bob",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1",
        403,
        Some(&["get", "pods/p1", "-n", "ns-a"]),
    ),
    // robot: nonResourceURLs cluster-wide, "*/status" in its namespace.
    cell("robot", "GET", "/metrics", 200, Some(&["get", "/metrics"])),
    cell(
        "robot",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1/status",
        200,
        Some(&["get", "pods/p1", "--subresource", "status", "-n", "ns-a"]),
    ),
    cell(
        "robot",
        "GET",
        "/api/v1/namespaces/ns-b/pods/p1/status",
        403,
        Some(&["get", "pods/p1", "--subresource", "status", "-n", "ns-b"]),
    ),
    cell(
        "robot",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1",
        403,
        Some(&["get", "pods/p1", "-n", "ns-a"]),
    ),
    cell(
        "robot",
        "GET",
        "/metrics/slis",
        403,
        Some(&["get", "/metrics/slis"]),
    ),
    // The bootstrap token's group: an aggregated ClusterRole in ns-b.
    cell(
        "boot",
        "GET",
        "/apis/apps/v1/namespaces/ns-b/deployments",
        200,
        Some(&["list", "deployments.apps", "-n", "ns-b"]),
    ),
    cell(
        "boot",
        "GET",
        "/apis/apps/v1/namespaces/ns-a/deployments",
        403,
        Some(&["list", "deployments.apps", "-n", "ns-a"]),
    ),
    cell(
        "boot",
        "GET",
        "/apis/apps/v1/namespaces/ns-b/deployments/d",
        403,
        Some(&["get", "deployments.apps/d", "-n", "ns-b"]),
    ),
    // Anonymous: the public-info paths only.
    cell("anonymous", "GET", "/healthz", 200, None),
    cell("anonymous", "GET", "/version", 200, None),
    cell("anonymous", "GET", "/api", 403, None),
    cell(
        "anonymous",
        "GET",
        "/api/v1/namespaces/ns-a/pods",
        403,
        None,
    ),
    // Credentials that fail: 401 whatever the path.
    cell("stranger", "GET", "/healthz", 401, None),
    cell(
        "stranger",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1",
        401,
        None,
    ),
    cell("garbled", "GET", "/healthz", 401, None),
    cell(
        "garbled",
        "GET",
        "/api/v1/namespaces/ns-a/pods/p1",
        401,
        None,
    ),
];

#[test]
fn who_can_do_what() {
    let f = fixture();
    let s = &f.s;
    let mut failures = Vec::new();
    for c in MATRIX {
        let who = &f.who.iter().find(|(n, _)| *n == c.who).unwrap().1;
        let body = match c.method {
            // A PUT sends the object back unchanged.
            "PUT" => Some(s.get(c.path).1),
            _ => None,
        };
        let (code, resp) = s.client(who).send(c.method, c.path, body.as_ref());
        if code != c.expect {
            failures.push(format!(
                "{} {} {}: got {code}, want {}: {resp}",
                c.who, c.method, c.path, c.expect
            ));
        }
        if code == 403 {
            let msg = resp["message"].as_str().unwrap_or_default();
            if !msg.contains(" cannot ") || resp["reason"] != "Forbidden" {
                failures.push(format!(
                    "{} {}: 403 without kube's message: {resp}",
                    c.who, c.path
                ));
            }
        }
        if let Some(args) = c.can_i {
            let kubeconfig = s.kubeconfig(who);
            let mut full = vec!["auth", "can-i"];
            full.extend_from_slice(args);
            let (exit, out, err) = kubectl(&kubeconfig, &full);
            let allowed = c.expect != 403;
            let want = if allowed { "yes" } else { "no" };
            if out.trim() != want || (exit == 0) != allowed {
                failures.push(format!(
                    "{}: kubectl {full:?} said {out:?} (exit {exit}, {err}), want {want}",
                    c.who
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} cells disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn bindings_take_effect_at_once_on_every_shard() {
    let s = Server::start(4);
    namespace(&s, "live");
    let dave = s.client(&Who::cert("dave", &[]));
    let path = "/api/v1/namespaces/live/configmaps";
    assert_eq!(dave.get(path).0, 403);
    role(
        &s,
        "live",
        "cm-lister",
        vec![rule(&["list"], &[""], &["configmaps"])],
    );
    bind(
        &s,
        "live",
        "dave-lists",
        "Role",
        "cm-lister",
        vec![subject("User", "dave")],
    );
    // The very next request, on any executor, sees the binding.
    for _ in 0..20 {
        assert_eq!(s.client(&Who::cert("dave", &[])).get(path).0, 200);
    }
    assert_eq!(
        s.delete("/apis/rbac.authorization.k8s.io/v1/namespaces/live/rolebindings/dave-lists")
            .0,
        200
    );
    // Revocation is eventually visible on every executor (informer lag is
    // microseconds; poll rather than sleep).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if (0..8).all(|_| s.client(&Who::cert("dave", &[])).get(path).0 == 403) {
            break;
        }
        assert!(Instant::now() < deadline, "revoked binding still honoured");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn escalation_is_refused() {
    let s = Server::start(2);
    namespace(&s, "team");
    let erin = Who::cert("erin", &[]);
    let c = s.client(&erin);
    // erin may manage roles and bindings in "team" and read pods there.
    role(
        &s,
        "team",
        "rbac-manager",
        vec![
            rule(
                &["create", "update", "get"],
                &["rbac.authorization.k8s.io"],
                &["roles", "rolebindings"],
            ),
            rule(&["get", "list"], &[""], &["pods"]),
        ],
    );
    bind(
        &s,
        "team",
        "erin-manages",
        "Role",
        "rbac-manager",
        vec![subject("User", "erin")],
    );
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles";
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings";
    // A role within what she holds: fine.
    let (code, body) = c.post(
        roles,
        &json!({"metadata": {"name": "readers"}, "rules": [rule(&["get"], &[""], &["pods"])]}),
    );
    assert_eq!(code, 201, "{body}");
    // One that grants more: refused, naming what is missing.
    let (code, body) = c.post(roles, &json!({"metadata": {"name": "deleters"}, "rules": [rule(&["get", "delete"], &[""], &["pods"])]}));
    assert_eq!(code, 403, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.contains("attempting to grant RBAC permissions not currently held"),
        "{msg}"
    );
    assert!(
        msg.contains(r#"Resources:["pods"]"#) && msg.contains(r#"Verbs:["delete"]"#),
        "{msg}"
    );
    // Nor may she widen an existing role by update.
    let (_, mut readers) = s.get(&format!("{roles}/readers"));
    readers["rules"][0]["verbs"] = json!(["*"]);
    assert_eq!(c.put(&format!("{roles}/readers"), &readers).0, 403);
    // Binding a role she holds is fine; binding cluster-admin is not.
    let rb = |name: &str, kind: &str, role: &str| {
        json!({"metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
               "subjects": [subject("User", "frank")]})
    };
    assert_eq!(
        c.post(bindings, &rb("frank-reads", "Role", "readers")).0,
        201
    );
    let (code, body) = c.post(bindings, &rb("frank-admin", "ClusterRole", "cluster-admin"));
    assert_eq!(code, 403, "{body}");
    // Nor by creating it through server-side apply or a PUT.
    let applied = rb("frank-admin", "ClusterRole", "cluster-admin");
    let (code, _, body) = c
        .typed(
            "PATCH",
            &format!("{bindings}/frank-admin?fieldManager=erin"),
            "application/apply-patch+yaml",
            applied.to_string().into_bytes(),
        )
        .unwrap();
    assert_eq!(code, 403, "{body}");
    let (code, body) = c.put(&format!("{bindings}/frank-admin"), &applied);
    assert!(code == 403 || code == 404, "{code}: {body}");
    assert_eq!(s.get(&format!("{bindings}/frank-admin")).0, 404);
    // With `bind` on that one role she may bind it, and only that one.
    role(
        &s,
        "team",
        "binder",
        vec![
            json!({"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["admin"]}),
        ],
    );
    bind(
        &s,
        "team",
        "erin-binds",
        "Role",
        "binder",
        vec![subject("User", "erin")],
    );
    assert_eq!(
        c.post(bindings, &rb("frank-ns-admin", "ClusterRole", "admin"))
            .0,
        201
    );
    assert_eq!(
        c.post(bindings, &rb("frank-admin", "ClusterRole", "cluster-admin"))
            .0,
        403
    );
    // With `escalate` on roles she may write any role.
    role(
        &s,
        "team",
        "escalator",
        vec![rule(
            &["escalate"],
            &["rbac.authorization.k8s.io"],
            &["roles"],
        )],
    );
    bind(
        &s,
        "team",
        "erin-escalates",
        "Role",
        "escalator",
        vec![subject("User", "erin")],
    );
    assert_eq!(c.post(roles, &json!({"metadata": {"name": "deleters"}, "rules": [rule(&["delete"], &[""], &["pods"])]})).0, 201);
    // An aggregated ClusterRole needs cluster-admin powers.
    role(&s, "team", "unused", vec![]);
    let (code, body) = s.client(&Who::cert("gina", &[])).post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"metadata": {"name": "sneaky"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}),
    );
    assert_eq!(code, 403, "{body}");
    // A binding's roleRef never changes, even for an admin.
    let (_, mut b) = s.get(&format!("{bindings}/frank-reads"));
    b["roleRef"]["name"] = json!("deleters");
    let (code, body) = s.put(&format!("{bindings}/frank-reads"), &b);
    assert_eq!(code, 422, "{body}");
}

#[test]
fn rbac_objects_are_validated() {
    let s = Server::start(1);
    namespace(&s, "v");
    let (code, body) = s.post(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/v/roles",
        &json!({"metadata": {"name": "bad"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "rules[0].nonResourceURLs"
    );
    let (code, body) = s.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &json!({"metadata": {"name": "bad"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
    );
    assert_eq!(code, 422, "{body}");
}

#[test]
fn kubectl_can_i_list_and_authorizer_modes() {
    let s = Server::start(1);
    namespace(&s, "ns-a");
    role(
        &s,
        "ns-a",
        "pod-reader",
        vec![rule(&["get", "list"], &[""], &["pods"])],
    );
    bind(
        &s,
        "ns-a",
        "hank-reads",
        "Role",
        "pod-reader",
        vec![subject("User", "hank")],
    );
    let kc = s.kubeconfig(&Who::cert("hank", &[]));
    let (code, out, err) = kubectl(&kc, &["auth", "can-i", "--list", "-n", "ns-a"]);
    assert_eq!(code, 0, "{err}");
    let pods = out
        .lines()
        .find(|l| l.starts_with("pods "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(pods.contains("[get list]"), "{pods}");
    assert!(
        out.lines()
            .any(|l| l.contains("selfsubjectaccessreviews.authorization.k8s.io")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.contains("/healthz")), "{out}");
    let (_, out, _) = kubectl(&kc, &["auth", "can-i", "--list", "-n", "other"]);
    assert!(!out.lines().any(|l| l.starts_with("pods ")), "{out}");

    // AlwaysDeny refuses everyone but system:masters; AlwaysAllow first
    // allows all.
    let deny = Server::start_with(1, &["--authorization-mode", "AlwaysDeny"]);
    let (code, body) = deny.client(&Who::cert("x", &[])).get("/healthz");
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("Everything is forbidden."),
        "{body}"
    );
    assert_eq!(
        deny.client(&Who::cert("root", &["system:masters"]))
            .get("/api/v1/pods")
            .0,
        200
    );
    let allow = Server::start_with(1, &["--authorization-mode", "AlwaysAllow,RBAC"]);
    assert_eq!(allow.client(&Who::Anonymous).get("/api/v1/pods").0, 200);
    let (code, out, _) = kubectl(
        &allow.kubeconfig(&Who::cert("x", &[])),
        &["auth", "can-i", "delete", "nodes"],
    );
    assert_eq!((code, out.trim()), (0, "yes"));
}

#[test]
fn access_reviews_for_other_subjects() {
    let s = Server::start(1);
    namespace(&s, "ns-a");
    role(
        &s,
        "ns-a",
        "pod-reader",
        vec![rule(&["get"], &[""], &["pods"])],
    );
    bind(
        &s,
        "ns-a",
        "g-reads",
        "Role",
        "pod-reader",
        vec![subject("Group", "readers")],
    );
    let sar = |spec: Value| {
        s.post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}),
        )
    };
    let (code, r) = sar(
        json!({"user": "ivy", "groups": ["readers"], "resourceAttributes": {"namespace": "ns-a", "verb": "get", "resource": "pods"}}),
    );
    assert_eq!(code, 201, "{r}");
    assert_eq!(r["status"]["allowed"], true);
    assert!(
        r["status"]["reason"]
            .as_str()
            .unwrap()
            .contains(r#"RoleBinding "g-reads""#),
        "{r}"
    );
    let (_, r) = sar(
        json!({"user": "ivy", "resourceAttributes": {"namespace": "ns-a", "verb": "get", "resource": "pods"}}),
    );
    assert_eq!(r["status"]["allowed"], false);
    assert_eq!(
        sar(json!({"resourceAttributes": {"verb": "get", "resource": "pods"}})).0,
        422
    );
    assert_eq!(sar(json!({"user": "ivy"})).0, 422);
    // The local variant takes its namespace from the URL.
    let (code, r) = s.post(
        "/apis/authorization.k8s.io/v1/namespaces/ns-a/localsubjectaccessreviews",
        &json!({"spec": {"groups": ["readers"], "resourceAttributes": {"verb": "get", "resource": "pods"}}}),
    );
    assert_eq!(code, 201, "{r}");
    assert_eq!(r["status"]["allowed"], true);
    assert_eq!(r["metadata"]["namespace"], "ns-a");
    // A user without rights to review others may not.
    let (code, _) = s.client(&Who::cert("ivy", &["readers"])).post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &json!({"spec": {"user": "x", "resourceAttributes": {"verb": "get", "resource": "pods"}}}),
    );
    assert_eq!(code, 403);
}
