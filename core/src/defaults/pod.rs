//! Pod and pod template defaults (kube's SetDefaults_Pod, _PodSpec,
//! _Container, _ContainerPort, _Probe, _HTTPGetAction, _Volume and the
//! volume sources' file modes).

use super::util::{child, each, set, str_of};
use serde_json::{json, Value};

/// File mode kube gives secret, configMap, downwardAPI and projected volumes.
const DEFAULT_MODE: i64 = 0o644;

/// A whole pod: the spec defaults plus what only pods get (service links,
/// requests from limits, host ports on the host network).
pub fn pod(obj: &mut Value) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    pod_spec(spec);
    set(spec, "enableServiceLinks", true);
    for list in ["containers", "initContainers"] {
        for c in each(spec, list) {
            requests_from_limits(c);
        }
    }
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for list in ["containers", "initContainers"] {
            for c in each(spec, list) {
                for port in each(c, "ports") {
                    if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                        if let Some(p) = port.get("containerPort").cloned() {
                            port["hostPort"] = p;
                        }
                    }
                }
            }
        }
    }
}

/// A pod template (`spec.template` of workloads, PodTemplate.template).
pub fn template(template: Option<&mut Value>) {
    if let Some(spec) = template.and_then(|t| child(t, "spec")) {
        pod_spec(spec);
    }
}

fn pod_spec(spec: &mut Value) {
    set(spec, "dnsPolicy", "ClusterFirst");
    set(spec, "restartPolicy", "Always");
    set(spec, "securityContext", json!({}));
    set(spec, "terminationGracePeriodSeconds", 30);
    set(spec, "schedulerName", "default-scheduler");
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in each(spec, list) {
            container(c);
        }
    }
    for v in each(spec, "volumes") {
        volume(v);
    }
}

fn container(c: &mut Value) {
    let policy = pull_policy(str_of(c, "image").unwrap_or(""));
    set(c, "imagePullPolicy", policy);
    set(c, "terminationMessagePath", "/dev/termination-log");
    set(c, "terminationMessagePolicy", "File");
    // A struct Go always prints, empty or not.
    set(c, "resources", json!({}));
    for port in each(c, "ports") {
        set(port, "protocol", "TCP");
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
            set(p, "timeoutSeconds", 1);
            set(p, "periodSeconds", 10);
            set(p, "successThreshold", 1);
            set(p, "failureThreshold", 3);
            http_get(p);
        }
    }
    if let Some(lifecycle) = c.get_mut("lifecycle").filter(|l| l.is_object()) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lifecycle.get_mut(hook).filter(|h| h.is_object()) {
                http_get(h);
            }
        }
    }
    for env in each(c, "env") {
        if let Some(field_ref) = env.pointer_mut("/valueFrom/fieldRef") {
            set(field_ref, "apiVersion", "v1");
        }
    }
}

fn http_get(handler: &mut Value) {
    if let Some(get) = handler.get_mut("httpGet").filter(|g| g.is_object()) {
        set(get, "path", "/");
        set(get, "scheme", "HTTP");
    }
}

/// `:latest` or no tag (and no digest) pulls every time; anything else
/// only when missing.
pub(super) fn pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    match (tag, digest) {
        (Some("latest"), _) => "Always",
        (None, None) if !image.is_empty() => "Always",
        _ => "IfNotPresent",
    }
}

/// Requests default to limits for resources given only a limit.
fn requests_from_limits(c: &mut Value) {
    let Some(limits) = c
        .pointer("/resources/limits")
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    let Some(resources) = child(c, "resources") else {
        return;
    };
    let Some(requests) = child(resources, "requests").and_then(Value::as_object_mut) else {
        return;
    };
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

const SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn volume(v: &mut Value) {
    let Some(m) = v.as_object() else {
        return;
    };
    if !SOURCES
        .iter()
        .any(|s| m.get(*s).is_some_and(|x| !x.is_null()))
    {
        v["emptyDir"] = json!({});
        return;
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).filter(|s| s.is_object()) {
            set(s, "defaultMode", DEFAULT_MODE);
            if source == "downwardAPI" {
                for item in each(s, "items") {
                    if let Some(f) = item.get_mut("fieldRef").filter(|f| f.is_object()) {
                        set(f, "apiVersion", "v1");
                    }
                }
            }
        }
    }
    if let Some(h) = v.get_mut("hostPath").filter(|h| h.is_object()) {
        set(h, "type", "");
    }
    if let Some(i) = v.get_mut("iscsi").filter(|i| i.is_object()) {
        set(i, "iscsiInterface", "default");
    }
}
