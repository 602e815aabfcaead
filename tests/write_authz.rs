//! Every write path is authorized for what it really does: a PUT or an
//! apply that creates needs `create`, and a write of a binding or a role
//! is checked for escalation whichever path creates it (POST, PUT,
//! apply, with or without dry run). Each user holds one verb (plus get);
//! the table runs every path against a binding, a role, an ordinary kind
//! and a kind that allows create on update, and checks both the answer
//! and that a refused write stored nothing.

mod common;
use common::tls::rbac::{bind, cluster_role, rule, subject};
use common::tls::{Client, Who};
use common::*;
use serde_json::{json, Value};

const NS: &str = "team";
const RBAC: &str = "rbac.authorization.k8s.io";

/// A kind under test: where it lives and the body of one named object.
struct Kind {
    name: &'static str,
    collection: String,
    body: fn(&str) -> Value,
    /// The apply configuration of `body` (apiVersion and kind included).
    api_version: &'static str,
    kind: &'static str,
}

fn kinds() -> Vec<Kind> {
    vec![
        Kind {
            name: "clusterrolebinding",
            collection: format!("/apis/{RBAC}/v1/clusterrolebindings"),
            body: |n| {
                json!({"metadata": {"name": n},
                    "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
                    "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "mallory"}]})
            },
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRoleBinding",
        },
        Kind {
            name: "rolebinding",
            collection: format!("/apis/{RBAC}/v1/namespaces/{NS}/rolebindings"),
            body: |n| {
                json!({"metadata": {"name": n},
                    "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "admin"},
                    "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "mallory"}]})
            },
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
        },
        Kind {
            name: "clusterrole",
            collection: format!("/apis/{RBAC}/v1/clusterroles"),
            body: |n| {
                json!({"metadata": {"name": n},
                    "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
            },
            api_version: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
        },
        Kind {
            name: "configmap",
            collection: format!("/api/v1/namespaces/{NS}/configmaps"),
            body: |n| json!({"metadata": {"name": n}, "data": {"k": "v"}}),
            api_version: "v1",
            kind: "ConfigMap",
        },
        Kind {
            name: "endpoints",
            collection: format!("/api/v1/namespaces/{NS}/endpoints"),
            body: |n| json!({"metadata": {"name": n}, "subsets": []}),
            api_version: "v1",
            kind: "Endpoints",
        },
    ]
}

impl Kind {
    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.collection)
    }

    fn object(&self, name: &str) -> Value {
        let mut o = (self.body)(name);
        o["apiVersion"] = json!(self.api_version);
        o["kind"] = json!(self.kind);
        o
    }

    fn creates_on_update(&self) -> bool {
        self.name != "configmap"
    }

    fn guarded(&self) -> bool {
        self.name.contains("role")
    }

    /// The object every write of an existing one targets: a binding of
    /// somebody else, a role that grants little.
    fn existing(&self, name: &str) -> Value {
        let mut o = (self.body)(name);
        if let Some(s) = o.get_mut("subjects") {
            *s = json!([{"kind": "User", "apiGroup": RBAC, "name": "bystander"}]);
        }
        if let Some(r) = o.get_mut("rules") {
            *r = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]);
        }
        o
    }

    /// Whether the stored object was changed the attacker's way.
    fn escalated(&self, stored: &Value) -> bool {
        stored["subjects"].to_string().contains("mallory")
            || stored["rules"].to_string().contains("\"*\"")
    }
}

/// One way to write an object.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    Post,
    Put,
    JsonPatch,
    MergePatch,
    StrategicPatch,
    Apply,
}

impl Path {
    fn verb(self) -> &'static str {
        match self {
            Path::Post => "create",
            Path::Put => "update",
            _ => "patch",
        }
    }

    /// (method, path suffix, content type, body) for `name` of `kind`.
    fn request(
        self,
        kind: &Kind,
        name: &str,
        dry: bool,
    ) -> (&'static str, String, &'static str, Vec<u8>) {
        let q = |extra: &str| {
            let mut q = vec![];
            if dry {
                q.push("dryRun=All".to_string());
            }
            if !extra.is_empty() {
                q.push(extra.to_string());
            }
            if q.is_empty() {
                String::new()
            } else {
                format!("?{}", q.join("&"))
            }
        };
        let obj = kind.object(name);
        // What each patch changes: the subjects of a binding (to the
        // writer), the rules of a role, the data otherwise.
        let change = match kind.name {
            "clusterrolebinding" | "rolebinding" => {
                json!({"subjects": [{"kind": "User", "apiGroup": RBAC, "name": "mallory"}]})
            }
            "clusterrole" => {
                json!({"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
            }
            "endpoints" => json!({"metadata": {"labels": {"changed": "yes"}}}),
            _ => json!({"data": {"k": "changed"}}),
        };
        match self {
            Path::Post => (
                "POST",
                format!("{}{}", kind.collection, q("")),
                "application/json",
                obj.to_string().into_bytes(),
            ),
            Path::Put => (
                "PUT",
                format!("{}{}", kind.path(name), q("")),
                "application/json",
                obj.to_string().into_bytes(),
            ),
            Path::JsonPatch => {
                // The same change as one operation (inside metadata for
                // a metadata change).
                let (mut path, mut value) = (String::new(), &change);
                while let Some((k, v)) = value.as_object().and_then(|m| m.iter().next()) {
                    path.push('/');
                    path.push_str(k);
                    value = v;
                    if k != "metadata" {
                        break;
                    }
                }
                let ops = json!([{"op": "add", "path": path, "value": value}]);
                (
                    "PATCH",
                    format!("{}{}", kind.path(name), q("")),
                    "application/json-patch+json",
                    ops.to_string().into_bytes(),
                )
            }
            Path::MergePatch => (
                "PATCH",
                format!("{}{}", kind.path(name), q("")),
                "application/merge-patch+json",
                change.to_string().into_bytes(),
            ),
            Path::StrategicPatch => (
                "PATCH",
                format!("{}{}", kind.path(name), q("")),
                "application/strategic-merge-patch+json",
                change.to_string().into_bytes(),
            ),
            Path::Apply => (
                "PATCH",
                format!(
                    "{}{}",
                    kind.path(name),
                    q("fieldManager=attacker&force=true")
                ),
                "application/apply-patch+yaml",
                obj.to_string().into_bytes(),
            ),
        }
    }
}

const PATHS: [Path; 6] = [
    Path::Post,
    Path::Put,
    Path::JsonPatch,
    Path::MergePatch,
    Path::StrategicPatch,
    Path::Apply,
];

/// The answer a user holding only `verb` (and get) must get for `path`
/// on `kind`, when the object exists or not.
fn expected(kind: &Kind, path: Path, verb: &str, exists: bool) -> u16 {
    if path.verb() != verb {
        return 403; // the request's own verb is refused
    }
    match (path, exists) {
        // Writing a binding or role that grants everything escalates
        // (checked before the name clash).
        (Path::Post, _) if kind.guarded() => 403,
        (Path::Post, true) => 409,
        (Path::Post, false) => 201,
        // Creating through an update needs `create`, which no one-verb
        // user holds; kinds that never create on update answer 404.
        (Path::Put, false) if kind.creates_on_update() => 403,
        (Path::Apply, false) => 403,
        (_, false) => 404,
        // Changing a binding's subjects or a role's rules to everything
        // escalates; other kinds update.
        (_, true) if kind.guarded() => 403,
        (_, true) => 200,
    }
}

fn table(shards: usize) {
    let s = Server::start(shards);
    namespace(&s, NS);
    let mut clients: Vec<(&str, Client)> = Vec::new();
    for verb in ["create", "update", "patch"] {
        let role = format!("only-{verb}");
        cluster_role(
            &s,
            &role,
            json!({}),
            vec![rule(
                &[verb, "get"],
                &["", RBAC],
                &[
                    "configmaps",
                    "endpoints",
                    "clusterrolebindings",
                    "rolebindings",
                    "clusterroles",
                ],
            )],
        );
        let user = format!("user-{verb}");
        bind(
            &s,
            "",
            &role,
            "ClusterRole",
            &role,
            vec![subject("User", &user)],
        );
        clients.push((verb, s.client(&Who::cert(&user, &[]))));
    }
    let admin = s.client(&Who::cert("root", &["system:masters"]));
    let mut checked = 0;
    for kind in kinds() {
        let existing = format!("{}-existing", kind.name);
        let (code, body) = admin.post(&kind.collection, &kind.existing(&existing));
        assert_eq!(code, 201, "{body}");
        for (verb, client) in &clients {
            for path in PATHS {
                for dry in [false, true] {
                    for exists in [false, true] {
                        let name = if exists {
                            existing.clone()
                        } else {
                            format!("{}-new-{verb}-{:?}-{dry}", kind.name, path).to_lowercase()
                        };
                        let (method, url, ct, body) = path.request(&kind, &name, dry);
                        let (code, _, text) = client.typed(method, &url, ct, body).unwrap();
                        let want = expected(&kind, path, verb, exists);
                        assert_eq!(
                            code, want,
                            "{verb}-only user, {path:?} of {} {name} (dry run {dry}): {text}",
                            kind.name
                        );
                        if want == 403 {
                            let st: Value = serde_json::from_str(&text).unwrap();
                            assert_eq!(st["reason"], "Forbidden", "{text}");
                        }
                        if !exists && (code != 201 || dry) {
                            // A refused or dry create stored nothing.
                            assert_eq!(admin.get(&kind.path(&name)).0, 404, "{name} was stored");
                        }
                        if exists {
                            let (_, now) = admin.get(&kind.path(&existing));
                            assert!(!kind.escalated(&now), "{path:?} changed {existing}: {now}");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 5 * 3 * 6 * 2 * 2);
    // None of it made anybody more powerful.
    for (_, c) in &clients {
        assert_eq!(c.get("/api/v1/namespaces/kube-system/secrets").0, 403);
    }
}

each_shard_count!(one_verb_users_on_every_write_path, table);

/// The create check and the escalation check are separate: a user who may
/// create and patch bindings gets one by apply when he holds what the
/// role grants, and is refused one for a role he does not hold.
#[test]
fn apply_that_creates_a_binding_is_checked_for_escalation() {
    let s = Server::start(2);
    namespace(&s, NS);
    cluster_role(
        &s,
        "binder",
        json!({}),
        vec![
            rule(
                &["create", "patch", "get"],
                &[RBAC],
                &["clusterrolebindings"],
            ),
            rule(&["get", "list"], &[""], &["configmaps"]),
        ],
    );
    cluster_role(
        &s,
        "cm-reader",
        json!({}),
        vec![rule(&["get", "list"], &[""], &["configmaps"])],
    );
    bind(
        &s,
        "",
        "binder",
        "ClusterRole",
        "binder",
        vec![subject("User", "bea")],
    );
    let bea = s.client(&Who::cert("bea", &[]));
    let apply = |name: &str, role: &str| {
        let cfg = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "bea"}]});
        bea.typed(
            "PATCH",
            &format!("/apis/{RBAC}/v1/clusterrolebindings/{name}?fieldManager=bea"),
            "application/apply-patch+yaml",
            cfg.to_string().into_bytes(),
        )
        .unwrap()
    };
    let (code, _, text) = apply("fine", "cm-reader");
    assert_eq!(code, 201, "{text}");
    let (code, _, text) = apply("escalating", "cluster-admin");
    assert_eq!(code, 403, "{text}");
    assert!(
        text.contains("attempting to grant RBAC permissions not currently held"),
        "{text}"
    );
    assert_eq!(
        s.get(&format!("/apis/{RBAC}/v1/clusterrolebindings/escalating"))
            .0,
        404
    );
}

/// A PUT that creates is refused without `create`, with kube's message;
/// with both verbs it creates (201).
#[test]
fn put_that_creates_needs_create() {
    let s = Server::start(1);
    namespace(&s, NS);
    cluster_role(
        &s,
        "ep-update",
        json!({}),
        vec![rule(&["update"], &[""], &["endpoints"])],
    );
    cluster_role(
        &s,
        "ep-create",
        json!({}),
        vec![rule(&["create"], &[""], &["endpoints"])],
    );
    bind(
        &s,
        "",
        "u1",
        "ClusterRole",
        "ep-update",
        vec![subject("User", "alice"), subject("User", "carol")],
    );
    bind(
        &s,
        "",
        "u2",
        "ClusterRole",
        "ep-create",
        vec![subject("User", "carol")],
    );
    let ep = |n: &str| json!({"metadata": {"name": n}, "subsets": []});
    let path = |n: &str| format!("/api/v1/namespaces/{NS}/endpoints/{n}");
    let (code, body) = s
        .client(&Who::cert("alice", &[]))
        .put(&path("e1"), &ep("e1"));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "endpoints \"e1\" is forbidden: User \"alice\" cannot create resource \"endpoints\" in API group \"\" in the namespace \"team\""
    );
    assert_eq!(s.get(&path("e1")).0, 404);
    let (code, body) = s
        .client(&Who::cert("carol", &[]))
        .put(&path("e2"), &ep("e2"));
    assert_eq!(code, 201, "{body}");
}
