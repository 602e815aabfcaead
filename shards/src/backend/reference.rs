//! A second [`Storage`]: one map and a list of every change, nothing else.
//! It exists to prove the seam: the same property tests run against it
//! and against the sharded engine, so the trait says everything the
//! registry relies on, and the engine's answers match the plainest
//! possible store.
//!
//! Updates are optimistic, as a compare-and-swap backend's are: the update
//! function runs against a read, and the write lands only if the key has
//! not changed since; otherwise it runs again. [`Reference::interfere`]
//! makes another writer get in between, so the retry is exercised.

use super::{Storage, StorageError, UpdateFn, UpdateStep};
use crate::store::{DeleteOutcome, DeletePlan, ListChunk, ListRequest, NsName, UpdateOutcome};
use kubeshard_cache::{EventType, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::DeleteStep;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

type Key = (Arc<str>, String, String);

/// One change: the key and its state before it (None: absent).
struct Change {
    revision: u64,
    key: Key,
    prev: Option<Arc<StoredObject>>,
}

#[derive(Default)]
pub struct Reference {
    objects: RefCell<BTreeMap<Key, Arc<StoredObject>>>,
    changes: RefCell<Vec<Change>>,
    revision: Cell<u64>,
    /// Writes to make, as another writer, right after the next update
    /// function runs: (key, object).
    interference: RefCell<Vec<(Arc<ResourceInfo>, Value)>>,
    /// How many times update functions ran.
    pub update_calls: Cell<usize>,
}

fn key(resource: &Arc<str>, namespace: &str, name: &str) -> Key {
    (resource.clone(), namespace.to_string(), name.to_string())
}

impl Reference {
    /// After the next update function runs (before its write), `obj` is
    /// written as if by another writer.
    pub fn interfere(&self, info: &Arc<ResourceInfo>, obj: Value) {
        self.interference.borrow_mut().push((info.clone(), obj));
    }

    fn current(&self, k: &Key) -> Option<Arc<StoredObject>> {
        self.objects.borrow().get(k).cloned()
    }

    fn write(
        &self,
        info: &ResourceInfo,
        kind: EventType,
        mut obj: Value,
        prev: Option<Arc<StoredObject>>,
    ) -> Arc<StoredObject> {
        let revision = self.revision.get() + 1;
        self.revision.set(revision);
        meta::set_meta(
            &mut obj,
            "resourceVersion",
            Value::String(revision.to_string()),
        );
        let stored = Arc::new(StoredObject::encode_for(info, &obj, revision, kind));
        let k = key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
        match kind {
            EventType::Deleted => self.objects.borrow_mut().remove(&k),
            _ => self.objects.borrow_mut().insert(k.clone(), stored.clone()),
        };
        self.changes.borrow_mut().push(Change {
            revision,
            key: k,
            prev,
        });
        stored
    }

    /// The objects of `resource` at `revision`: today's with every later
    /// change undone.
    fn at(&self, resource: &Arc<str>, revision: u64) -> BTreeMap<NsName, Arc<StoredObject>> {
        let mut state: BTreeMap<Key, Option<Arc<StoredObject>>> = self
            .objects
            .borrow()
            .iter()
            .filter(|(k, _)| k.0 == *resource)
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        for c in self.changes.borrow().iter().rev() {
            if c.revision <= revision {
                break;
            }
            if c.key.0 == *resource {
                state.insert(c.key.clone(), c.prev.clone());
            }
        }
        state
            .into_iter()
            .filter_map(|(k, v)| Some(((k.1.as_str().into(), k.2.as_str().into()), v?)))
            .collect()
    }

    fn run_interference(&self) {
        let pending = std::mem::take(&mut *self.interference.borrow_mut());
        for (info, obj) in pending {
            let k = key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
            let prev = self.current(&k);
            let kind = if prev.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            self.write(&info, kind, obj, prev);
        }
    }
}

fn same_content(old: &StoredObject, new: &Value) -> bool {
    let mut new = new.clone();
    meta::set_meta(
        &mut new,
        "resourceVersion",
        Value::String(old.revision.to_string()),
    );
    old.to_value() == new
}

fn caught<T>(
    f: impl FnOnce() -> Result<T, kubeshard_core::status::ApiError>,
) -> Result<T, StorageError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| StorageError::Internal("a function panicked".into()))?
        .map_err(StorageError::Refused)
}

impl Storage for Reference {
    async fn get(
        &self,
        resource: &Arc<str>,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<StoredObject>>, StorageError> {
        Ok(self.current(&key(resource, namespace, name)))
    }

    async fn list(&self, req: &ListRequest) -> Result<Vec<ListChunk>, StorageError> {
        let mut chunk = ListChunk::default();
        for ((ns, name), obj) in self.at(&req.resource, req.revision) {
            if req.filter.namespace.as_deref().is_some_and(|n| n != &*ns)
                || req
                    .start_after
                    .as_ref()
                    .is_some_and(|k| (&*ns, &*name) <= (&*k.0, &*k.1))
                || !req.filter.matches(&obj)
            {
                continue;
            }
            if req.limit > 0 && chunk.items.len() == req.limit {
                chunk.more = true;
                chunk.remaining += 1;
                continue;
            }
            chunk.items.push(obj);
        }
        if !req.count_remaining {
            chunk.remaining = 0;
        }
        Ok(vec![chunk])
    }

    async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        obj: Value,
    ) -> Result<Arc<StoredObject>, StorageError> {
        let k = key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
        if self.current(&k).is_some() {
            return Err(StorageError::AlreadyExists);
        }
        Ok(self.write(info, EventType::Added, obj, None))
    }

    async fn guaranteed_update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        mut update: UpdateFn,
    ) -> Result<UpdateOutcome, StorageError> {
        let k = key(&info.storage_key, namespace, name);
        loop {
            let read = self.current(&k);
            self.update_calls.set(self.update_calls.get() + 1);
            let (new, delete) = match caught(|| update(read.as_ref()))? {
                UpdateStep::Write(v) => (v, false),
                UpdateStep::Delete(v) => (v, true),
            };
            self.run_interference();
            let now = self.current(&k);
            if now.as_ref().map(|o| o.revision) != read.as_ref().map(|o| o.revision) {
                continue; // another writer got in: run the function again
            }
            if meta::namespace(&new) != namespace || meta::name(&new) != name {
                return Err(StorageError::KeyChanged);
            }
            let Some(old) = read else {
                if delete {
                    return Err(StorageError::NotFound);
                }
                return Ok(UpdateOutcome::Created(self.write(
                    info,
                    EventType::Added,
                    new,
                    None,
                )));
            };
            let old_value = old.to_value();
            if delete {
                let deleted = self.write(info, EventType::Deleted, old_value, Some(old.clone()));
                let mut response = new;
                meta::set_meta(
                    &mut response,
                    "resourceVersion",
                    Value::String(old.revision.to_string()),
                );
                let response = Arc::new(StoredObject::encode(info, &response, deleted.revision));
                return Ok(UpdateOutcome::Deleted { deleted, response });
            }
            if same_content(&old, &new) {
                return Ok(UpdateOutcome::Unchanged(old));
            }
            return Ok(UpdateOutcome::Updated(self.write(
                info,
                EventType::Modified,
                new,
                Some(old),
            )));
        }
    }

    async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        plan: DeletePlan,
    ) -> Result<DeleteOutcome, StorageError> {
        let k = key(&info.storage_key, namespace, name);
        let old = self.current(&k).ok_or(StorageError::NotFound)?;
        let gone = |this: &Self, last: Arc<StoredObject>| {
            let value = last.to_value();
            this.write(info, EventType::Deleted, value, Some(last))
        };
        Ok(match caught(|| plan(&old))? {
            DeleteStep::Delete => DeleteOutcome::Deleted(gone(self, old)),
            DeleteStep::MarkThenDelete(marked) => {
                let marked = self.write(info, EventType::Modified, marked, Some(old));
                DeleteOutcome::Deleted(gone(self, marked))
            }
            DeleteStep::Mark(marked) if same_content(&old, &marked) => {
                DeleteOutcome::Unchanged(old)
            }
            DeleteStep::Mark(marked) => {
                DeleteOutcome::Marked(self.write(info, EventType::Modified, marked, Some(old)))
            }
            DeleteStep::Pending => DeleteOutcome::Pending(old),
        })
    }

    fn current_revision(&self) -> u64 {
        self.revision.get()
    }

    /// Every write is visible as it is made.
    fn progress(&self) -> u64 {
        self.revision.get()
    }

    async fn wait_progress(&self, revision: u64, _timeout: Duration) -> bool {
        revision <= self.progress()
    }
}
