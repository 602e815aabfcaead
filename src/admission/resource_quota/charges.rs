//! Quota charges, written to the quota on the shard that owns it: each
//! write a read-modify-write that checks every charge against the stored
//! limits in order, so racing writers never overcommit. Charges that
//! arrive while a write to the same quota is in flight on this executor
//! wait and go together in the next write — one write per batch, not per
//! create (kube batches its quota updates per namespace too): a namespace
//! creating pods as fast as it can would otherwise queue every create
//! behind every other on the quota's one key.

use super::{amounts, check, Refusal};
use crate::admission::Attributes;
use crate::storage::{Storage, StorageError, UpdateStep};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::quota::{self, Usage};
use kubeshard_core::status::ApiError;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// One change of a quota's usage: `sign` × `usage` (a charge when
/// positive, checked against the limits; a refund otherwise).
pub struct Entry {
    pub usage: Usage,
    pub sign: i128,
}

/// The outcome of each entry of a write.
type Outcomes = Vec<Result<(), String>>;

/// Writes `entries` to quota `name` in one read-modify-write; each charge
/// is checked against the limits with the ones before it counted.
pub async fn write(
    a: &Attributes<'_>,
    info: &Arc<ResourceInfo>,
    name: &str,
    entries: Vec<Entry>,
) -> Result<Outcomes, Refusal> {
    let outcomes: Arc<Mutex<Outcomes>> = Arc::default();
    let seen = outcomes.clone();
    let quota_name = name.to_string();
    let update = Box::new(move |now: Option<&Arc<StoredObject>>| {
        let Some(now) = now else {
            // The quota went away meanwhile: nothing to charge.
            return Err(ApiError::new(0, "QuotaGone", ""));
        };
        let mut q = now.to_value();
        let hard = amounts(&q, "/status/hard");
        let mut used = amounts(&q, "/status/used");
        let mut results = Vec::with_capacity(entries.len());
        let mut changed = false;
        for e in &entries {
            if e.sign > 0 {
                if let Err(why) = check(&quota_name, &e.usage, &hard, &used) {
                    results.push(Err(why));
                    continue;
                }
            }
            for (k, add) in &e.usage {
                let u = used.entry(k.clone()).or_insert((0, String::new()));
                u.0 = (u.0 + e.sign * add).max(0);
            }
            changed = true;
            results.push(Ok(()));
        }
        *seen.lock() = results;
        if !changed {
            return Err(ApiError::new(0, "NothingCharged", ""));
        }
        let mut written = Map::new();
        for e in &entries {
            for k in e.usage.keys() {
                let like = hard.get(k).map_or("", |h| h.1.as_str());
                written.insert(k.clone(), json!(quota::render(used[k].0, like)));
            }
        }
        let status = q
            .as_object_mut()
            .expect("stored objects are objects")
            .entry("status")
            .or_insert_with(|| json!({}));
        if let Some(used) = status
            .as_object_mut()
            .map(|s| s.entry("used").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        {
            used.extend(written);
        }
        Ok(UpdateStep::Write(q))
    });
    match a
        .api
        .storage()
        .guaranteed_update(info, a.namespace, name, update)
        .await
    {
        Ok(_) => {}
        Err(StorageError::Refused(e)) if e.reason == "NothingCharged" => {}
        Err(StorageError::Refused(e)) if e.reason == "QuotaGone" => return Ok(Vec::new()),
        Err(StorageError::NotFound) => return Ok(Vec::new()),
        Err(e) => return Err(Refusal::Other(crate::storage::status(e))),
    }
    let results = std::mem::take(&mut *outcomes.lock());
    Ok(results)
}

/// The charges waiting for one quota on this executor.
#[derive(Default)]
struct Batch {
    /// (ticket, usage) not yet written.
    waiting: Vec<(u64, Usage)>,
    /// Outcomes of written tickets, until their writers look.
    done: HashMap<u64, Result<(), Refusal>>,
    writing: bool,
    written: Rc<event_listener::Event>,
}

#[derive(Default)]
pub struct Batches {
    quotas: RefCell<HashMap<(String, String), Batch>>,
    tickets: Cell<u64>,
}

impl Batches {
    /// Charges `usage` to quota `name` of the write's namespace: in the
    /// next batch written, by whichever waiting writer finds no write in
    /// flight.
    pub async fn charge(
        &self,
        a: &Attributes<'_>,
        info: &Arc<ResourceInfo>,
        name: &str,
        usage: Usage,
    ) -> Result<(), Refusal> {
        let key = (a.namespace.to_string(), name.to_string());
        let ticket = self.tickets.get();
        self.tickets.set(ticket + 1);
        self.quotas
            .borrow_mut()
            .entry(key.clone())
            .or_default()
            .waiting
            .push((ticket, usage));
        loop {
            let listener = {
                let mut quotas = self.quotas.borrow_mut();
                let b = quotas.get_mut(&key).expect("entered above");
                if let Some(outcome) = b.done.remove(&ticket) {
                    if b.waiting.is_empty() && b.done.is_empty() && !b.writing {
                        quotas.remove(&key);
                    }
                    return outcome;
                }
                if b.writing {
                    Some(b.written.listen())
                } else {
                    b.writing = true;
                    None
                }
            };
            if let Some(listener) = listener {
                listener.await;
                continue;
            }
            // A write to a quota on this executor's own shard completes
            // without waiting: let the other writes running here reach
            // their charge first (they wait, seeing this write under way),
            // so they go in this write too.
            futures_lite::future::yield_now().await;
            let batch = std::mem::take(
                &mut self
                    .quotas
                    .borrow_mut()
                    .get_mut(&key)
                    .expect("kept while writing")
                    .waiting,
            );
            let tickets: Vec<u64> = batch.iter().map(|(t, _)| *t).collect();
            tracing::trace!(
                quota = name,
                charges = tickets.len(),
                "quota charges written together"
            );
            let entries = batch
                .into_iter()
                .map(|(_, usage)| Entry { usage, sign: 1 })
                .collect();
            let result = write(a, info, name, entries).await;
            let mut quotas = self.quotas.borrow_mut();
            let b = quotas.get_mut(&key).expect("kept while writing");
            b.writing = false;
            match result {
                Ok(outcomes) => {
                    // No outcomes: the quota is gone, and charges nothing.
                    let mut outcomes = outcomes.into_iter();
                    for t in tickets {
                        let outcome = outcomes.next().unwrap_or(Ok(()));
                        b.done.insert(t, outcome.map_err(Refusal::Exceeded));
                    }
                }
                // Storage failed the whole batch: every charge in it.
                Err(e) => {
                    for t in tickets {
                        b.done.insert(t, Err(e.clone()));
                    }
                }
            }
            b.written.notify(usize::MAX);
        }
    }
}
