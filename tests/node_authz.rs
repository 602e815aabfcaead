//! The Node authorizer and NodeRestriction (`--authorization-mode
//! Node,RBAC --enable-admission-plugins NodeRestriction`): a kubelet's
//! identity reads what its pods use and nothing else, and writes only its
//! own Node, Lease, CSINode, mirror pods and its pods' status, evictions
//! and tokens.

mod common;
use common::tls::{Client, Who};
use common::*;
use serde_json::{json, Value};

fn server() -> Server {
    Server::start_with(
        2,
        &[
            "--authorization-mode",
            "Node,RBAC",
            "--enable-admission-plugins",
            "NodeRestriction",
        ],
    )
}

fn node(s: &Server, name: &str) -> Client {
    s.client(&Who::cert(
        &format!("system:node:{name}"),
        &["system:nodes"],
    ))
}

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or("")
}

/// A 403 whose message says `why`.
fn refused(code: u16, body: &Value, why: &str) {
    assert_eq!(code, 403, "{body}");
    assert!(message(body).contains(why), "{body}");
}

fn pod(name: &str, node: &str, secret: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "nodeName": node,
        "serviceAccountName": "robot",
        "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [
            {"name": "tls", "secret": {"secretName": secret}},
            {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "audience": "vault"}}]}}
        ]
    }})
}

/// ns "apps": secrets web-tls and db-pass, service account robot, pod web
/// on n1 using web-tls, pod db on n2 using db-pass.
fn cluster(s: &Server) {
    namespace(s, "apps");
    for secret in ["web-tls", "db-pass"] {
        let (code, body) = s.post(
            "/api/v1/namespaces/apps/secrets",
            &json!({"metadata": {"name": secret}, "stringData": {"k": "v"}}),
        );
        assert_eq!(code, 201, "{body}");
    }
    let (code, body) = s.post(
        "/api/v1/namespaces/apps/serviceaccounts",
        &json!({"metadata": {"name": "robot"}}),
    );
    assert_eq!(code, 201, "{body}");
    for (name, on, secret) in [("web", "n1", "web-tls"), ("db", "n2", "db-pass")] {
        let (code, body) = s.post("/api/v1/namespaces/apps/pods", &pod(name, on, secret));
        assert_eq!(code, 201, "{body}");
    }
}

#[test]
fn a_node_reads_only_what_its_pods_use() {
    let s = server();
    cluster(&s);
    let (n1, n2) = (node(&s, "n1"), node(&s, "n2"));
    assert_eq!(n1.get("/api/v1/namespaces/apps/secrets/web-tls").0, 200);
    let (code, body) = n1.get("/api/v1/namespaces/apps/secrets/db-pass");
    refused(
        code,
        &body,
        "no relationship found between node 'n1' and this object",
    );
    assert_eq!(n2.get("/api/v1/namespaces/apps/secrets/web-tls").0, 403);
    // A kubelet watches one Secret through a name selector; a list of all
    // is never allowed.
    assert_eq!(
        n1.get("/api/v1/namespaces/apps/secrets?fieldSelector=metadata.name%3Dweb-tls")
            .0,
        200
    );
    assert_eq!(n1.get("/api/v1/namespaces/apps/secrets").0, 403);
    assert_eq!(
        n1.get("/api/v1/namespaces/apps/serviceaccounts/robot").0,
        200
    );

    // Pods: through the node's own selector, or by name when bound to it.
    assert_eq!(
        n1.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").0,
        200
    );
    let (code, body) = n1.get("/api/v1/pods");
    refused(
        code,
        &body,
        "can only list/watch pods with spec.nodeName field selector",
    );
    assert_eq!(n1.get("/api/v1/namespaces/apps/pods/web").0, 200);
    assert_eq!(n1.get("/api/v1/namespaces/apps/pods/db").0, 403);

    // Its own Node only; the static rules for the rest.
    let (code, body) = n1.get("/api/v1/nodes");
    refused(code, &body, "cannot read all nodes");
    assert_eq!(n1.get("/api/v1/services").0, 200);
    assert_eq!(n1.get("/apis/apps/v1/deployments").0, 403);

    // The pod goes: so does the node's access to what it used.
    assert_eq!(
        s.delete("/api/v1/namespaces/apps/pods/web?gracePeriodSeconds=0")
            .0,
        200
    );
    s.wait_gone("/api/v1/namespaces/apps/pods/web");
    eventually(10, "n1 loses web-tls", || {
        (n1.get("/api/v1/namespaces/apps/secrets/web-tls").0 == 403).then_some(())
    });

    // A member of system:nodes whose name names no node reads nothing.
    let nameless = s.client(&Who::cert("kubelet", &["system:nodes"]));
    let (code, body) = nameless.get("/api/v1/namespaces/apps/secrets/db-pass");
    refused(code, &body, "unknown node for user \"kubelet\"");
}

#[test]
fn a_node_writes_only_its_own_objects() {
    let s = server();
    cluster(&s);
    let n1 = node(&s, "n1");
    // Its Node: created, labelled within kube's rules, taints kept.
    let (code, body) = n1.post(
        "/api/v1/nodes",
        &json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}),
    );
    assert_eq!(code, 201, "{body}");
    let node_uid = body["metadata"]["uid"].as_str().unwrap().to_string();
    let (code, body) = n1.post("/api/v1/nodes", &json!({"metadata": {"name": "n2"}}));
    refused(
        code,
        &body,
        "node \"n1\" is not allowed to modify node \"n2\"",
    );
    let (code, body) = n1.post(
        "/api/v1/nodes",
        &json!({"metadata": {"name": "n1", "labels": {"node-restriction.kubernetes.io/x": "y"}}}),
    );
    assert_eq!(code, 403, "{body}");
    let merge = |c: &Client, path: &str, patch: Value| {
        let (code, _, text) = c
            .typed(
                "PATCH",
                path,
                "application/merge-patch+json",
                patch.to_string().into_bytes(),
            )
            .unwrap();
        (
            code,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
        )
    };
    let (code, body) = merge(
        &n1,
        "/api/v1/nodes/n1",
        json!({"metadata": {"labels": {"example.com/rack": "r1"}}}),
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = merge(
        &n1,
        "/api/v1/nodes/n1",
        json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}}),
    );
    refused(
        code,
        &body,
        "is not allowed to modify labels: node-role.kubernetes.io/control-plane",
    );
    let (code, body) = merge(&n1, "/api/v1/nodes/n1", json!({"spec": {"taints": null}}));
    refused(code, &body, "is not allowed to modify taints");

    // Its Lease and CSINode.
    let lease = |name: &str| json!({"metadata": {"name": name}, "spec": {"holderIdentity": name}});
    assert_eq!(
        n1.post(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            &lease("n1")
        )
        .0,
        201
    );
    let (code, body) = n1.post(
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        &lease("n2"),
    );
    refused(
        code,
        &body,
        "can only access node lease with the same name as the requesting node",
    );
    let csinode = |name: &str| json!({"metadata": {"name": name}, "spec": {"drivers": []}});
    assert_eq!(
        n1.post("/apis/storage.k8s.io/v1/csinodes", &csinode("n1"))
            .0,
        201
    );
    assert_eq!(
        n1.post("/apis/storage.k8s.io/v1/csinodes", &csinode("n2"))
            .0,
        403
    );

    // Status of its own pods, without relabelling them.
    let status = json!({"status": {"phase": "Running"}});
    let (code, body) = merge(
        &n1,
        "/api/v1/namespaces/apps/pods/web/status",
        status.clone(),
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = merge(&n1, "/api/v1/namespaces/apps/pods/db/status", status);
    assert_eq!(code, 403, "{body}");
    let (code, body) = merge(
        &n1,
        "/api/v1/namespaces/apps/pods/web/status",
        json!({"metadata": {"labels": {"x": "y"}}}),
    );
    refused(code, &body, "cannot update labels through pod status");
    let (code, body) = merge(
        &n1,
        "/api/v1/namespaces/apps/pods/web",
        json!({"metadata": {"labels": {"x": "y"}}}),
    );
    // The authorizer already refuses a node's pod patch.
    refused(code, &body, "cannot patch resource \"pods\"");

    // Mirror pods: annotated, bound to it, owned by its Node, referencing
    // nothing it could not read anyway.
    let mirror = |name: &str, extra: Value| {
        let mut p = json!({"metadata": {"name": name,
                "annotations": {"kubernetes.io/config.mirror": "hash"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": node_uid, "controller": true}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}});
        if let (Some(spec), Some(more)) = (p["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(more.clone());
        }
        p
    };
    let (code, body) = n1.post(
        "/api/v1/namespaces/apps/pods",
        &mirror("static-web", json!({})),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = n1.post(
        "/api/v1/namespaces/apps/pods",
        &mirror(
            "static-db",
            json!({"volumes": [{"name": "s", "secret": {"secretName": "db-pass"}}]}),
        ),
    );
    // ServiceAccount runs before NodeRestriction, and says it first.
    refused(code, &body, "a mirror pod may not reference secrets");
    let plain = pod("sneaky", "n1", "web-tls");
    let (code, body) = n1.post("/api/v1/namespaces/apps/pods", &plain);
    refused(code, &body, "can only create mirror pods");

    // Tokens: bound to its own pod, for an audience that pod asks for.
    let uid_of = |pod: &str| {
        let (_, p) = s.get(&format!("/api/v1/namespaces/apps/pods/{pod}"));
        p["metadata"]["uid"].as_str().unwrap().to_string()
    };
    let web_uid = uid_of("web");
    let token = |audience: &str, pod: &str, uid: &str| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"audiences": [audience], "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}}})
    };
    let path = "/api/v1/namespaces/apps/serviceaccounts/robot/token";
    let (code, body) = n1.post(path, &token("vault", "web", &web_uid));
    assert_eq!(code, 201, "{body}");
    let (code, body) = n1.post(path, &token("elsewhere", "web", &web_uid));
    refused(
        code,
        &body,
        "audience \"elsewhere\" not found in pod spec volume",
    );
    let db_uid = uid_of("db");
    let (code, body) = n1.post(path, &token("vault", "db", &db_uid));
    assert_eq!(code, 403, "{body}");

    // Evictions of its own pods only.
    let eviction = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});
    let (code, body) = n1.post("/api/v1/namespaces/apps/pods/db/eviction", &eviction("db"));
    refused(
        code,
        &body,
        "node n1 can only evict pods with spec.nodeName set to itself",
    );
    let (code, body) = n1.post(
        "/api/v1/namespaces/apps/pods/web/eviction",
        &eviction("web"),
    );
    assert_eq!(code, 201, "{body}");

    // Its ResourceSlices stay its own: created for itself, never moved.
    let slice = |node: &str| {
        json!({"metadata": {"name": "n1-gpu"}, "spec": {"driver": "gpu.example.com", "nodeName": node,
               "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}})
    };
    let slices = "/apis/resource.k8s.io/v1/resourceslices";
    let (code, body) = n1.post(slices, &slice("n2"));
    refused(
        code,
        &body,
        "can only create ResourceSlice with the same NodeName",
    );
    let (code, body) = n1.post(slices, &slice("n1"));
    assert_eq!(code, 201, "{body}");
    let (code, body) = merge(
        &n1,
        &format!("{slices}/n1-gpu"),
        json!({"spec": {"nodeName": "n2"}}),
    );
    refused(
        code,
        &body,
        "can only update ResourceSlice with the same NodeName",
    );

    // Without the Node authorizer's identity, RBAC alone decides.
    let stranger = s.client(&Who::cert("system:node:n1", &[]));
    assert_eq!(
        stranger.get("/api/v1/namespaces/apps/secrets/web-tls").0,
        403
    );
}
