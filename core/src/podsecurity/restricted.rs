//! The restricted level's own checks (some replace baseline ones).

use super::baseline::{added_capabilities, bad_seccomp};
use super::{
    containers_phrase, context, fail, join_quote, name, plural, setters, Failure, PodView,
};
use serde_json::Value;
use std::collections::BTreeSet;

pub fn allow_privilege_escalation(pod: &PodView<'_>, minor: u32) -> Option<Failure> {
    if pod.is_windows() && minor >= 25 {
        return None;
    }
    let who: Vec<&str> = pod
        .containers()
        .filter(|c| context(c, "allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false))
        .map(name)
        .collect();
    if who.is_empty() {
        return None;
    }
    fail(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&who)
        ),
    )
}

pub fn capabilities(pod: &PodView<'_>, minor: u32) -> Option<Failure> {
    if pod.is_windows() && minor >= 25 {
        return None;
    }
    let no_drop: Vec<&str> = pod
        .containers()
        .filter(|c| {
            !context(c, "capabilities")
                .and_then(|k| k.get("drop"))
                .and_then(Value::as_array)
                .is_some_and(|d| d.iter().any(|x| x == "ALL"))
        })
        .map(name)
        .collect();
    let (adders, caps) = added_capabilities(pod, &["NET_BIND_SERVICE"]);
    let mut parts = Vec::new();
    if !no_drop.is_empty() {
        parts.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&no_drop)
        ));
    }
    if !adders.is_empty() {
        let caps: Vec<String> = caps.into_iter().collect();
        parts.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adders),
            join_quote(&caps)
        ));
    }
    (!parts.is_empty())
        .then(|| fail("unrestricted capabilities", parts.join("; ")))
        .flatten()
}

const ALLOWED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

const NAMED_VOLUMES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

pub fn volumes(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let mut who = Vec::new();
    let mut types = BTreeSet::new();
    for v in pod
        .spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(m) = v.as_object() else { continue };
        let sources: Vec<&String> = m
            .iter()
            .filter(|(k, val)| *k != "name" && !val.is_null())
            .map(|(k, _)| k)
            .collect();
        if sources
            .iter()
            .any(|s| ALLOWED_VOLUMES.contains(&s.as_str()))
        {
            continue;
        }
        let kind = sources
            .iter()
            .find(|s| NAMED_VOLUMES.contains(&s.as_str()))
            .map_or("unknown", |s| s.as_str());
        who.push(name(v));
        types.insert(kind.to_string());
    }
    if who.is_empty() {
        return None;
    }
    let types: Vec<String> = types.into_iter().collect();
    fail(
        "restricted volume types",
        format!(
            "{} {} {} restricted volume {} {}",
            plural(who.len(), "volume", "volumes"),
            join_quote(&who),
            plural(who.len(), "uses", "use"),
            plural(types.len(), "type", "types"),
            join_quote(&types)
        ),
    )
}

pub fn run_as_non_root(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let value = |v: Option<&Value>| v.and_then(Value::as_bool);
    let pod_value = value(pod.pod_context("runAsNonRoot"));
    let false_setters: Vec<&str> = pod
        .containers()
        .filter(|c| value(context(c, "runAsNonRoot")) == Some(false))
        .map(name)
        .collect();
    if pod_value == Some(false) || !false_setters.is_empty() {
        return fail(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters(pod_value == Some(false), &false_setters)
            ),
        );
    }
    if pod_value == Some(true) {
        return None;
    }
    let unset: Vec<&str> = pod
        .containers()
        .filter(|c| value(context(c, "runAsNonRoot")).is_none())
        .map(name)
        .collect();
    if unset.is_empty() {
        return None;
    }
    fail(
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_phrase(&unset)
        ),
    )
}

pub fn run_as_user(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let root = |v: Option<&Value>| v.and_then(Value::as_i64) == Some(0);
    let pod_root = root(pod.pod_context("runAsUser"));
    let who: Vec<&str> = pod
        .containers()
        .filter(|c| root(context(c, "runAsUser")))
        .map(name)
        .collect();
    if !pod_root && who.is_empty() {
        return None;
    }
    fail(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters(pod_root, &who)),
    )
}

pub fn seccomp(pod: &PodView<'_>, minor: u32) -> Option<Failure> {
    if pod.is_windows() && minor >= 25 {
        return None;
    }
    if let Some(bad) = bad_seccomp(pod) {
        return Some(bad);
    }
    let valid = |v: Option<&Value>| {
        v.and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| matches!(t, "RuntimeDefault" | "Localhost"))
    };
    if valid(pod.pod_context("seccompProfile")) {
        return None;
    }
    let unset: Vec<&str> = pod
        .containers()
        .filter(|c| !valid(context(c, "seccompProfile")))
        .map(name)
        .collect();
    if unset.is_empty() {
        return None;
    }
    fail(
        "seccompProfile",
        format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers_phrase(&unset)
        ),
    )
}
