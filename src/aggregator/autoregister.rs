//! Local APIServices kept in step with the catalog, as kube's
//! autoregistration does: one per served group version, named
//! `<version>.<group>` (`v1.` for the core group), with kube's
//! priorities; built-in groups marked `onstart` (written at start and
//! left afterwards), CRD groups `true` (added and removed with their
//! CRDs). APIServices without the label are the cluster's and never
//! touched.

use super::{priority, AUTOMANAGED};
use crate::context::Api;
use crate::registry::{self, Addressed, APISERVER};
use kubeshard_core::catalog::{CatalogSnapshot, ResourceInfo};
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::{DeleteOptions, Preconditions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The APIService's name for a group version.
pub fn name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The local APIServices the catalog calls for, by name.
pub fn wanted(cat: &CatalogSnapshot) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for group in cat.groups() {
        for version in cat.versions(&group) {
            let (gp, vp) = priority::local(&group, &version);
            let managed = if priority::is_builtin(&group) {
                "onstart"
            } else {
                "true"
            };
            out.insert(
                name(&group, &version),
                json!({
                    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": name(&group, &version), "labels": {AUTOMANAGED: managed}},
                    "spec": {"group": group, "version": version,
                             "groupPriorityMinimum": gp, "versionPriority": vp},
                }),
            );
        }
    }
    out
}

/// At start, before the server is ready: the local APIServices written
/// and said to be available, so none of it happens under clients' feet
/// (and a restart writes nothing).
pub async fn bootstrap(
    api: &Api,
    cat: &CatalogSnapshot,
) -> Result<(), kubeshard_core::status::ApiError> {
    let info = api.builtin("apiregistration.k8s.io", "apiservices")?;
    let stored = |objs: Vec<Arc<kubeshard_cache::StoredObject>>| -> BTreeMap<String, Value> {
        objs.iter()
            .map(|o| {
                let v = o.to_value();
                (meta::name(&v).to_string(), v)
            })
            .collect()
    };
    let have = stored(crate::storage::list_all(api.storage(), &info).await?);
    sync(api, &info, cat, &have, true).await;
    for (name, obj) in stored(crate::storage::list_all(api.storage(), &info).await?) {
        if obj.pointer("/spec/service").is_none_or(Value::is_null) {
            super::controller::mark_local(api, &info, &name, &obj).await;
        }
    }
    Ok(())
}

/// Brings the stored APIServices (`have`, by name) to what `cat` calls
/// for. `at_start`: the `onstart` ones are written too.
pub async fn sync(
    api: &Api,
    info: &Arc<ResourceInfo>,
    cat: &CatalogSnapshot,
    have: &BTreeMap<String, Value>,
    at_start: bool,
) {
    let wanted = wanted(cat);
    for (name, obj) in &wanted {
        let managed = meta::str_at(
            obj,
            "/metadata/labels/kube-aggregator.kubernetes.io~1automanaged",
        );
        if managed == "onstart" && !at_start {
            continue;
        }
        let result = match have.get(name) {
            None => registry::create_as(api, &APISERVER, info, obj.clone())
                .await
                .map(|_| ()),
            Some(existing) if !automanaged(existing) => Ok(()),
            Some(existing) if existing.get("spec") == obj.get("spec") => Ok(()),
            Some(_) => {
                let spec = obj["spec"].clone();
                let at = Addressed::object(info, "", name);
                registry::update_with(
                    api,
                    &APISERVER,
                    at,
                    Box::new(move |o: &mut Value| {
                        o["spec"] = spec.clone();
                        Ok(true)
                    }),
                )
                .await
                .map(|_| ())
            }
        };
        if let Err(e) = result.or_else(|e| if e.code == 409 { Ok(()) } else { Err(e) }) {
            tracing::warn!(apiservice = %name, error = %e.message, "could not register the local APIService");
        }
    }
    // CRD group versions that went away take their APIService along.
    for (name, existing) in have {
        let managed = meta::str_at(
            existing,
            "/metadata/labels/kube-aggregator.kubernetes.io~1automanaged",
        );
        if managed != "true" || wanted.contains_key(name) {
            continue;
        }
        let opts = DeleteOptions {
            preconditions: Preconditions {
                uid: meta::meta_str(existing, "uid").map(str::to_string),
                resource_version: None,
            },
            ..DeleteOptions::default()
        };
        if let Err(e) = registry::delete_as(api, &APISERVER, info, "", name, &opts).await {
            if e.code != 404 && e.code != 409 {
                tracing::warn!(apiservice = %name, error = %e.message, "could not remove the APIService");
            }
        }
    }
}

fn automanaged(obj: &Value) -> bool {
    !meta::str_at(
        obj,
        "/metadata/labels/kube-aggregator.kubernetes.io~1automanaged",
    )
    .is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_group_version_gets_one() {
        let catalog = kubeshard_core::catalog::Catalog::with_builtins();
        let w = wanted(&catalog.snapshot());
        let core = &w["v1."];
        assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(
            core["metadata"]["labels"][AUTOMANAGED], "onstart",
            "built-in groups are registered at start"
        );
        assert_eq!(w["v1.apps"]["spec"]["versionPriority"], 15);
        assert!(w.contains_key("v1.apiregistration.k8s.io"));
    }
}
