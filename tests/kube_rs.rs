//! kube-rs against kubeshard: a kind declared with
//! `#[derive(CustomResource)]` installs its CRD from the derived schema,
//! then the typed client creates, reads, lists, patches (server-side
//! apply and status), watches and deletes its objects, and a kube-runtime
//! controller reconciles them — the way Rust operators run.

mod common;
use common::*;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "kube.rs.example.com",
    version = "v1",
    kind = "Gizmo",
    namespaced,
    status = "GizmoStatus",
    shortname = "gz",
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#
)]
pub struct GizmoSpec {
    size: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct GizmoStatus {
    seen: u32,
}

async fn client(s: &Server) -> Client {
    let config = kube::Config::new(s.base.parse().expect("server URL"));
    Client::try_from(config).expect("client")
}

#[test]
fn a_derived_custom_resource_works_with_kube_rs_and_its_runtime() {
    let s = Server::start(2);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = client(&s).await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        crds.create(&PostParams::default(), &Gizmo::crd())
            .await
            .expect("create the CRD");
        let established = await_condition(
            crds.clone(),
            "gizmos.kube.rs.example.com",
            conditions::is_crd_established(),
        );
        tokio::time::timeout(Duration::from_secs(10), established)
            .await
            .expect("established")
            .unwrap();

        let gizmos: Api<Gizmo> = Api::namespaced(client.clone(), "default");
        let created = gizmos
            .create(
                &PostParams::default(),
                &Gizmo::new(
                    "one",
                    GizmoSpec {
                        size: 3,
                        tags: vec!["a".into()],
                    },
                ),
            )
            .await
            .expect("create");
        assert_eq!(created.spec.size, 3);
        assert_eq!(gizmos.get("one").await.unwrap().spec.tags, ["a"]);

        // A wrong type in an apply fails in the typed merge, with kube's
        // 500 and message, seen as an API error.
        let bad = serde_json::json!({"apiVersion": "kube.rs.example.com/v1", "kind": "Gizmo",
            "metadata": {"name": "bad"}, "spec": {"size": "big"}});
        let err = gizmos
            .patch("bad", &PatchParams::apply("test"), &Patch::Apply(bad))
            .await
            .unwrap_err();
        match err {
            kube::Error::Api(status) => {
                assert_eq!(status.code, 500, "{status:?}");
                assert!(
                    status
                        .message
                        .ends_with(".spec.size: expected numeric (int or float), got string"),
                    "{status:?}"
                );
            }
            other => panic!("unexpected error {other:?}"),
        }

        // Server-side apply by a second manager, and a status patch.
        let applied = serde_json::json!({"apiVersion": "kube.rs.example.com/v1", "kind": "Gizmo",
            "metadata": {"name": "two"}, "spec": {"size": 5}});
        gizmos
            .patch(
                "two",
                &PatchParams::apply("kube-rs-test"),
                &Patch::Apply(applied),
            )
            .await
            .expect("apply");
        let status = serde_json::json!({"status": {"seen": 1}});
        let patched = gizmos
            .patch_status("two", &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();
        assert_eq!(patched.status.unwrap().seen, 1);
        let names: Vec<String> = gizmos
            .list(&ListParams::default())
            .await
            .unwrap()
            .iter()
            .map(|g| g.name_any())
            .collect();
        assert_eq!(names, ["one", "two"]);

        // A watcher sees the objects (its initial list) and a new one.
        let mut events = watcher(gizmos.clone(), watcher::Config::default())
            .applied_objects()
            .boxed();
        gizmos
            .create(
                &PostParams::default(),
                &Gizmo::new(
                    "three",
                    GizmoSpec {
                        size: 1,
                        tags: vec![],
                    },
                ),
            )
            .await
            .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 3 {
            let g = tokio::time::timeout(Duration::from_secs(10), events.next())
                .await
                .expect("event")
                .unwrap()
                .unwrap();
            if !seen.contains(&g.name_any()) {
                seen.push(g.name_any());
            }
        }
        seen.sort();
        assert_eq!(seen, ["one", "three", "two"]);

        // A controller writes every object's status from its spec.
        let reconciled = Controller::new(gizmos.clone(), watcher::Config::default())
            .run(
                |g: Arc<Gizmo>, api: Arc<Api<Gizmo>>| async move {
                    let status = serde_json::json!({"status": {"seen": g.spec.size}});
                    api.patch_status(
                        &g.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(status),
                    )
                    .await?;
                    Ok::<_, kube::Error>(Action::await_change())
                },
                |_, _, _| Action::requeue(Duration::from_millis(100)),
                Arc::new(gizmos.clone()),
            )
            .for_each(|_| async {});
        let settled = async {
            loop {
                let all = gizmos.list(&ListParams::default()).await.unwrap();
                if all
                    .iter()
                    .all(|g| g.status.as_ref().is_some_and(|s| s.seen == g.spec.size))
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            _ = reconciled => panic!("the controller stopped"),
            r = tokio::time::timeout(Duration::from_secs(20), settled) => r.expect("reconciled"),
        }

        gizmos
            .delete("one", &DeleteParams::default())
            .await
            .unwrap();
        crds.delete("gizmos.kube.rs.example.com", &DeleteParams::default())
            .await
            .unwrap();
        let gone = await_condition(
            crds,
            "gizmos.kube.rs.example.com",
            conditions::is_deleted(""),
        );
        tokio::time::timeout(Duration::from_secs(20), gone)
            .await
            .expect("CRD deleted")
            .unwrap();
    });
}

/// An aggregated API through kube-rs: discovery finds the extension
/// server's group, and a dynamic API lists and gets its objects through
/// kubeshard (as metrics readers written in Rust do).
#[test]
fn kube_rs_discovers_and_reads_an_aggregated_api() {
    use common::extension::{available, MetricsServer, APISERVICE};
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    let s = Server::start(1);
    let ext = MetricsServer::start(&s, &["node-a", "node-b"], &[]);
    ext.register(&s);
    eventually(40, "the APIService available", || {
        available(&s, APISERVICE).filter(|c| c["status"] == "True")
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = client(&s).await;
        let discovery = kube::Discovery::new(client.clone())
            .run()
            .await
            .expect("discovery");
        let group = discovery
            .get("metrics.k8s.io")
            .expect("metrics.k8s.io discovered");
        let (found, _) = group
            .recommended_kind("NodeMetrics")
            .expect("NodeMetrics discovered");
        assert_eq!(found.plural, "nodes");
        let gvk = GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "NodeMetrics");
        let ar = ApiResource::from_gvk_with_plural(&gvk, "nodes");
        let nodes: Api<DynamicObject> = Api::all_with(client, &ar);
        let list = nodes.list(&ListParams::default()).await.expect("list");
        let names: Vec<String> = list.items.iter().map(|n| n.name_any()).collect();
        assert_eq!(names, ["node-a", "node-b"]);
        let one = nodes.get("node-b").await.expect("get");
        assert_eq!(one.data["usage"]["cpu"], "250m");
        let missing = nodes.get("node-z").await.unwrap_err();
        assert!(
            matches!(&missing, kube::Error::Api(e) if e.code == 404),
            "{missing:?}"
        );
    });
}
