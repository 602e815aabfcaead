//! How an executor reaches the shards: its own directly, the others by
//! message. Handlers use only this; they never see a store.

use crate::backend::feed::{ChannelFeed, HubDriver, Progress};
use crate::backend::{Storage, StorageError, UpdateFn};
use crate::closed::ClosedWaiters;
use crate::messages::{ResourceCount, ShardMsg, ShardStats};
use crate::runtime::Shutdown;
use crate::sequencer::Sequencer;
use crate::store::{
    DeleteOutcome, DeletePlan, EventBatch, ListChunk, ListRequest, ShardStore, UpdateOutcome,
};
use futures_channel::oneshot;
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::keys::shard_for;
use kubeshard_core::meta;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ShardClient {
    id: usize,
    local: Rc<RefCell<ShardStore>>,
    inboxes: Vec<async_channel::Sender<ShardMsg>>,
    seq: Arc<Sequencer>,
    closed_waiters: Rc<ClosedWaiters>,
    feed: RefCell<Option<EngineFeed>>,
    /// With `--storage etcd`: writes go to etcd, and the shards hold
    /// what its watch brings back (see [`crate::etcd`]).
    #[cfg(feature = "etcd")]
    etcd: Option<crate::etcd::Writer>,
}

fn gone() -> StorageError {
    StorageError::Unavailable("the shard is shutting down".into())
}

impl ShardClient {
    pub fn new(
        id: usize,
        local: Rc<RefCell<ShardStore>>,
        inboxes: Vec<async_channel::Sender<ShardMsg>>,
        seq: Arc<Sequencer>,
        closed_waiters: Rc<ClosedWaiters>,
        batches: async_channel::Receiver<EventBatch>,
    ) -> Self {
        let feed = ChannelFeed::new(batches, seq.clone());
        Self {
            id,
            local,
            inboxes,
            seq,
            closed_waiters,
            feed: RefCell::new(Some(feed)),
            #[cfg(feature = "etcd")]
            etcd: None,
        }
    }

    /// Whether the shared store answers (None: the engine is its own).
    pub fn store_healthy(&self) -> Option<bool> {
        #[cfg(feature = "etcd")]
        if let Some(etcd) = &self.etcd {
            return Some(etcd.healthy());
        }
        None
    }

    /// kube's bookkeeping keys, when the store is shared with other
    /// servers (see [`crate::shared_keys`]).
    pub fn shared_keys(&self) -> Option<&crate::shared_keys::SharedKeys> {
        #[cfg(feature = "etcd")]
        return self.etcd.as_ref();
        #[cfg(not(feature = "etcd"))]
        None
    }

    /// Sends this executor's writes to etcd.
    #[cfg(feature = "etcd")]
    pub fn write_to(&mut self, writer: crate::etcd::Writer) {
        self.etcd = Some(writer);
    }

    /// What the hub loop of this executor reports to: the writers waiting
    /// for the closed revision.
    pub fn hub_driver(&self, shutdown: Shutdown) -> EngineHubDriver {
        EngineHubDriver {
            waiters: self.closed_waiters.clone(),
            shutdown,
        }
    }

    pub fn shard_count(&self) -> usize {
        self.inboxes.len()
    }

    pub fn sequencer(&self) -> &Arc<Sequencer> {
        &self.seq
    }

    fn owner(&self, resource: &str, namespace: &str, name: &str) -> usize {
        shard_for(resource, namespace, name, self.inboxes.len())
    }

    /// Runs a mutation on the local store and waits until it is durable.
    async fn local_write<T: 'static>(
        &self,
        write: impl FnOnce(&mut ShardStore) -> Result<T, StorageError>,
        revision: impl FnOnce(&T) -> u64,
    ) -> Result<T, StorageError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut store = self.local.borrow_mut();
            let result = write(&mut store);
            reply_when_durable(&mut store, result, revision, send_to(tx));
            store.finish_batch();
        }
        rx.await.map_err(|_| gone())?
    }

    async fn ask<T>(
        &self,
        shard: usize,
        make: impl FnOnce(oneshot::Sender<T>) -> ShardMsg,
    ) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.inboxes[shard].send(make(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Sends a request to every shard (but this executor's own, unless
    /// `include_own`) and returns the pending replies: all are sent before
    /// any is awaited, so the shards work in parallel.
    async fn ask_each<T>(
        &self,
        include_own: bool,
        make: impl Fn(oneshot::Sender<T>) -> ShardMsg,
    ) -> Result<Vec<oneshot::Receiver<T>>, StorageError> {
        let mut waits = Vec::with_capacity(self.inboxes.len());
        for (shard, inbox) in self.inboxes.iter().enumerate() {
            if shard == self.id && !include_own {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            inbox.send(make(tx)).await.map_err(|_| gone())?;
            waits.push(rx);
        }
        Ok(waits)
    }

    /// Every executor's figures, in shard order.
    pub async fn stats(&self) -> Result<Vec<ShardStats>, StorageError> {
        self.ask_all(|reply| ShardMsg::Stats { reply }).await
    }

    /// Every shard's objects per resource (cheap: no walk over objects).
    pub async fn resources(&self) -> Result<Vec<Vec<ResourceCount>>, StorageError> {
        self.ask_all(|reply| ShardMsg::Resources { reply }).await
    }

    /// Every shard's answer, in shard order.
    async fn ask_all<T>(
        &self,
        make: impl Fn(oneshot::Sender<T>) -> ShardMsg,
    ) -> Result<Vec<T>, StorageError> {
        let mut out = Vec::with_capacity(self.inboxes.len());
        for rx in self.ask_each(true, make).await? {
            out.push(rx.await.map_err(|_| gone())?);
        }
        Ok(out)
    }
}

/// The engine's watch feed to one executor: the event batches every
/// shard publishes to it, with the closed revision as progress (every
/// shard publishes a write before it releases the write's revision slot).
pub type EngineFeed = ChannelFeed<Arc<Sequencer>>;

impl Progress for Arc<Sequencer> {
    fn progress(&self) -> u64 {
        self.closed()
    }
}

/// Wakes the writers waiting for the closed revision as the hub passes
/// it (see [`crate::closed`]).
pub struct EngineHubDriver {
    waiters: Rc<ClosedWaiters>,
    shutdown: Shutdown,
}

impl HubDriver for EngineHubDriver {
    fn advanced(&self, current: u64, now: Instant) {
        self.waiters.advance(current, now);
    }

    fn ended(&self) {
        self.waiters.end();
    }

    fn shutting_down(&self) -> bool {
        self.shutdown.is_triggered()
    }
}

impl Storage for ShardClient {
    type Feed = EngineFeed;

    async fn get(
        &self,
        resource: &Arc<str>,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<StoredObject>>, StorageError> {
        let shard = self.owner(resource, namespace, name);
        if shard == self.id {
            return Ok(self.local.borrow().get(resource, namespace, name));
        }
        self.ask(shard, |reply| ShardMsg::Get {
            resource: resource.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            reply,
        })
        .await
        .ok_or_else(gone)
    }

    /// Every shard's part (own shard first). Remote shards are asked
    /// first so they work while the local part is computed.
    async fn list(&self, req: &ListRequest) -> Result<Vec<ListChunk>, StorageError> {
        let waits = self
            .ask_each(false, |reply| ShardMsg::List {
                req: req.clone(),
                reply,
            })
            .await?;
        let local = self.local.borrow().list(req);
        let local = match local {
            Ok(chunk) => chunk,
            Err(compacted) => {
                // The other shards' parts are awaited all the same: a
                // caller that retries at once must not pile list requests
                // into their mailboxes faster than they answer.
                for rx in waits {
                    let _ = rx.await;
                }
                return Err(expired(req.revision, compacted));
            }
        };
        let mut chunks = vec![local];
        for rx in waits {
            chunks.push(
                rx.await
                    .map_err(|_| gone())?
                    .map_err(|c| expired(req.revision, c))?,
            );
        }
        Ok(chunks)
    }

    async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        obj: Value,
    ) -> Result<Arc<StoredObject>, StorageError> {
        #[cfg(feature = "etcd")]
        if let Some(etcd) = &self.etcd {
            return etcd.create(info, obj).await;
        }
        let shard = self.owner(&info.storage_key, meta::namespace(&obj), meta::name(&obj));
        if shard == self.id {
            return self
                .local_write(|s| s.create(info, obj), |o| o.revision)
                .await;
        }
        self.ask(shard, |reply| ShardMsg::Create {
            info: info.clone(),
            obj,
            reply,
        })
        .await
        .ok_or_else(gone)?
    }

    /// The whole read-modify-write runs on the owning shard, where nothing
    /// else writes in between: `update` runs exactly once.
    async fn guaranteed_update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        try_update: UpdateFn,
    ) -> Result<UpdateOutcome, StorageError> {
        #[cfg(feature = "etcd")]
        if let Some(etcd) = &self.etcd {
            let cached = self.get(&info.storage_key, namespace, name).await?;
            return etcd.update(info, namespace, name, cached, try_update).await;
        }
        let shard = self.owner(&info.storage_key, namespace, name);
        if shard == self.id {
            return self
                .local_write(
                    |s| s.update(info, namespace, name, try_update),
                    |o| o.object().revision,
                )
                .await;
        }
        self.ask(shard, |reply| ShardMsg::Update {
            info: info.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            try_update,
            reply,
        })
        .await
        .ok_or_else(gone)?
    }

    async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        plan: DeletePlan,
    ) -> Result<DeleteOutcome, StorageError> {
        #[cfg(feature = "etcd")]
        if let Some(etcd) = &self.etcd {
            let cached = self.get(&info.storage_key, namespace, name).await?;
            return etcd.delete(info, namespace, name, cached, plan).await;
        }
        let shard = self.owner(&info.storage_key, namespace, name);
        if shard == self.id {
            return self
                .local_write(
                    |s| s.delete_with(info, namespace, name, plan),
                    |o| o.object().revision,
                )
                .await;
        }
        self.ask(shard, |reply| ShardMsg::DeleteWith {
            info: info.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            plan,
            reply,
        })
        .await
        .ok_or_else(gone)?
    }

    fn current_revision(&self) -> u64 {
        self.seq.current()
    }

    /// The engine is its own store: what is closed is current. Over etcd,
    /// etcd's revision, once the mirror has reached it (asked to mark its
    /// watch's progress when it has not, where kube's cacher asks etcd
    /// for a progress notification).
    async fn consistent_revision(&self, timeout: Duration) -> Result<u64, StorageError> {
        #[cfg(feature = "etcd")]
        if let Some(etcd) = &self.etcd {
            let revision = etcd.current_revision().await?;
            if self.progress() >= revision {
                return Ok(revision);
            }
            etcd.request_progress();
            if !self.wait_progress(revision, timeout).await {
                return Err(StorageError::Unavailable(format!(
                    "the watch cache did not reach etcd's revision {revision} in {timeout:?}"
                )));
            }
            return Ok(revision);
        }
        let _ = timeout;
        Ok(self.progress())
    }

    /// The closed revision: every event up to it is durable and on its way
    /// to every executor's hub.
    fn progress(&self) -> u64 {
        self.seq.closed()
    }

    /// Woken by this executor's hub loop (see [`crate::closed`]).
    async fn wait_progress(&self, revision: u64, timeout: Duration) -> bool {
        self.closed_waiters
            .wait(&self.seq, revision, Instant::now() + timeout)
            .await
    }

    fn watch_feed(&self) -> Option<EngineFeed> {
        self.feed.borrow_mut().take()
    }
}

/// Sends `result` to `reply` once the write it reports is durable (at once
/// for failures, which wrote nothing, and for revision 0, no write).
pub fn reply_when_durable<T: 'static>(
    store: &mut ShardStore,
    result: Result<T, StorageError>,
    revision: impl FnOnce(&T) -> u64,
    reply: impl FnOnce(Result<T, StorageError>) + 'static,
) {
    match result {
        Ok(v) => {
            let rev = revision(&v);
            if rev == 0 {
                return reply(Ok(v));
            }
            store.when_durable(rev, Box::new(move |r| reply(r.map(|()| v))));
        }
        Err(e) => reply(Err(e)),
    }
}

/// A reply callback that sends on a oneshot channel (a dropped receiver
/// means the asker went away; nothing to do about it).
pub fn send_to<T: 'static>(tx: oneshot::Sender<T>) -> impl FnOnce(T) + 'static {
    move |v| {
        let _ = tx.send(v);
    }
}

fn expired(requested: u64, compacted: u64) -> StorageError {
    StorageError::TooOld {
        requested,
        compacted,
    }
}
