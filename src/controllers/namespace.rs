//! The namespace controller: empties terminating namespaces and then
//! releases them, as kube-controller-manager's does. For a namespace with
//! a deletion timestamp and the `kubernetes` finalizer it deletes every
//! object inside (each with background propagation, honouring the objects'
//! own finalizers and grace periods), reports progress in the namespace's
//! status conditions, and once nothing is left removes `kubernetes` from
//! `spec.finalizers` — after which the API deletes the namespace.
//!
//! It re-examines a namespace whenever anything inside it changes, so a
//! finalizer removed by someone else lets the namespace go at once (kube's
//! controller polls with a backoff instead).

use super::informer::Change;
use super::objmeta::{Meta, ObjRef};
use super::queue::WorkQueue;
use super::Env;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::EventType;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::registry::deletion::{DeleteOptions, Propagation};
use kubeshard_core::registry::lifecycle::{
    deletion_timestamp, format_time, spec_finalizers, FINALIZER_KUBERNETES,
};
use kubeshard_core::status::{aggregate_messages, ApiError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// How often a namespace that still holds content is looked at again
/// when nothing inside it changes (a backstop; changes wake it sooner).
const RECHECK: Duration = Duration::from_secs(5);

pub struct NamespaceController {
    /// Where namespaces are stored (telling their changes from their
    /// content's).
    namespaces: Arc<str>,
    /// Terminating namespaces still holding the `kubernetes` finalizer.
    terminating: HashMap<Arc<str>, ObjRef>,
    pub(super) queue: WorkQueue<Arc<str>>,
}

/// Where a namespace's emptying stands.
enum Progress {
    Done,
    Remaining,
}

impl NamespaceController {
    pub fn new(keys: &KeyLayout) -> Self {
        Self {
            namespaces: keys.builtin("", "namespaces"),
            terminating: HashMap::new(),
            queue: WorkQueue::default(),
        }
    }

    pub fn reset(&mut self, items: &[Change]) {
        self.terminating.clear();
        self.queue.clear();
        let namespaces = self.namespaces.clone();
        for c in items.iter().filter(|c| c.resource == namespaces) {
            self.observe(c);
        }
    }

    pub fn observe(&mut self, c: &Change) {
        if c.resource != self.namespaces {
            if self.terminating.contains_key(&*c.object.namespace) {
                self.queue.add(c.object.namespace.clone());
            }
            return;
        }
        let name = c.object.name.clone();
        if c.kind == EventType::Deleted || !wants_emptying(&c.object.to_value()) {
            self.terminating.remove(&name);
            return;
        }
        self.terminating
            .insert(name.clone(), ObjRef::of(&c.resource, &c.object));
        self.queue.add(name);
    }

    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(name) = self.queue.pop() else {
                return;
            };
            let Some(ns) = self.terminating.get(&name).cloned() else {
                continue;
            };
            match sync(env, &ns).await {
                Ok(Progress::Done) => self.queue.forget(&name),
                Ok(Progress::Remaining) => {
                    self.queue.forget(&name);
                    self.queue.add_after(name, RECHECK);
                }
                Err(e) => {
                    tracing::debug!(namespace = %name, error = %e.message, "namespace controller retries");
                    self.queue.retry(name);
                }
            }
        }
    }
}

fn wants_emptying(ns: &Value) -> bool {
    deletion_timestamp(ns).is_some()
        && spec_finalizers(ns)
            .iter()
            .any(|f| f == FINALIZER_KUBERNETES)
}

async fn sync(env: &Env<'_>, ns: &ObjRef) -> Result<Progress, ApiError> {
    let Some(ns_info) = env.catalog.lookup("", "v1", "namespaces").cloned() else {
        return Ok(Progress::Done);
    };
    let Some(current) = env
        .storage
        .get(&ns_info.storage_key, "", &ns.name)
        .await
        .or_status()?
    else {
        return Ok(Progress::Done);
    };
    let value = current.to_value();
    if current.uid() != &*ns.uid || !wants_emptying(&value) {
        return Ok(Progress::Done);
    }
    let mut report = Report::default();
    for info in env.catalog.namespaced_resources() {
        if info.supports("list") && info.supports("delete") {
            empty_resource(env, &info, &ns.name, &mut report).await?;
        }
    }
    update_status(env, &ns_info, ns, &value, &report).await?;
    if !report.failures.is_empty() || !report.remaining.is_empty() {
        return Ok(Progress::Remaining);
    }
    let wanted: Vec<String> = spec_finalizers(&value)
        .into_iter()
        .filter(|f| f != FINALIZER_KUBERNETES)
        .collect();
    let target = registry::Target {
        info: &ns_info,
        namespace: "",
        name: &ns.name,
        subresource: "finalize",
    };
    let requested = registry::spec_finalizers(
        ns.name.to_string(),
        current.revision.to_string(),
        json!(wanted),
    );
    match env.update_requested(target, requested).await {
        Ok(_) => Ok(Progress::Done),
        // Changed under us: look again.
        Err(e) if e.code == 409 => Ok(Progress::Remaining),
        Err(e) if e.code == 404 => Ok(Progress::Done),
        Err(e) => Err(e),
    }
}

/// What emptying a namespace found.
#[derive(Default)]
struct Report {
    /// "plural.group" → objects still there.
    remaining: BTreeMap<String, usize>,
    /// finalizer → objects still carrying it.
    finalizers: BTreeMap<String, usize>,
    failures: Vec<String>,
}

/// Deletes what is not yet being deleted, then counts what is left.
async fn empty_resource(
    env: &Env<'_>,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    report: &mut Report,
) -> Result<(), ApiError> {
    for obj in crate::storage::list_in(env.storage, info, namespace).await? {
        if Meta::of(&obj).being_deleted() {
            continue;
        }
        let mut opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        opts.preconditions.uid = Some(obj.uid().to_string());
        match env.delete(info, namespace, &obj.name, &opts).await {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => report.failures.push(e.message),
        }
    }
    let left = crate::storage::list_in(env.storage, info, namespace).await?;
    if !left.is_empty() {
        report
            .remaining
            .insert(format!("{}.{}", info.plural, info.group), left.len());
        for obj in &left {
            for f in Meta::of(obj).finalizers {
                *report.finalizers.entry(f).or_default() += 1;
            }
        }
    }
    Ok(())
}

/// The deletion conditions kube's namespace controller reports, in its
/// order, with its reasons and messages: (type, reason and message when
/// fine, failure).
fn conditions(report: &Report) -> Vec<(&'static str, &'static str, String, bool)> {
    let mut out = vec![
        (
            "NamespaceDeletionDiscoveryFailure",
            "ResourcesDiscovered",
            "All resources successfully discovered".to_string(),
            false,
        ),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".to_string(),
            false,
        ),
    ];
    out.push(match aggregate_messages(&report.failures) {
        None => (
            "NamespaceDeletionContentFailure",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".to_string(),
            false,
        ),
        Some(agg) => (
            "NamespaceDeletionContentFailure",
            "ContentDeletionFailed",
            format!(
                "Failed to delete all resource types, {} remaining: {agg}",
                report.failures.len()
            ),
            true,
        ),
    });
    out.push(tally(
        "NamespaceContentRemaining",
        ("ContentRemoved", "All content successfully removed"),
        ("SomeResourcesRemain", "Some resources are remaining"),
        report
            .remaining
            .iter()
            .map(|(r, n)| format!("{r} has {n} resource instances")),
    ));
    out.push(tally(
        "NamespaceFinalizersRemaining",
        (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
        (
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining",
        ),
        report
            .finalizers
            .iter()
            .map(|(f, n)| format!("{f} in {n} resource instances")),
    ));
    out
}

/// A condition that lists what is left: fine (reason, message) when
/// nothing is, else failing with the failing reason and `prefix: items`.
fn tally(
    kind: &'static str,
    fine: (&'static str, &'static str),
    failing: (&'static str, &'static str),
    items: impl Iterator<Item = String>,
) -> (&'static str, &'static str, String, bool) {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        (kind, fine.0, fine.1.to_string(), false)
    } else {
        (
            kind,
            failing.0,
            format!("{}: {}", failing.1, items.join(", ")),
            true,
        )
    }
}

/// The namespace's conditions after this pass, or None when they say
/// what they said (a transition time moves only when status, reason or
/// message change).
fn merged_conditions(existing: &[Value], report: &Report, now: &str) -> Option<Vec<Value>> {
    let mut out: Vec<Value> = existing.to_vec();
    for (kind, reason, message, failing) in conditions(report) {
        let status = if failing { "True" } else { "False" };
        let fresh = json!({"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
        match out.iter_mut().find(|c| c["type"] == kind) {
            None => out.push(fresh),
            Some(c)
                if c["status"] != status
                    || c["reason"] != reason
                    || c["message"] != message.as_str() =>
            {
                *c = fresh
            }
            Some(_) => {}
        }
    }
    (out != existing).then_some(out)
}

async fn update_status(
    env: &Env<'_>,
    info: &Arc<ResourceInfo>,
    ns: &ObjRef,
    current: &Value,
    report: &Report,
) -> Result<(), ApiError> {
    let existing: Vec<Value> = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = format_time(chrono::Utc::now());
    let conditions = merged_conditions(&existing, report, &now);
    let terminating =
        current.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    if conditions.is_none() && terminating {
        return Ok(());
    }
    let mutation = Box::new(move |v: &mut Value| {
        let Some(root) = v.as_object_mut() else {
            return Ok(false);
        };
        let status = root.entry("status").or_insert_with(|| json!({}));
        status["phase"] = json!("Terminating");
        if let Some(c) = &conditions {
            status["conditions"] = Value::Array(c.clone());
        }
        Ok(true)
    });
    let at = registry::Addressed {
        info,
        namespace: "",
        name: &ns.name,
        subresource: "status",
        uid: Some(&ns.uid),
    };
    match env.update(at, mutation).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_like_kubes() {
        let mut report = Report::default();
        report.remaining.insert("configmaps.".into(), 2);
        report.finalizers.insert("example.com/hold".into(), 1);
        let c = merged_conditions(&[], &report, "2026-01-01T00:00:00Z").unwrap();
        let types: Vec<&str> = c.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "NamespaceDeletionDiscoveryFailure",
                "NamespaceDeletionGroupVersionParsingFailure",
                "NamespaceDeletionContentFailure",
                "NamespaceContentRemaining",
                "NamespaceFinalizersRemaining"
            ]
        );
        assert_eq!(
            c[3]["message"],
            "Some resources are remaining: configmaps. has 2 resource instances"
        );
        assert_eq!(c[3]["status"], "True");
        assert_eq!(c[4]["message"], "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances");
        assert_eq!(c[2]["reason"], "ContentDeleted");
        // Nothing new to say: no write, and times stay.
        assert!(merged_conditions(&c, &report, "2026-01-02T00:00:00Z").is_none());
        let done = merged_conditions(&c, &Report::default(), "2026-01-02T00:00:00Z").unwrap();
        assert_eq!(done[3]["reason"], "ContentRemoved");
        assert_eq!(done[3]["lastTransitionTime"], "2026-01-02T00:00:00Z");
        assert_eq!(done[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
    }
}
