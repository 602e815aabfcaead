//! The garbage collector: deletes objects whose owners (by
//! `ownerReferences`) are gone, carries out foreground deletion (an owner
//! with the `foregroundDeletion` finalizer waits for its blocking
//! dependents) and orphaning (an owner with the `orphan` finalizer first
//! has its references removed from its dependents), as
//! kube-controller-manager's garbage collector does.
//!
//! Its picture of the world is small: which uids exist, which owners are
//! deleting their dependents, and owner uid → dependents. Every decision
//! re-reads the objects involved (owners are looked up by kind and name,
//! then matched by uid), so a stale picture can only delay work, never
//! delete the wrong object; every write carries the uid it expects.

use super::informer::Change;
use super::objmeta::{uid_key, Meta, ObjRef, OwnerRef};
use super::queue::WorkQueue;
use super::Env;
use crate::registry;
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::EventType;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::registry::deletion::{DeleteOptions, Propagation};
use kubeshard_core::registry::lifecycle::{
    finalizers, set_finalizers, FINALIZER_FOREGROUND, FINALIZER_ORPHAN,
};
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Work {
    /// Delete this object if none of its owners is alive.
    AttemptToDelete(ObjRef),
    /// Remove this owner's references from its dependents, then its
    /// `orphan` finalizer.
    Orphan(ObjRef),
    /// Delete this owner's blocking dependents; once none is left, remove
    /// its `foregroundDeletion` finalizer.
    DeletingDependents(ObjRef),
}

#[derive(Debug, Clone)]
struct Dependent {
    id: ObjRef,
    /// `blockOwnerDeletion` on the reference to this owner.
    block: bool,
}

/// How one owner reference of a dependent stands.
enum Owner {
    Alive,
    /// Gone, or replaced by another object of the same name.
    Gone,
    /// Being deleted in the foreground: waiting for its dependents.
    Waiting,
}

#[derive(Default)]
pub struct GarbageCollector {
    known: HashSet<u128>,
    /// Owners deleting their dependents (foreground), by uid.
    deleting: HashMap<u128, ObjRef>,
    /// Owner uid → its dependents by uid.
    dependents: HashMap<u128, HashMap<u128, Dependent>>,
    pub(super) queue: WorkQueue<Work>,
}

impl GarbageCollector {
    /// Starts over from a full list.
    pub fn reset(&mut self, items: &[Change]) {
        self.known.clear();
        self.deleting.clear();
        self.dependents.clear();
        self.queue.clear();
        // Every uid first, so owners listed after their dependents count
        // as present.
        for c in items {
            self.known.insert(uid_key(c.object.uid()));
        }
        for c in items {
            self.observe(c);
        }
    }

    pub fn observe(&mut self, c: &Change) {
        let meta = Meta::of(&c.object);
        let prev = c.prev.as_deref().map(Meta::of);
        let id = ObjRef::of(&c.resource, &c.object);
        let key = uid_key(&id.uid);
        if let Some(p) = &prev {
            self.unlink(key, &p.owner_references);
        }
        if c.kind == EventType::Deleted {
            self.unlink(key, &meta.owner_references);
            self.known.remove(&key);
            self.deleting.remove(&key);
            for d in self
                .dependents
                .remove(&key)
                .into_iter()
                .flat_map(|m| m.into_values())
            {
                self.queue.add(Work::AttemptToDelete(d.id));
            }
        } else {
            self.known.insert(key);
            self.link(&id, key, &meta.owner_references);
            self.track_deletion(&id, key, &meta);
            let refs_changed = prev
                .as_ref()
                .is_none_or(|p| p.owner_references != meta.owner_references);
            let owner_in_doubt = meta.owner_references.iter().any(|r| {
                let k = uid_key(&r.uid);
                !self.known.contains(&k) || self.deleting.contains_key(&k)
            });
            if refs_changed && owner_in_doubt && !meta.being_deleted() {
                self.queue.add(Work::AttemptToDelete(id));
            }
        }
        // Owners waiting on their dependents re-check whenever one changes.
        let touched = prev
            .iter()
            .flat_map(|p| p.owner_references.iter())
            .chain(meta.owner_references.iter());
        for r in touched {
            if let Some(owner) = self.deleting.get(&uid_key(&r.uid)) {
                self.queue.add(Work::DeletingDependents(owner.clone()));
            }
        }
    }

    /// Starts orphaning or foreground deletion when an owner asks for it.
    fn track_deletion(&mut self, id: &ObjRef, key: u128, meta: &Meta) {
        if meta.being_deleted() && meta.has_finalizer(FINALIZER_ORPHAN) {
            self.queue.add(Work::Orphan(id.clone()));
        }
        if meta.being_deleted() && meta.has_finalizer(FINALIZER_FOREGROUND) {
            if self.deleting.insert(key, id.clone()).is_none() {
                self.queue.add(Work::DeletingDependents(id.clone()));
                let deps: Vec<ObjRef> = self.dependents_of(key).into_iter().map(|d| d.id).collect();
                for d in deps {
                    self.queue.add(Work::AttemptToDelete(d));
                }
            }
        } else {
            self.deleting.remove(&key);
        }
    }

    fn link(&mut self, id: &ObjRef, key: u128, refs: &[OwnerRef]) {
        for r in refs {
            self.dependents.entry(uid_key(&r.uid)).or_default().insert(
                key,
                Dependent {
                    id: id.clone(),
                    block: r.block_owner_deletion == Some(true),
                },
            );
        }
    }

    fn unlink(&mut self, key: u128, refs: &[OwnerRef]) {
        for r in refs {
            let owner = uid_key(&r.uid);
            if let Some(deps) = self.dependents.get_mut(&owner) {
                deps.remove(&key);
                if deps.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    fn dependents_of(&self, owner: u128) -> Vec<Dependent> {
        self.dependents
            .get(&owner)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Works through up to `budget` queued items.
    pub async fn process(&mut self, env: &Env<'_>, budget: usize) {
        for _ in 0..budget {
            let Some(work) = self.queue.pop() else {
                return;
            };
            let result = match &work {
                Work::AttemptToDelete(id) => self.attempt_to_delete(env, id).await,
                Work::Orphan(id) => self.orphan(env, id).await,
                Work::DeletingDependents(id) => self.deleting_dependents(env, id).await,
            };
            match result {
                Ok(()) => self.queue.forget(&work),
                Err(e) => {
                    tracing::debug!(?work, error = %e.message, "garbage collector retries");
                    self.queue.retry(work);
                }
            }
        }
    }

    async fn attempt_to_delete(&mut self, env: &Env<'_>, id: &ObjRef) -> Result<(), ApiError> {
        let Some((info, latest)) = current(env, id).await? else {
            return Ok(());
        };
        let meta = Meta::of(&latest);
        if meta.being_deleted() {
            if meta.has_finalizer(FINALIZER_FOREGROUND) {
                return self.deleting_dependents(env, id).await;
            }
            return Ok(());
        }
        if meta.owner_references.is_empty() {
            return Ok(());
        }
        let (mut alive, mut waiting) = (false, false);
        let mut drop_refs: Vec<String> = Vec::new();
        for r in &meta.owner_references {
            match classify(env, &info, id, r).await? {
                Owner::Alive => alive = true,
                Owner::Gone => drop_refs.push(r.uid.clone()),
                Owner::Waiting => {
                    waiting = true;
                    drop_refs.push(r.uid.clone());
                }
            }
        }
        if alive {
            // Someone still owns it: only forget the owners that are gone
            // or going.
            if !drop_refs.is_empty() {
                let mutation = Box::new(move |v: &mut Value| Ok(remove_owner_refs(v, &drop_refs)));
                change(env, &info, id, mutation).await?;
            }
            return Ok(());
        }
        let dependents = self.dependents_of(uid_key(&id.uid));
        let policy = if waiting && !dependents.is_empty() {
            // An owner waits for us and we have dependents of our own:
            // cascade the foreground deletion. If one of those waits on its
            // own dependents too we may be in a cycle, so first stop
            // blocking our owners (kube does the same).
            let cycle = dependents
                .iter()
                .any(|d| self.deleting.contains_key(&uid_key(&d.id.uid)));
            if cycle {
                let mutation = Box::new(|v: &mut Value| Ok(unblock_owner_refs(v)));
                change(env, &info, id, mutation).await?;
            }
            Propagation::Foreground
        } else if meta.has_finalizer(FINALIZER_ORPHAN) {
            Propagation::Orphan
        } else if meta.has_finalizer(FINALIZER_FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        delete_object(env, &info, id, policy).await
    }

    async fn orphan(&mut self, env: &Env<'_>, owner: &ObjRef) -> Result<(), ApiError> {
        let Some(info) = env.catalog.by_storage_key(&owner.resource).cloned() else {
            return Ok(());
        };
        for d in self.dependents_of(uid_key(&owner.uid)) {
            let Some(dep_info) = env.catalog.by_storage_key(&d.id.resource).cloned() else {
                continue;
            };
            let gone = vec![owner.uid.to_string()];
            let mutation = Box::new(move |v: &mut Value| Ok(remove_owner_refs(v, &gone)));
            change(env, &dep_info, &d.id, mutation).await?;
        }
        remove_finalizer(env, &info, owner, FINALIZER_ORPHAN).await
    }

    async fn deleting_dependents(&mut self, env: &Env<'_>, owner: &ObjRef) -> Result<(), ApiError> {
        let Some((info, latest)) = current(env, owner).await? else {
            return Ok(());
        };
        let meta = Meta::of(&latest);
        if !meta.being_deleted() || !meta.has_finalizer(FINALIZER_FOREGROUND) {
            return Ok(());
        }
        let blocking: Vec<Dependent> = self
            .dependents_of(uid_key(&owner.uid))
            .into_iter()
            .filter(|d| d.block)
            .collect();
        if blocking.is_empty() {
            return remove_finalizer(env, &info, owner, FINALIZER_FOREGROUND).await;
        }
        for d in blocking {
            if !self.deleting.contains_key(&uid_key(&d.id.uid)) {
                self.queue.add(Work::AttemptToDelete(d.id));
            }
        }
        Ok(())
    }
}

/// The object `id` names as it is now, with its kind; None when the kind
/// is no longer served or the object is gone or was replaced (another uid).
async fn current(
    env: &Env<'_>,
    id: &ObjRef,
) -> Result<Option<(Arc<ResourceInfo>, Arc<kubeshard_cache::StoredObject>)>, ApiError> {
    let Some(info) = env.catalog.by_storage_key(&id.resource).cloned() else {
        return Ok(None);
    };
    let latest = env
        .storage
        .get(&id.resource, &id.namespace, &id.name)
        .await
        .or_status()?;
    Ok(latest.filter(|l| l.uid() == &*id.uid).map(|l| (info, l)))
}

/// Looks the owner up by kind and name in the dependent's namespace (or
/// cluster-wide for cluster-scoped kinds) and matches its uid. References
/// to kinds this server does not serve, or from a cluster-scoped object to
/// a namespaced kind, are left alone, as if the owner were alive.
async fn classify(
    env: &Env<'_>,
    dependent: &ResourceInfo,
    id: &ObjRef,
    r: &OwnerRef,
) -> Result<Owner, ApiError> {
    let Some(owner_info) = env.catalog.lookup_kind(r.group(), &r.kind) else {
        return Ok(Owner::Alive);
    };
    if owner_info.namespaced && !dependent.namespaced {
        return Ok(Owner::Alive);
    }
    let ns = if owner_info.namespaced {
        &*id.namespace
    } else {
        ""
    };
    let Some(owner) = env
        .storage
        .get(&owner_info.storage_key, ns, &r.name)
        .await
        .or_status()?
    else {
        return Ok(Owner::Gone);
    };
    if *owner.uid() != *r.uid {
        return Ok(Owner::Gone);
    }
    let meta = Meta::of(&owner);
    if meta.being_deleted() && meta.has_finalizer(FINALIZER_FOREGROUND) {
        return Ok(Owner::Waiting);
    }
    Ok(Owner::Alive)
}

async fn delete_object(
    env: &Env<'_>,
    info: &Arc<ResourceInfo>,
    id: &ObjRef,
    policy: Propagation,
) -> Result<(), ApiError> {
    let mut opts = DeleteOptions {
        propagation: Some(policy),
        ..Default::default()
    };
    opts.preconditions.uid = Some(id.uid.to_string());
    tolerate(env.delete(info, &id.namespace, &id.name, &opts).await)
}

async fn remove_finalizer(
    env: &Env<'_>,
    info: &Arc<ResourceInfo>,
    id: &ObjRef,
    finalizer: &'static str,
) -> Result<(), ApiError> {
    let mutation = Box::new(move |v: &mut Value| {
        let list = finalizers(v);
        if !list.iter().any(|f| f == finalizer) {
            return Ok(false);
        }
        let kept: Vec<String> = list.into_iter().filter(|f| f != finalizer).collect();
        set_finalizers(v, &kept);
        Ok(true)
    });
    change(env, info, id, mutation).await
}

/// Changes an object through the registry if it is still the one we saw.
async fn change(
    env: &Env<'_>,
    info: &Arc<ResourceInfo>,
    id: &ObjRef,
    mutation: registry::Mutation,
) -> Result<(), ApiError> {
    tolerate(
        env.update(
            registry::Addressed {
                info,
                namespace: &id.namespace,
                name: &id.name,
                subresource: "",
                uid: Some(&id.uid),
            },
            mutation,
        )
        .await,
    )
}

/// Removes owner references by uid; false when none matched.
fn remove_owner_refs(v: &mut Value, uids: &[String]) -> bool {
    let Some(refs) = v
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| {
        let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
        !uids.iter().any(|u| u == uid)
    });
    let changed = refs.len() != before;
    if refs.is_empty() {
        if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            md.remove("ownerReferences");
        }
    }
    changed
}

/// Sets `blockOwnerDeletion` to false on every reference that blocks;
/// false when none did.
fn unblock_owner_refs(v: &mut Value) -> bool {
    let Some(refs) = v
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let mut changed = false;
    for r in refs.iter_mut().filter(|r| r["blockOwnerDeletion"] == true) {
        r["blockOwnerDeletion"] = Value::Bool(false);
        changed = true;
    }
    changed
}

/// The object went away or was replaced while we worked on it: nothing
/// left to do for this item.
fn tolerate<T>(r: Result<T, ApiError>) -> Result<(), ApiError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_cache::StoredObject;
    use kubeshard_core::catalog::Catalog;
    use serde_json::json;

    fn change(kind: EventType, v: Value, prev: Option<Value>) -> Change {
        let cat = Catalog::with_builtins().snapshot();
        let info = cat.lookup("", "v1", "configmaps").unwrap().clone();
        let enc = |v: &Value| Arc::new(StoredObject::encode(&info, v, 1));
        Change {
            resource: info.storage_key.clone(),
            kind,
            object: enc(&v),
            prev: prev.as_ref().map(enc),
        }
    }

    fn cm(name: &str, uid: &str, owners: &[(&str, bool)]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|(u, b)| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": u, "blockOwnerDeletion": b}))
            .collect();
        json!({"metadata": {"name": name, "namespace": "n", "uid": uid, "ownerReferences": refs}})
    }

    fn drain(gc: &mut GarbageCollector) -> Vec<Work> {
        std::iter::from_fn(|| gc.queue.pop()).collect()
    }

    #[test]
    fn index_follows_owner_references() {
        let mut gc = GarbageCollector::default();
        let owner = json!({"metadata": {"name": "o", "namespace": "n", "uid": "O"}});
        let dep = cm("d", "D", &[("O", true)]);
        gc.reset(&[
            change(EventType::Added, dep.clone(), None),
            change(EventType::Added, owner.clone(), None),
        ]);
        assert!(drain(&mut gc).is_empty(), "owner present: nothing to do");
        assert_eq!(gc.dependents_of(uid_key("O")).len(), 1);
        // A dependent of an unknown owner is checked at once.
        gc.observe(&change(
            EventType::Added,
            cm("x", "X", &[("missing", false)]),
            None,
        ));
        assert!(
            matches!(drain(&mut gc).as_slice(), [Work::AttemptToDelete(id)] if &*id.name == "x")
        );
        // The owner going away queues its dependents.
        gc.observe(&change(EventType::Deleted, owner, None));
        assert!(
            matches!(drain(&mut gc).as_slice(), [Work::AttemptToDelete(id)] if &*id.name == "d")
        );
        // Dropping the reference unlinks it.
        gc.observe(&change(EventType::Modified, cm("d", "D", &[]), Some(dep)));
        assert!(gc.dependents_of(uid_key("O")).is_empty());
    }

    #[test]
    fn owner_finalizers_start_orphaning_and_foreground_deletion() {
        let mut gc = GarbageCollector::default();
        gc.reset(&[
            change(EventType::Added, cm("d", "D", &[("O", true)]), None),
            change(
                EventType::Added,
                json!({"metadata": {"name": "o", "namespace": "n", "uid": "O"}}),
                None,
            ),
        ]);
        let fg = json!({"metadata": {"name": "o", "namespace": "n", "uid": "O", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]}});
        gc.observe(&change(EventType::Modified, fg.clone(), None));
        let work = drain(&mut gc);
        assert!(work.contains(&Work::DeletingDependents(ObjRef {
            resource: Arc::from("/registry/configmaps"),
            namespace: "n".into(),
            name: "o".into(),
            uid: "O".into()
        })));
        assert!(work
            .iter()
            .any(|w| matches!(w, Work::AttemptToDelete(id) if &*id.name == "d")));
        // A change to a dependent re-checks the waiting owner.
        gc.observe(&change(
            EventType::Deleted,
            cm("d", "D", &[("O", true)]),
            None,
        ));
        assert!(matches!(
            drain(&mut gc).as_slice(),
            [Work::DeletingDependents(_)]
        ));
        let orphan = json!({"metadata": {"name": "p", "namespace": "n", "uid": "P", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan"]}});
        gc.observe(&change(EventType::Modified, orphan, None));
        assert!(matches!(drain(&mut gc).as_slice(), [Work::Orphan(id)] if &*id.name == "p"));
    }

    #[test]
    fn owner_references_are_removed_by_uid() {
        let mut v = json!({"metadata": {"ownerReferences": [{"uid": "a"}, {"uid": "b"}]}});
        assert!(remove_owner_refs(&mut v, &["a".into()]));
        assert_eq!(v["metadata"]["ownerReferences"], json!([{"uid": "b"}]));
        assert!(!remove_owner_refs(&mut v, &["zzz".into()]));
        assert!(remove_owner_refs(&mut v, &["b".into()]));
        assert!(v["metadata"].get("ownerReferences").is_none());
        let mut blocking = json!({"metadata": {"ownerReferences": [{"uid": "a", "blockOwnerDeletion": true}, {"uid": "b"}]}});
        assert!(unblock_owner_refs(&mut blocking));
        assert_eq!(
            blocking["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            false
        );
        assert!(!unblock_owner_refs(&mut blocking));
    }
}
