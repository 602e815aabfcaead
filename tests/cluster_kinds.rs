//! The storage, networking and scheduling kinds (issue 17's second
//! slice): one valid manifest per kind goes through create, get, list,
//! watch, update, each patch type and delete, with kube's defaults,
//! initial status and kubectl's columns.

mod common;
use common::*;
use serde_json::{json, Value};

struct Kind {
    path: &'static str,
    manifest: Value,
    /// (JSON pointer, value kube defaults or sets on create)
    defaulted: Vec<(&'static str, Value)>,
    columns: Vec<&'static str>,
}

fn kinds() -> Vec<Kind> {
    vec![
        Kind {
            path: "/api/v1/namespaces/default/persistentvolumeclaims",
            manifest: json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
            defaulted: vec![
                ("/spec/volumeMode", json!("Filesystem")),
                ("/status", json!({"phase": "Pending"})),
            ],
            columns: vec![
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode",
            ],
        },
        Kind {
            path: "/api/v1/persistentvolumes",
            manifest: json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "hostPath": {"path": "/tmp/pv1"}}}),
            defaulted: vec![
                ("/spec/persistentVolumeReclaimPolicy", json!("Retain")),
                ("/status", json!({"phase": "Pending"})),
            ],
            columns: vec![
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age",
                "VolumeMode",
            ],
        },
        Kind {
            path: "/apis/storage.k8s.io/v1/storageclasses",
            manifest: json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "example.com/disk"}),
            defaulted: vec![
                ("/reclaimPolicy", json!("Delete")),
                ("/volumeBindingMode", json!("Immediate")),
            ],
            columns: vec![
                "Name",
                "Provisioner",
                "ReclaimPolicy",
                "VolumeBindingMode",
                "AllowVolumeExpansion",
                "Age",
            ],
        },
        Kind {
            path: "/apis/storage.k8s.io/v1/csidrivers",
            manifest: json!({"metadata": {"name": "disk.example.com"}, "spec": {}}),
            defaulted: vec![
                ("/spec/attachRequired", json!(true)),
                ("/spec/volumeLifecycleModes", json!(["Persistent"])),
            ],
            columns: vec![
                "Name",
                "AttachRequired",
                "PodInfoOnMount",
                "StorageCapacity",
                "TokenRequests",
                "RequiresRepublish",
                "Modes",
                "Age",
            ],
        },
        Kind {
            path: "/apis/storage.k8s.io/v1/csinodes",
            manifest: json!({"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "disk.example.com", "nodeID": "n1"}]}}),
            defaulted: vec![],
            columns: vec!["Name", "Drivers", "Age"],
        },
        Kind {
            path: "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
            manifest: json!({"metadata": {"name": "cap"}, "storageClassName": "fast", "capacity": "10Gi"}),
            defaulted: vec![],
            columns: vec!["Name", "StorageClassName", "Capacity"],
        },
        Kind {
            path: "/apis/storage.k8s.io/v1/volumeattachments",
            manifest: json!({"metadata": {"name": "va"}, "spec": {"attacher": "disk.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv1"}}}),
            defaulted: vec![("/status", json!({"attached": false}))],
            columns: vec!["Name", "Attacher", "PV", "Node", "Attached", "Age"],
        },
        Kind {
            path: "/apis/storage.k8s.io/v1/volumeattributesclasses",
            manifest: json!({"metadata": {"name": "gold"}, "driverName": "disk.example.com", "parameters": {"iops": "3000"}}),
            defaulted: vec![],
            columns: vec!["Name", "DriverName", "Age"],
        },
        Kind {
            path: "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            manifest: json!({"metadata": {"name": "web"}, "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
            defaulted: vec![
                ("/status", json!({"loadBalancer": {}})),
                ("/metadata/generation", json!(1)),
            ],
            columns: vec!["Name", "Class", "Hosts", "Address", "Ports", "Age"],
        },
        Kind {
            path: "/apis/networking.k8s.io/v1/ingressclasses",
            manifest: json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
            defaulted: vec![],
            columns: vec!["Name", "Controller", "Parameters", "Age"],
        },
        Kind {
            path: "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            manifest: json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"ports": [{"port": 5432}]}]}}),
            defaulted: vec![
                ("/spec/policyTypes", json!(["Ingress"])),
                ("/spec/ingress/0/ports/0/protocol", json!("TCP")),
            ],
            columns: vec!["Name", "Pod-Selector", "Age"],
        },
        Kind {
            path: "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            manifest: json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
            defaulted: vec![("/ports/0/protocol", json!("TCP"))],
            columns: vec!["Name", "AddressType", "Ports", "Endpoints", "Age"],
        },
        Kind {
            path: "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            manifest: json!({"metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
            defaulted: vec![(
                "/status",
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
            )],
            columns: vec![
                "Name",
                "Min Available",
                "Max Unavailable",
                "Allowed Disruptions",
                "Age",
            ],
        },
        Kind {
            path: "/apis/scheduling.k8s.io/v1/priorityclasses",
            manifest: json!({"metadata": {"name": "high"}, "value": 1000}),
            defaulted: vec![("/preemptionPolicy", json!("PreemptLowerPriority"))],
            columns: vec!["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
        },
        Kind {
            path: "/apis/node.k8s.io/v1/runtimeclasses",
            manifest: json!({"metadata": {"name": "gvisor"}, "handler": "runsc"}),
            defaulted: vec![],
            columns: vec!["Name", "Handler", "Age"],
        },
        Kind {
            path: "/api/v1/namespaces/default/limitranges",
            manifest: json!({"metadata": {"name": "limits"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}),
            defaulted: vec![],
            columns: vec!["Name", "Created At"],
        },
        Kind {
            path: "/api/v1/namespaces/default/resourcequotas",
            manifest: json!({"metadata": {"name": "quota"}, "spec": {"hard": {"pods": "10"}}}),
            defaulted: vec![("/status", json!({}))],
            columns: vec!["Name", "Age", "Request", "Limit"],
        },
    ]
}

#[test]
fn every_kind_goes_through_every_verb() {
    let s = Server::start(2);
    for k in kinds() {
        let path = k.path;
        verbs::every_verb(&s, path, &k.manifest, |created| {
            for (pointer, want) in &k.defaulted {
                assert_eq!(
                    created.pointer(pointer),
                    Some(want),
                    "{path}: {pointer} in {created}"
                );
            }
            let (_, got) = table(&s, path);
            assert_eq!(got, k.columns, "{path}");
        });
    }
}

#[test]
fn printer_cells_are_kubectls() {
    let s = Server::start(1);
    let cells = |path: &str| -> Value { table(&s, path).0["rows"][0]["cells"].clone() };
    s.post(
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "example.com/disk", "allowVolumeExpansion": true}),
    );
    assert_eq!(
        cells("/apis/storage.k8s.io/v1/storageclasses/fast")
            .as_array()
            .unwrap()[..5],
        json!([
            "fast (default)",
            "example.com/disk",
            "Delete",
            "Immediate",
            true
        ])
        .as_array()
        .unwrap()[..]
    );
    s.post(
        "/api/v1/persistentvolumes",
        &json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadOnlyMany", "ReadWriteOnce"], "hostPath": {"path": "/x"},
               "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "fast"}}),
    );
    let pv = cells("/api/v1/persistentvolumes/pv1");
    assert_eq!(
        pv.as_array().unwrap()[..7],
        json!([
            "pv1",
            "5Gi",
            "RWO,ROX",
            "Retain",
            "Pending",
            "default/data",
            "fast"
        ])
        .as_array()
        .unwrap()[..]
    );
    s.post(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        &json!({"metadata": {"name": "web"}, "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}}}),
    );
    assert_eq!(
        cells("/apis/policy/v1/namespaces/default/poddisruptionbudgets/web")
            .as_array()
            .unwrap()[..4],
        json!(["web", "N/A", "25%", 0]).as_array().unwrap()[..]
    );
    s.post(
        "/api/v1/namespaces/default/resourcequotas",
        &json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10", "limits.cpu": "4"}}}),
    );
    s.patch(
        "/api/v1/namespaces/default/resourcequotas/q/status",
        "application/merge-patch+json",
        &json!({"status": {"hard": {"pods": "10", "limits.cpu": "4"}, "used": {"pods": "3"}}}),
    );
    let q = cells("/api/v1/namespaces/default/resourcequotas/q");
    assert_eq!(
        [&q[2], &q[3]],
        [&json!("pods: 3/10"), &json!("limits.cpu: 0/4")]
    );
}

/// A claim's spec is fixed once created; a bound claim may grow, not
/// shrink below its capacity (kube's 422s).
#[test]
fn a_claims_spec_changes_only_as_kube_allows() {
    let s = Server::start(1);
    // Claims grow only when their class allows it (PersistentVolumeClaimResize).
    let (code, sc) = s.post(
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "expandable"}, "provisioner": "example.com/p",
            "allowVolumeExpansion": true}),
    );
    assert_eq!(code, 201, "{sc}");
    let pvcs = "/api/v1/namespaces/default/persistentvolumeclaims";
    let (code, c) = s.post(
        pvcs,
        &json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "storageClassName": "expandable",
            "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert_eq!(code, 201, "{c}");
    let path = format!("{pvcs}/data");
    let merge = "application/merge-patch+json";
    let (code, st) = s.patch(
        &path,
        merge,
        &json!({"spec": {"accessModes": ["ReadWriteMany"]}}),
    );
    assert_eq!(code, 422, "{st}");
    assert!(st["message"]
        .as_str()
        .unwrap()
        .contains("spec is immutable after creation"));
    // The binder names the volume; then the claim is bound and may grow.
    let (code, c) = s.patch(&path, merge, &json!({"spec": {"volumeName": "pv-1"}}));
    assert_eq!(code, 200, "{c}");
    let (code, c) = s.patch(
        &format!("{path}/status"),
        merge,
        &json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
    );
    assert_eq!(code, 200, "{c}");
    let (code, c) = s.patch(
        &path,
        merge,
        &json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}),
    );
    assert_eq!(code, 200, "{c}");
    let (code, st) = s.patch(
        &path,
        merge,
        &json!({"spec": {"resources": {"requests": {"storage": "512Mi"}}}}),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(
        st["details"]["causes"][0]["field"],
        "spec.resources.requests.storage"
    );
}
