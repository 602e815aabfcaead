//! Naming and establishing: keeps each CRD's `acceptedNames` and its
//! `NamesAccepted`/`Established` conditions as kube's controllers do, and
//! the catalog serving exactly the established CRDs.

use super::cleanup;
use crate::context::Api;
use crate::informer::{Change, Informers};
use crate::registry::{self, Addressed, APISERVER};
use kubeshard_cache::Filter;
use kubeshard_core::catalog::{Catalog, ResourceInfo};
use kubeshard_core::crd::{self, kinds, names};
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// How soon a CRD whose work could not finish is looked at again.
const RETRY: Duration = Duration::from_millis(250);

type Gvr = (String, String, String);

/// What the controller knows and has done.
#[derive(Default)]
pub(super) struct State {
    /// Every CRD, by name, as last seen.
    crds: BTreeMap<String, Value>,
    /// CRDs to look at.
    dirty: BTreeSet<String>,
    /// What each CRD has registered in the catalog, and from what it
    /// was built (see [`served_from`]).
    served: HashMap<String, (String, Vec<Gvr>)>,
}

/// The CRDs' catalog entry (built in).
fn crd_info(api: &Api) -> Result<Arc<ResourceInfo>, ApiError> {
    api.catalog
        .current()
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .cloned()
        .ok_or_else(|| ApiError::internal("the CustomResourceDefinition kind is not served"))
}

/// Serves every established CRD again (at start, before ready).
pub async fn restore(api: &Api, catalog: &Arc<Catalog>) -> Result<(), ApiError> {
    let info = crd_info(api)?;
    let mut state = State::default();
    for obj in crate::storage::list_all(api.storage(), &info).await? {
        let crd = obj.to_value();
        serve(api, catalog, &mut state, &crd);
    }
    Ok(())
}

/// Starts the controller on this executor (executor 0).
pub fn start(api: Rc<Api>, catalog: Arc<Catalog>) {
    let Ok(info) = crd_info(&api) else {
        return;
    };
    let state = Rc::new(RefCell::new(State::default()));
    let wake = Rc::new(event_listener::Event::new());
    let informers = Rc::new(Informers::default());
    let (sink_state, sink_wake) = (state.clone(), wake.clone());
    informers.start(
        &api.exec,
        info.storage_key.clone(),
        Filter::default(),
        Box::new(move |change| {
            let mut s = sink_state.borrow_mut();
            match change {
                Change::Reset => {
                    let names: Vec<String> = s.crds.keys().cloned().collect();
                    s.dirty.extend(names);
                    s.crds.clear();
                }
                Change::Upsert(o) | Change::Delete(o) => {
                    let removed = matches!(change, Change::Delete(_));
                    let value = o.to_value();
                    let group = value.pointer("/spec/group").cloned();
                    // A change of one CRD's names can free or take names
                    // of the others in its group.
                    let peers: Vec<String> = s
                        .crds
                        .iter()
                        .filter(|(_, c)| c.pointer("/spec/group").cloned() == group)
                        .map(|(n, _)| n.clone())
                        .collect();
                    s.dirty.extend(peers);
                    s.dirty.insert(o.name.to_string());
                    if removed {
                        s.crds.remove(&*o.name);
                    } else {
                        s.crds.insert(o.name.to_string(), value);
                    }
                }
            }
            sink_wake.notify(usize::MAX);
        }),
    );
    glommio::spawn_local(run(api, catalog, info, state, wake, informers)).detach();
}

async fn run(
    api: Rc<Api>,
    catalog: Arc<Catalog>,
    info: Arc<ResourceInfo>,
    state: Rc<RefCell<State>>,
    wake: Rc<event_listener::Event>,
    _informers: Rc<Informers>,
) {
    let shutdown = api.exec.shutdown.clone();
    let mut retry: BTreeSet<String> = BTreeSet::new();
    while !shutdown.is_triggered() {
        let listener = wake.listen();
        let idle = state.borrow().dirty.is_empty();
        if idle {
            let wait = if retry.is_empty() {
                Duration::from_secs(1)
            } else {
                RETRY
            };
            futures_lite::future::or(
                async {
                    listener.await;
                },
                async {
                    glommio::timer::sleep(wait).await;
                },
            )
            .await;
        }
        let mut dirty = std::mem::take(&mut state.borrow_mut().dirty);
        if idle || dirty.is_empty() {
            dirty.append(&mut retry);
        }
        for name in dirty {
            let crd = state.borrow().crds.get(&name).cloned();
            match reconcile(&api, &catalog, &info, &state, &name, crd).await {
                Ok(true) => {}
                Ok(false) => {
                    retry.insert(name);
                }
                Err(e) => {
                    tracing::debug!(crd = %name, error = %e.message, "CRD controller retries");
                    retry.insert(name);
                }
            }
        }
    }
}

/// Brings one CRD's status and serving up to date. Ok(false): not done
/// yet (instances still being deleted), look again soon.
async fn reconcile(
    api: &Api,
    catalog: &Arc<Catalog>,
    info: &Arc<ResourceInfo>,
    state: &Rc<RefCell<State>>,
    name: &str,
    crd: Option<Value>,
) -> Result<bool, ApiError> {
    let Some(crd) = crd else {
        unserve(catalog, &mut state.borrow_mut(), name);
        return Ok(true);
    };
    if kubeshard_core::meta::metadata(&crd).is_some_and(|m| m.contains_key("deletionTimestamp")) {
        serve(api, catalog, &mut state.borrow_mut(), &crd);
        return cleanup::run(api, catalog, info, &crd).await;
    }
    let wanted = {
        let s = state.borrow();
        let others: Vec<&Value> = s.crds.values().collect();
        with_naming(&crd, &others)
    };
    // Serve the kind before saying it is Established: a client that saw
    // the condition finds the kind on every executor.
    serve(api, catalog, &mut state.borrow_mut(), &wanted);
    if wanted.get("status") != crd.get("status") {
        let status = wanted.get("status").cloned();
        let uid = kubeshard_core::meta::meta_str(&crd, "uid")
            .unwrap_or("")
            .to_string();
        let at = Addressed {
            uid: Some(&uid),
            ..Addressed::status(info, "", name)
        };
        let written = registry::update_with(
            api,
            &APISERVER,
            at,
            Box::new(move |obj: &mut Value| {
                if obj.get("status") == status.as_ref() {
                    return Ok(false);
                }
                if let (Some(o), Some(s)) = (obj.as_object_mut(), status.clone()) {
                    o.insert("status".into(), s);
                }
                Ok(true)
            }),
        )
        .await;
        match written {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => return Ok(true),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The CRD with the status kube's naming and establishing controllers
/// give it.
fn with_naming(crd: &Value, others: &[&Value]) -> Value {
    let naming = names::decide(crd, others);
    let mut out = crd.clone();
    let now = crate::registry::strategy::now_rfc3339();
    if let Some(o) = out.as_object_mut() {
        let status = o.entry("status").or_insert_with(|| serde_json::json!({}));
        if let Some(s) = status.as_object_mut() {
            s.insert("acceptedNames".into(), naming.accepted.clone());
        }
    }
    let (status, reason) = if naming.ok {
        ("True", naming.reason)
    } else {
        ("False", naming.reason)
    };
    crd::set_structural_condition(&mut out, &now);
    crd::set_condition(
        &mut out,
        "NamesAccepted",
        status,
        reason,
        &naming.message,
        &now,
    );
    if naming.ok {
        crd::set_condition(
            &mut out,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &now,
        );
    } else if !crd::is_established(&out) {
        crd::set_condition(
            &mut out,
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
            &now,
        );
    }
    out
}

/// Registers the kind of an established CRD (again, when the CRD
/// changed), leaving alone what the built-in kinds already serve.
pub(super) fn serve(api: &Api, catalog: &Arc<Catalog>, state: &mut State, crd: &Value) {
    let name = kubeshard_core::meta::name(crd).to_string();
    if !crd::is_established(crd) {
        return;
    }
    let rv = served_from(crd);
    if state.served.get(&name).is_some_and(|(at, _)| *at == rv) {
        return;
    }
    let entries = match kinds::resources(crd, &api.config.keys) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(crd = %name, error = %e, "CRD cannot be served");
            return;
        }
    };
    let current = catalog.snapshot();
    let entries: Vec<ResourceInfo> = entries
        .into_iter()
        .filter(|e| {
            current
                .lookup(&e.group, &e.version, &e.plural)
                .is_none_or(|existing| existing.custom.is_some())
        })
        .collect();
    let gvrs: Vec<Gvr> = entries
        .iter()
        .map(|e| (e.group.clone(), e.version.clone(), e.plural.clone()))
        .collect();
    let old = state
        .served
        .remove(&name)
        .map(|(_, g)| g)
        .unwrap_or_default();
    catalog.replace(&old, entries);
    state.served.insert(name, (rv, gvrs));
}

/// What a CRD's catalog entries are built from: its spec (the
/// generation), its accepted names and whether it is terminating. A
/// status write that changes none of them (conditions, stored versions)
/// leaves the entries as they are rather than rebuilding every schema,
/// CEL program and catalog snapshot.
fn served_from(crd: &Value) -> String {
    format!(
        "{}/{}/{}",
        kubeshard_core::meta::metadata(crd)
            .and_then(|m| m.get("generation"))
            .unwrap_or(&Value::Null),
        crd.pointer("/status/acceptedNames").unwrap_or(&Value::Null),
        crd::condition_true(crd, "Terminating")
    )
}

/// Stops serving a CRD's kind (the CRD is gone).
fn unserve(catalog: &Arc<Catalog>, state: &mut State, name: &str) {
    if let Some((_, gvrs)) = state.served.remove(name) {
        catalog.replace(&gvrs, Vec::new());
    }
}
