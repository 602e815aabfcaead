use super::*;
use serde_json::json;

fn node_user(name: &str) -> UserInfo {
    UserInfo {
        name: format!("system:node:{name}"),
        groups: vec![NODES_GROUP.into(), "system:authenticated".into()],
        ..Default::default()
    }
}

fn graph() -> NodeGraph {
    let mut g = NodeGraph::default();
    g.upsert_pod(&json!({
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"nodeName": "n1", "serviceAccountName": "builder",
                 "volumes": [{"name": "s", "secret": {"secretName": "tls"}},
                             {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}
    }));
    g.upsert_volume(&json!({"metadata": {"name": "pv1"},
                            "spec": {"claimRef": {"namespace": "ns", "name": "data"}}}));
    g
}

fn ask(node: &str, attrs: Attributes) -> Verdict {
    authorize(&node_user(node), &attrs, &graph(), node_rules()).expect("a node")
}

fn res(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    Attributes::resource(verb, group, resource, ns, name)
}

#[test]
fn only_nodes_are_judged() {
    let alice = UserInfo {
        name: "system:node:n1".into(),
        ..Default::default()
    };
    let a = res("get", "", "secrets", "ns", "tls");
    assert!(authorize(&alice, &a, &graph(), node_rules()).is_none());
    let nameless = UserInfo {
        name: "kubelet".into(),
        groups: vec![NODES_GROUP.into()],
        ..Default::default()
    };
    assert_eq!(
        authorize(&nameless, &a, &graph(), node_rules()),
        Some(Err("unknown node for user \"kubelet\"".into()))
    );
}

#[test]
fn secrets_only_of_the_nodes_own_pods() {
    assert_eq!(ask("n1", res("get", "", "secrets", "ns", "tls")), Ok(()));
    assert_eq!(
        ask("n2", res("get", "", "secrets", "ns", "tls")),
        Err("no relationship found between node 'n2' and this object".into())
    );
    assert!(ask("n1", res("get", "", "secrets", "ns", "other")).is_err());
    assert_eq!(
        ask("n1", res("list", "", "secrets", "ns", "")),
        Err("No Object name found".into())
    );
    assert_eq!(
        ask("n1", res("delete", "", "secrets", "ns", "tls")),
        Err("can only read resources of this type".into())
    );
    assert_eq!(
        ask("n1", res("get", "", "persistentvolumeclaims", "ns", "data")),
        Ok(())
    );
    assert_eq!(
        ask("n1", res("get", "", "persistentvolumes", "", "pv1")),
        Ok(())
    );
    assert!(ask("n2", res("get", "", "persistentvolumes", "", "pv1")).is_err());
    assert_eq!(
        ask(
            "n1",
            res("create", "", "serviceaccounts", "ns", "builder").with_subresource("token")
        ),
        Ok(())
    );
    assert!(ask(
        "n2",
        res("create", "", "serviceaccounts", "ns", "builder").with_subresource("token")
    )
    .is_err());
}

#[test]
fn pods_through_a_node_name_selector() {
    let mut watch = res("watch", "", "pods", "", "");
    watch.field_selector = "spec.nodeName=n1".into();
    assert_eq!(ask("n1", watch.clone()), Ok(()));
    assert_eq!(
        ask("n2", watch),
        Err("can only list/watch pods with spec.nodeName field selector".into())
    );
    assert_eq!(ask("n1", res("get", "", "pods", "ns", "web")), Ok(()));
    assert!(ask("n2", res("get", "", "pods", "ns", "web")).is_err());
    assert_eq!(
        ask(
            "n2",
            res("patch", "", "pods", "ns", "web").with_subresource("status")
        ),
        Ok(()),
        "NodeRestriction narrows status writes"
    );
}

#[test]
fn own_node_lease_and_csinode_only() {
    assert_eq!(ask("n1", res("get", "", "nodes", "", "n1")), Ok(()));
    assert_eq!(
        ask("n1", res("get", "", "nodes", "", "n2")),
        Err("node 'n1' cannot read 'n2', only its own Node object".into())
    );
    assert_eq!(
        ask("n1", res("list", "", "nodes", "", "")),
        Err("node 'n1' cannot read all nodes, only its own Node object".into())
    );
    let lease = |verb, ns, name| res(verb, "coordination.k8s.io", "leases", ns, name);
    assert_eq!(ask("n1", lease("update", "kube-node-lease", "n1")), Ok(()));
    assert!(ask("n1", lease("update", "kube-node-lease", "n2")).is_err());
    assert!(ask("n1", lease("get", "default", "n1")).is_err());
    assert_eq!(
        ask("n1", res("patch", "storage.k8s.io", "csinodes", "", "n1")),
        Ok(())
    );
    assert!(ask("n1", res("patch", "storage.k8s.io", "csinodes", "", "n2")).is_err());
}

#[test]
fn everything_else_by_the_static_node_rules() {
    assert_eq!(ask("n1", res("watch", "", "services", "", "")), Ok(()));
    assert_eq!(ask("n1", res("create", "", "events", "ns", "")), Ok(()));
    assert_eq!(
        ask(
            "n1",
            res(
                "create",
                "certificates.k8s.io",
                "certificatesigningrequests",
                "",
                ""
            )
        ),
        Ok(())
    );
    assert_eq!(
        ask("n1", res("list", "apps", "deployments", "", "")),
        Err(String::new())
    );
    assert_eq!(
        ask("n1", res("delete", "", "services", "ns", "x")),
        Err(String::new())
    );
}
