//! kube's bootstrap APF configuration, kept in place: the mandatory
//! objects (`exempt` and `catch-all`) always hold their specs; the
//! suggested ones are created when missing and kept to their specs while
//! `apf.kubernetes.io/autoupdate-spec` says so (or, without a readable
//! annotation, while nobody has edited them); objects the server once
//! created and no longer ships go when they carry the annotation. kube
//! runs this every minute; here it also runs as soon as a schema or level
//! changes, so a deleted bootstrap object is back within a moment.
//!
//! The same pass writes every FlowSchema's `Dangling` condition.

use super::config::{FlowSchema, PriorityLevel};
use crate::context::Api;
use crate::registry::{self, Addressed};
use crate::storage::{Storage, StorageResult};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::ApiError;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Objects {
    priority_levels: BTreeMap<String, Value>,
    flow_schemas: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct Bootstrap {
    mandatory: Objects,
    suggested: Objects,
}

static BOOTSTRAP: LazyLock<Bootstrap> = LazyLock::new(|| {
    serde_yaml::from_str(include_str!("bootstrap.yaml")).expect("bootstrap.yaml is well-formed")
});

fn object(kind: &str, name: &str, spec: &Value) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": kind,
        "metadata": {"name": name, "annotations": {AUTO_UPDATE: "true"}},
        "spec": spec,
    })
}

/// The mandatory levels as prototypes (no uid), for a server whose
/// stored ones are missing: requests are classified as if they were
/// there.
pub fn mandatory_levels() -> impl Iterator<Item = (&'static str, PriorityLevel)> {
    BOOTSTRAP
        .mandatory
        .priority_levels
        .iter()
        .map(|(name, spec)| {
            (
                name.as_str(),
                PriorityLevel::from_value(&object("PriorityLevelConfiguration", name, spec)),
            )
        })
}

pub fn mandatory_schemas() -> impl Iterator<Item = (&'static str, FlowSchema)> {
    BOOTSTRAP.mandatory.flow_schemas.iter().map(|(name, spec)| {
        (
            name.as_str(),
            FlowSchema::from_value(&object("FlowSchema", name, spec)),
        )
    })
}

struct Wanted {
    kind: &'static str,
    plural: &'static str,
    name: &'static str,
    spec: &'static Value,
    mandatory: bool,
}

fn wanted() -> Vec<Wanted> {
    let b = &*BOOTSTRAP;
    let mut out = Vec::new();
    // kube's order: suggested levels and schemas, then mandatory ones.
    for (objects, mandatory) in [(&b.suggested, false), (&b.mandatory, true)] {
        for (name, spec) in &objects.priority_levels {
            out.push(Wanted {
                kind: "PriorityLevelConfiguration",
                plural: "prioritylevelconfigurations",
                name,
                spec,
                mandatory,
            });
        }
        for (name, spec) in &objects.flow_schemas {
            out.push(Wanted {
                kind: "FlowSchema",
                plural: "flowschemas",
                name,
                spec,
                mandatory,
            });
        }
    }
    out
}

/// What the annotation says: Some(true/false) when it parses as a Go
/// bool.
fn annotation(obj: &Value) -> Option<bool> {
    let v = obj
        .pointer(&format!(
            "/metadata/annotations/{}",
            AUTO_UPDATE.replace('/', "~1")
        ))?
        .as_str()?;
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Specs equal once both are defaulted; the exempt level's shares and
/// lending are the operator's to tune.
fn same_spec(kind: &str, name: &str, want: &Value, have: &Value) -> bool {
    let defaulted = |spec: &Value| {
        let mut obj = json!({"spec": spec});
        kubeshard_core::defaults::apply(GROUP, kind, &mut obj);
        let mut spec = obj["spec"].take();
        if kind == "PriorityLevelConfiguration" && name == "exempt" {
            if let Some(e) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
                e.remove("nominalConcurrencyShares");
                e.remove("lendablePercent");
            }
        }
        spec
    };
    defaulted(want) == defaulted(have.get("spec").unwrap_or(&Value::Null))
}

/// One pass: create what is missing, restore specs that should be
/// restored, remove retired objects, write the Dangling conditions.
pub async fn ensure(api: &Api) -> Result<(), ApiError> {
    let levels = api.builtin(GROUP, "prioritylevelconfigurations")?;
    let schemas = api.builtin(GROUP, "flowschemas")?;
    for w in wanted() {
        let info = if w.plural == "flowschemas" {
            &schemas
        } else {
            &levels
        };
        ensure_one(api, info, &w).await?;
    }
    let shipped: Vec<&str> = wanted().iter().map(|w| w.name).collect();
    let mut existing_levels = Vec::new();
    for info in [&schemas, &levels] {
        for obj in list(api, info).await? {
            let name = kubeshard_core::meta::name(&obj).to_string();
            if info.plural == "prioritylevelconfigurations" {
                existing_levels.push(name.clone());
            }
            if !shipped.contains(&name.as_str()) && annotation(&obj) == Some(true) {
                match registry::delete_as(
                    api,
                    &registry::APF_PRODUCER,
                    info,
                    "",
                    &name,
                    &DeleteOptions::default(),
                )
                .await
                {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    for obj in list(api, &schemas).await? {
        mark_dangling(api, &schemas, &obj, &existing_levels).await?;
    }
    Ok(())
}

async fn list(api: &Api, info: &Arc<ResourceInfo>) -> Result<Vec<Value>, ApiError> {
    Ok(crate::storage::list_all(api.storage(), info)
        .await?
        .iter()
        .map(|o| o.to_value())
        .collect())
}

async fn ensure_one(api: &Api, info: &Arc<ResourceInfo>, w: &Wanted) -> Result<(), ApiError> {
    let have = api
        .storage()
        .get(&info.storage_key, "", w.name)
        .await
        .or_status()?
        .map(|o| o.to_value());
    let Some(have) = have else {
        return match registry::create_as(
            api,
            &registry::APF_PRODUCER,
            info,
            object(w.kind, w.name, w.spec),
        )
        .await
        {
            Ok(_) => Ok(()),
            // Someone else (another pass) created it meanwhile.
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        };
    };
    let auto = if w.mandatory {
        true
    } else {
        annotation(&have).unwrap_or_else(|| {
            have.pointer("/metadata/generation").and_then(Value::as_i64) == Some(1)
        })
    };
    let fix_annotation = annotation(&have) != Some(auto);
    let fix_spec = auto && !same_spec(w.kind, w.name, w.spec, &have);
    if !fix_annotation && !fix_spec {
        return Ok(());
    }
    let spec = w.spec.clone();
    let mutation: registry::Mutation = Box::new(move |obj: &mut Value| {
        if fix_spec {
            obj["spec"] = spec.clone();
        }
        if fix_annotation {
            let meta = obj
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| ApiError::internal("object without metadata"))?;
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            annotations[AUTO_UPDATE] = Value::String(auto.to_string());
        }
        Ok(true)
    });
    match registry::update_with(
        api,
        &registry::APF_PRODUCER,
        Addressed::object(info, "", w.name),
        mutation,
    )
    .await
    {
        Ok(_) => Ok(()),
        // Changed or deleted meanwhile: the next pass sees it.
        Err(e) if e.code == 409 || e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// kube's texts for the condition.
fn dangling(level: &str, exists: bool) -> (&'static str, &'static str, String) {
    if exists {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"),
        )
    } else {
        (
            "True",
            "NotFound",
            format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"),
        )
    }
}

async fn mark_dangling(
    api: &Api,
    info: &Arc<ResourceInfo>,
    schema: &Value,
    levels: &[String],
) -> Result<(), ApiError> {
    let level = schema
        .pointer("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (status, reason, message) = dangling(level, levels.iter().any(|l| l == level));
    let current = schema
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"));
    if current.is_some_and(|c| {
        c["status"] == status && c["reason"] == reason && c["message"] == message.as_str()
    }) {
        return Ok(());
    }
    let name = kubeshard_core::meta::name(schema).to_string();
    let condition = json!({
        "type": "Dangling", "status": status, "reason": reason, "message": message,
        "lastTransitionTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    let mutation: registry::Mutation = Box::new(move |obj: &mut Value| {
        let status = obj
            .as_object_mut()
            .ok_or_else(|| ApiError::internal("FlowSchema is not an object"))?
            .entry("status")
            .or_insert_with(|| json!({}));
        let conditions = status
            .as_object_mut()
            .ok_or_else(|| ApiError::internal("FlowSchema status is not an object"))?
            .entry("conditions")
            .or_insert_with(|| json!([]));
        let list = conditions
            .as_array_mut()
            .ok_or_else(|| ApiError::internal("conditions is not a list"))?;
        list.retain(|c| c["type"] != "Dangling");
        list.push(condition.clone());
        Ok(true)
    });
    match registry::update_with(
        api,
        &registry::APF_CONSUMER,
        Addressed::status(info, "", &name),
        mutation,
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 || e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_holds_kubes_objects() {
        let names: Vec<(&str, bool)> = wanted().iter().map(|w| (w.name, w.mandatory)).collect();
        assert_eq!(names.len(), 8 + 11);
        assert!(names.contains(&("exempt", true)));
        assert!(names.contains(&("catch-all", true)));
        assert!(names.contains(&("system-leader-election", false)));
        let levels: Vec<_> = mandatory_levels().collect();
        let catch_all = &levels.iter().find(|(n, _)| *n == "catch-all").unwrap().1;
        assert_eq!(catch_all.shares, 5);
        assert!(levels.iter().any(|(_, l)| l.exempt));
    }

    /// Which bootstrap schema a request lands in: kube's table.
    #[test]
    fn classification_table() {
        use crate::request::{Query, RequestInfo};
        use kubeshard_core::authn::UserInfo;
        let schemas = super::super::config::ordered(
            wanted()
                .iter()
                .filter(|w| w.kind == "FlowSchema")
                .map(|w| FlowSchema::from_value(&object(w.kind, w.name, w.spec)))
                .collect(),
        );
        let classify = |user: &str, groups: &[&str], method: http::Method, path: &str| {
            let u = UserInfo::new(user, groups);
            let q = Query::default();
            let info = RequestInfo::parse(&method, path, &q);
            schemas
                .iter()
                .find(|s| s.matches(&u, &info))
                .map(|s| s.name.to_string())
                .unwrap_or_default()
        };
        use http::Method as M;
        let authed = &["system:authenticated"][..];
        let table: &[(&str, &[&str], M, &str, &str)] = &[
            (
                "admin",
                &["system:masters", "system:authenticated"],
                M::GET,
                "/api/v1/pods",
                "exempt",
            ),
            ("alice", authed, M::GET, "/healthz", "probes"),
            (
                "system:anonymous",
                &["system:unauthenticated"],
                M::GET,
                "/readyz",
                "probes",
            ),
            // kube's prefix rule: `/healthz` also covers what is under it.
            ("alice", authed, M::GET, "/healthz/etcd", "probes"),
            ("alice", authed, M::GET, "/healthzz", "global-default"),
            (
                "system:kube-scheduler",
                authed,
                M::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
                "system-leader-election",
            ),
            (
                "system:kube-scheduler",
                authed,
                M::GET,
                "/api/v1/pods",
                "kube-scheduler",
            ),
            (
                "system:kube-controller-manager",
                authed,
                M::GET,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm",
                "system-leader-election",
            ),
            (
                "system:kube-controller-manager",
                authed,
                M::DELETE,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm",
                "kube-controller-manager",
            ),
            (
                "system:serviceaccount:kube-system:ctrl",
                &["system:serviceaccounts", "system:authenticated"],
                M::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
                "system-leader-election",
            ),
            (
                "system:serviceaccount:kube-system:ctrl",
                &["system:serviceaccounts", "system:authenticated"],
                M::GET,
                "/api/v1/nodes",
                "kube-system-service-accounts",
            ),
            (
                "system:serviceaccount:team:app",
                &["system:serviceaccounts", "system:authenticated"],
                M::GET,
                "/api/v1/namespaces/team/pods",
                "service-accounts",
            ),
            (
                "system:node:n1",
                &["system:nodes", "system:authenticated"],
                M::PUT,
                "/api/v1/nodes/n1/status",
                "system-node-high",
            ),
            (
                "system:node:n1",
                &["system:nodes", "system:authenticated"],
                M::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                "system-node-high",
            ),
            (
                "system:node:n1",
                &["system:nodes", "system:authenticated"],
                M::GET,
                "/api/v1/pods",
                "system-nodes",
            ),
            (
                "alice",
                authed,
                M::GET,
                "/api/v1/namespaces/a/pods",
                "global-default",
            ),
            ("alice", authed, M::GET, "/version", "global-default"),
            ("nobody", &[], M::GET, "/api/v1/pods", ""),
        ];
        for (user, groups, method, path, want) in table {
            assert_eq!(
                &classify(user, groups, method.clone(), path),
                want,
                "{user} {method} {path}"
            );
        }
    }

    #[test]
    fn annotation_reads_go_bools() {
        let with = |v: &str| json!({"metadata": {"annotations": {AUTO_UPDATE: v}}});
        assert_eq!(annotation(&with("true")), Some(true));
        assert_eq!(annotation(&with("F")), Some(false));
        assert_eq!(annotation(&with("yes")), None);
        assert_eq!(annotation(&json!({})), None);
    }
}
