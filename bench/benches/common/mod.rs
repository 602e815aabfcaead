//! Shared fixtures of the micro-benchmarks: a realistic pod and its
//! catalog entry.

#![allow(dead_code)]

use kubeshard_core::catalog::{builtin_resources, ResourceInfo};
use serde_json::{json, Value};

/// The built-in catalog entry of `plural` in the core group.
pub fn info(plural: &str) -> ResourceInfo {
    builtin_resources()
        .into_iter()
        .find(|r| r.group.is_empty() && r.plural == plural)
        .unwrap_or_else(|| panic!("no built-in {plural}"))
}

/// A scheduled, running pod as a controller would write it (~2 KiB).
pub fn pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("web-7d4b9c8f6-{i:05}"),
            "namespace": "production",
            "uid": "0c8f7a7e-4f0b-4a8e-9d1e-3b7c2a1f9e10",
            "resourceVersion": "123456",
            "generateName": "web-7d4b9c8f6-",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {
                "app": "web",
                "tier": "frontend",
                "pod-template-hash": "7d4b9c8f6",
                "app.kubernetes.io/name": "web",
                "app.kubernetes.io/version": "1.2.3"
            },
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6",
                "uid": "5a1b2c3d-0000-4000-8000-000000000001", "controller": true,
                "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "nodeName": format!("node-{}", i % 100),
            "schedulerName": "default-scheduler",
            "restartPolicy": "Always",
            "serviceAccountName": "default",
            "containers": [{
                "name": "web",
                "image": "registry.example/web:1.2.3",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}, {"name": "LOG", "value": "info"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                                   "periodSeconds": 10},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent"
            }],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        },
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.12",
            "podIP": format!("10.244.{}.{}", i / 250 % 250, i % 250),
            "startTime": "2025-01-01T00:00:01Z",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2025-01-01T00:00:01Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:05Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2025-01-01T00:00:05Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}
            ],
            "containerStatuses": [{
                "name": "web", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example/web:1.2.3",
                "imageID": "registry.example/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "containerID": "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "state": {"running": {"startedAt": "2025-01-01T00:00:03Z"}}
            }]
        }
    })
}
