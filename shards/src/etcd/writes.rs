//! Writes as kube's etcd3 store makes them: a create is a transaction on
//! "the key has never been created", an update or deletion compares the
//! key's mod revision with the state it was decided on and, when another
//! writer got in first, decides again on the state etcd returned in the
//! same transaction (the Store's guaranteed update). The revision a write
//! answers with is etcd's.
//!
//! A decision is first taken on the cached state, which may be behind:
//! when the caller's function refuses that state (a resourceVersion
//! precondition the cache has not caught up with) it is asked again on
//! etcd's current state before its refusal counts, as kube does.

use super::bridge::Bridge;
use super::{codec, metrics};
use crate::backend::{StorageError, UpdateFn};
use crate::store::outcome::{self, contained};
use crate::store::{DeleteOutcome, DeletePlan, UpdateOutcome};
use etcd_client::{
    Compare, CompareOp, KeyValue, PutOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use kubeshard_cache::{EventType, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::meta;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// One change a decision makes to a key, in order.
struct Planned {
    kind: EventType,
    value: Value,
}

/// What a key held when a transaction's comparison failed.
type Current = Option<Arc<StoredObject>>;

/// The executor's side of the etcd backend's writes.
#[derive(Clone)]
pub struct Writer {
    pub(super) bridge: Bridge,
    revisions: std::rc::Rc<super::revision::RevisionReads>,
    /// Resources whose objects live under leases, and for how long.
    expiring: Arc<[(Arc<str>, Duration)]>,
    /// This executor's own connections (none with TLS to etcd: then the
    /// transactions go through the bridge).
    local: Option<std::rc::Rc<super::grpc::Local>>,
}

pub(super) fn unavailable(e: String) -> StorageError {
    StorageError::Unavailable(format!("etcd: {e}"))
}

/// The comparison a write to `key` makes: the key is still at mod
/// revision `at`, or (None) has never been created.
pub(super) fn unchanged_since(key: impl Into<Vec<u8>>, at: Option<i64>) -> Compare {
    match at {
        Some(rev) => Compare::mod_revision(key, CompareOp::Equal, rev),
        None => Compare::create_revision(key, CompareOp::Equal, 0),
    }
}

impl Writer {
    pub fn new(
        bridge: Bridge,
        expiring: Arc<[(Arc<str>, Duration)]>,
        local: Option<std::rc::Rc<super::grpc::Local>>,
    ) -> Self {
        Self {
            bridge,
            revisions: Default::default(),
            expiring,
            local,
        }
    }

    /// Runs `txn` from this executor when it has its own connections,
    /// and counts it in kube's etcd metrics as `operation` on `info`'s
    /// resource. `idempotent`: it may go again to another member when
    /// the one it was sent to went away (a read; never a write).
    async fn txn(
        &self,
        operation: metrics::Operation,
        info: &ResourceInfo,
        txn: Txn,
        idempotent: bool,
    ) -> Result<TxnResponse, StorageError> {
        let started = std::time::Instant::now();
        let answer = match &self.local {
            Some(local) => local.txn(txn, idempotent).await,
            None => self.bridge.txn(txn).await,
        };
        metrics::record(operation, info, started, answer.is_err());
        answer.map_err(unavailable)
    }

    /// How a value of `info` is put: under a lease when its objects
    /// expire (every write renews the lifetime, as kube's TTL does).
    async fn put_options(&self, info: &ResourceInfo) -> Result<Option<PutOptions>, StorageError> {
        match self.expiring.iter().find(|(r, _)| *r == info.storage_key) {
            Some((_, ttl)) => self.leased(*ttl).await.map(Some),
            None => Ok(None),
        }
    }

    /// A put whose key goes away after `ttl` unless written again.
    pub(super) async fn leased(&self, ttl: Duration) -> Result<PutOptions, StorageError> {
        let lease = self.bridge.lease(ttl).await.map_err(unavailable)?;
        Ok(PutOptions::new().with_lease(lease))
    }

    /// etcd's current revision, read through a quorum: what a consistent
    /// read must see.
    pub async fn current_revision(&self) -> Result<u64, StorageError> {
        self.revisions
            .current(&self.bridge)
            .await
            .map_err(unavailable)
    }

    pub fn healthy(&self) -> bool {
        self.bridge.healthy()
    }

    /// Asks the mirror's watch to report its progress.
    pub fn request_progress(&self) {
        self.bridge.request_progress();
    }

    pub async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        mut obj: Value,
    ) -> Result<Arc<StoredObject>, StorageError> {
        let key = KeyLayout::object_key(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
        let put = TxnOp::put(
            key.clone(),
            codec::encode(info, &obj),
            self.put_options(info).await?,
        );
        let txn = Txn::new()
            .when([unchanged_since(key, None)])
            .and_then([put]);
        let resp = self.txn("create", info, txn, false).await?;
        if !resp.succeeded() {
            return Err(StorageError::AlreadyExists);
        }
        let revision = revision_of(resp.header());
        Ok(stamp(info, &mut obj, revision, EventType::Added))
    }

    /// `cached` is the state the shard holds, a first guess.
    pub async fn update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        cached: Current,
        mut try_update: UpdateFn,
    ) -> Result<UpdateOutcome, StorageError> {
        self.guaranteed(
            info,
            &KeyLayout::object_key(&info.storage_key, namespace, name),
            cached,
            |old| contained(|| try_update(old.as_ref())),
            |old, step, commit| outcome::update(info, namespace, name, old, step, commit),
        )
        .await
    }

    pub async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        cached: Current,
        mut decide: DeletePlan,
    ) -> Result<DeleteOutcome, StorageError> {
        self.guaranteed(
            info,
            &KeyLayout::object_key(&info.storage_key, namespace, name),
            cached,
            |old| match old {
                Some(current) => contained(|| decide(current)),
                None => Err(StorageError::NotFound),
            },
            |old, step, commit| {
                let old = old.ok_or(StorageError::NotFound)?;
                Ok(outcome::delete(old, step, commit))
            },
        )
        .await
    }

    /// The read-modify-write both take: `decide` on the state at hand
    /// (asked again on etcd's own state before a refusal of the cached
    /// one counts), `outcome` turns the decision into changes, and the
    /// changes are committed if the key is still at that state — else
    /// all of it again on the state etcd returned.
    async fn guaranteed<S: Clone, T>(
        &self,
        info: &ResourceInfo,
        key: &str,
        cached: Current,
        mut decide: impl FnMut(&Current) -> Result<S, StorageError>,
        outcome: impl Fn(Current, S, Commit<'_>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let (mut old, mut confirmed) = (cached, false);
        loop {
            let step = match decide(&old) {
                Ok(step) => step,
                Err(_) if !confirmed => {
                    (old, confirmed) = (self.read(info, key).await?, true);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let changes = plan(info, |commit| outcome(old.clone(), step.clone(), commit))?;
            match self.commit(info, key, old.as_ref(), &changes).await? {
                Ok(revisions) => {
                    return replay(info, &revisions, |commit| outcome(old, step, commit));
                }
                Err(current) => (old, confirmed) = (current, true),
            }
        }
    }

    /// The key's state in etcd now: a transaction of one range, which
    /// etcd serves as a linearizable read.
    async fn read(&self, info: &ResourceInfo, key: &str) -> Result<Current, StorageError> {
        let resp = self
            .txn(
                "get",
                info,
                Txn::new().and_then([TxnOp::get(key, None)]),
                true,
            )
            .await?;
        first_got(info, resp)
    }

    /// Makes `changes` to `key` if it is still at `base`: each change is
    /// its own transaction (etcd takes one operation per key in each),
    /// the next one compared with the revision the previous one made.
    /// Answers the revisions made, or what the key held when a
    /// comparison failed.
    async fn commit(
        &self,
        info: &ResourceInfo,
        key: &str,
        base: Option<&Arc<StoredObject>>,
        changes: &[Planned],
    ) -> Result<Result<Vec<u64>, Current>, StorageError> {
        let mut at = base.map(|b| b.revision);
        let mut revisions = Vec::with_capacity(changes.len());
        for change in changes {
            let compare = unchanged_since(key, at.map(|rev| rev as i64));
            // kube's names: its store's delete, create and guaranteed update.
            let operation = match (change.kind, at) {
                (EventType::Deleted, _) => "delete",
                (_, None) => "create",
                _ => "update",
            };
            let op = match change.kind {
                EventType::Deleted => TxnOp::delete(key, None),
                _ => TxnOp::put(
                    key,
                    codec::encode(info, &change.value),
                    self.put_options(info).await?,
                ),
            };
            let txn = Txn::new()
                .when([compare])
                .and_then([op])
                .or_else([TxnOp::get(key, None)]);
            let resp = self.txn(operation, info, txn, false).await?;
            if !resp.succeeded() {
                return Ok(Err(first_got(info, resp)?));
            }
            let revision = revision_of(resp.header());
            revisions.push(revision);
            at = Some(revision);
        }
        Ok(Ok(revisions))
    }
}

/// The key a transaction's range operation found, if any.
fn first_got(info: &ResourceInfo, resp: TxnResponse) -> Result<Current, StorageError> {
    let found = resp.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(g) => g.kvs().first().map(|kv| decoded(info, kv)),
        _ => None,
    });
    found.transpose()
}

fn revision_of(header: Option<&etcd_client::ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.revision().max(0) as u64)
}

/// A stored value as the object the shards would hold.
fn decoded(info: &ResourceInfo, kv: &KeyValue) -> Result<Arc<StoredObject>, StorageError> {
    let revision = kv.mod_revision().max(0) as u64;
    let obj = codec::decode(kv.value(), revision)
        .map_err(|e| StorageError::Internal(format!("a stored value does not decode: {e}")))?;
    Ok(Arc::new(StoredObject::encode(info, &obj, revision)))
}

fn stamp(
    info: &ResourceInfo,
    obj: &mut Value,
    revision: u64,
    kind: EventType,
) -> Arc<StoredObject> {
    meta::set_meta(obj, "resourceVersion", Value::String(revision.to_string()));
    Arc::new(StoredObject::encode_for(info, obj, revision, kind))
}

type Commit<'a> =
    &'a mut dyn FnMut(EventType, Value, Option<Arc<StoredObject>>) -> Arc<StoredObject>;

/// The changes a decision makes, found by running it with a commit that
/// only records (its answer is thrown away).
fn plan<T>(
    info: &ResourceInfo,
    decide: impl FnOnce(Commit<'_>) -> Result<T, StorageError>,
) -> Result<Vec<Planned>, StorageError> {
    let mut planned = Vec::new();
    let mut record = |kind, value: Value, _prev| {
        let placeholder = Arc::new(StoredObject::encode_for(info, &value, 0, kind));
        planned.push(Planned { kind, value });
        placeholder
    };
    decide(&mut record)?;
    Ok(planned)
}

/// The decision's answer again, with each change at the revision etcd
/// gave it.
fn replay<T>(
    info: &ResourceInfo,
    revisions: &[u64],
    decide: impl FnOnce(Commit<'_>) -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    let mut next = revisions.iter().copied();
    let mut stamped = |kind, mut value: Value, _prev| {
        let revision = next.next().unwrap_or(0);
        stamp(info, &mut value, revision, kind)
    };
    decide(&mut stamped)
}
