//! Executors: one glommio executor per shard, pinned to a core, each owning
//! its shard's store, running that shard's request loop and its own watch
//! hub, and serving clients through a front end supplied by the server.

use crate::backend::feed::drive_hub;
use crate::backend::Storage;
use crate::client::{reply_when_durable, send_to, ShardClient};
use crate::closed::ClosedWaiters;
use crate::committer::{self, CommitterConfig};
use crate::messages::{ShardMsg, ShardStats};
use crate::sequencer::Sequencer;
use crate::storage::recovery::RecoveredShard;
use crate::storage::wal::writer::LogWriter;
use crate::storage::StorageMode;
use crate::store::{EventBatch, ShardStore};
use glommio::{Latency, LocalExecutorBuilder, Placement, Shares, TaskQueueHandle};
use kubeshard_cache::ring::RingLimits;
use kubeshard_cache::{Event, Hub};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How many queued requests a shard serves before it publishes events and
/// lets other tasks run: bounds latency while still batching under load.
const SHARD_BATCH: usize = 64;

/// Requests one shard's inbox holds before senders wait (back-pressure):
/// enough for every connection of a busy executor to have one in flight,
/// while a flood from the other cores parks its senders instead of
/// growing the queue without bound. (Event feeds to the watch hubs stay
/// unbounded: a shard must never block on publishing a write it made,
/// and their rate is bounded by the writes these inboxes admit.)
pub const INBOX_CAPACITY: usize = 4096;

/// The background queue's CPU share against the default queue's 1000:
/// controllers, bootstrap reconciliation and snapshots get a tenth of a
/// busy core, requests the rest; idle cores give them everything.
const BACKGROUND_SHARES: usize = 100;

/// Runs `work` detached in this executor's background queue (see
/// [`ExecutorContext::background`]); tasks it spawns stay in that queue.
pub fn spawn_background(queue: TaskQueueHandle, work: impl Future<Output = ()> + 'static) {
    glommio::spawn_local_into(work, queue)
        .expect("the background queue is created with its executor")
        .detach();
}

#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub shards: usize,
    /// CPUs to pin executors to, round-robin.
    pub cpus: Vec<usize>,
    pub limits: RingLimits,
    /// Registered IO memory per executor (glommio needs it within memlock).
    pub io_memory: usize,
    /// How long an idle executor spins before it parks. A parked executor
    /// costs a wake-up syscall to every cross-core message sent to it
    /// (RUNTIME-NOTES: 42 µs round trip parked, 14 µs spinning).
    pub spin_before_park: Option<std::time::Duration>,
    pub storage: StorageMode,
    /// Requests each shard's inbox holds ([`INBOX_CAPACITY`]; tests use
    /// tiny ones).
    pub inbox_capacity: usize,
}

/// What the shards start from: empty, or what recovery found.
#[derive(Debug, Default)]
pub struct StartState {
    /// One per shard (empty for a fresh start, which then starts empty).
    pub shards: Vec<RecoveredShard>,
    /// Every shard's recovered history is complete after this revision.
    pub hub_start: u64,
    /// Objects per shard read from another store (etcd), without
    /// history: the shards start at the sequencer's revision.
    pub loaded: Vec<Vec<(Arc<str>, Arc<kubeshard_cache::StoredObject>)>>,
}

/// What each executor's front end gets.
pub struct ExecutorContext {
    pub id: usize,
    /// A task queue with a lower CPU share than the one requests run in,
    /// for work no client waits on.
    pub background: TaskQueueHandle,
    pub shards: ShardClient,
    pub hub: Rc<RefCell<Hub>>,
    pub shutdown: Shutdown,
}

/// A cloneable shutdown signal, readable from any executor.
#[derive(Clone)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
    rx: async_channel::Receiver<()>,
}

/// The sending side: dropping or calling `trigger` ends the runtime.
pub struct ShutdownTrigger {
    flag: Arc<AtomicBool>,
    tx: Option<async_channel::Sender<()>>,
}

pub fn shutdown_pair() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = async_channel::bounded(1);
    let flag = Arc::new(AtomicBool::new(false));
    (
        ShutdownTrigger {
            flag: flag.clone(),
            tx: Some(tx),
        },
        Shutdown { flag, rx },
    )
}

impl ShutdownTrigger {
    pub fn trigger(&mut self) {
        self.flag.store(true, Ordering::SeqCst);
        self.tx.take();
    }
}

impl Shutdown {
    pub fn is_triggered(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Resolves once shutdown was triggered.
    pub async fn wait(&self) {
        // The channel never carries a message; it closes on trigger.
        let _ = self.rx.recv().await;
    }

    /// Sleeps for `d` on the current executor; false when shutdown came
    /// first (periodic loops stop there).
    pub async fn sleep(&self, d: std::time::Duration) -> bool {
        futures_lite::future::or(
            async {
                glommio::timer::sleep(d).await;
                true
            },
            async {
                self.wait().await;
                false
            },
        )
        .await
    }
}

/// Runs all executors until `front_end` returns on every one of them.
pub fn run<F, Fut>(
    cfg: RuntimeConfig,
    seq: Arc<Sequencer>,
    shutdown: Shutdown,
    start: StartState,
    front_end: F,
) -> std::io::Result<()>
where
    F: Fn(Rc<ExecutorContext>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let n = cfg.shards.max(1);
    // History starts complete at the sequencer's starting point (or where
    // recovered history starts) on every executor, however late each
    // executor thread starts running.
    let fresh_start = seq.current();
    let hub_start = if start.shards.is_empty() {
        fresh_start
    } else {
        start.hub_start
    };
    // Every hub replays the recovered history of all shards.
    let hub_history: Arc<Vec<Arc<Event>>> = Arc::new(
        start
            .shards
            .iter()
            .flat_map(|s| s.history.iter().filter(|e| e.revision > hub_start).cloned())
            .collect(),
    );
    let mut inits: Vec<Option<RecoveredShard>> = start.shards.into_iter().map(Some).collect();
    inits.resize_with(n, || None);
    let mut loaded = start.loaded;
    loaded.resize_with(n, Vec::new);
    let (inbox_tx, inbox_rx): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| async_channel::bounded::<ShardMsg>(cfg.inbox_capacity.max(1)))
        .unzip();
    let (hub_tx, hub_rx): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| async_channel::unbounded::<EventBatch>())
        .unzip();
    #[cfg(feature = "etcd")]
    if let StorageMode::Etcd(etcd) = &cfg.storage {
        etcd.follow(inbox_tx.clone(), seq.clone());
    }
    let mut handles = Vec::with_capacity(n);
    let starts = inbox_rx.into_iter().zip(hub_rx).zip(inits).zip(loaded);
    for (id, (((inbox, hub_feed), init), loaded)) in starts.enumerate() {
        let cpu = cfg.cpus[id % cfg.cpus.len().max(1)];
        let (inbox_tx, hub_tx, seq, shutdown) = (
            inbox_tx.clone(),
            hub_tx.clone(),
            seq.clone(),
            shutdown.clone(),
        );
        let (front_end, limits, storage) = (front_end.clone(), cfg.limits, cfg.storage.clone());
        let hub_history = hub_history.clone();
        let handle = LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(&format!("shard-{id}"))
            .io_memory(cfg.io_memory)
            .spin_before_park(cfg.spin_before_park.unwrap_or_default())
            .spawn(move || async move {
                let background = glommio::executor().create_task_queue(
                    Shares::Static(BACKGROUND_SHARES),
                    Latency::NotImportant,
                    "background",
                );
                let logged = matches!(storage, StorageMode::Wal(_));
                let history_start = init.as_ref().map_or(fresh_start, |i| i.history_start);
                let mut shard =
                    ShardStore::new(id, seq.clone(), logged, limits, hub_tx, history_start);
                let mut log_start = None;
                if let Some(init) = init {
                    shard.restore(init.objects, &init.history);
                    log_start = Some((init.log, init.snapshots));
                }
                shard.restore(loaded, &[]);
                let store = Rc::new(RefCell::new(shard));
                let mut hub = Hub::new(hub_start, limits);
                hub.absorb(&hub_history);
                hub.release(seq.current(), Instant::now());
                drop(hub_history);
                let hub = Rc::new(RefCell::new(hub));
                if let (StorageMode::Wal(wal), Some((log, snapshots))) =
                    (storage.clone(), log_start)
                {
                    let mut writer = LogWriter::new(log, wal.fsync, wal.segment_size);
                    writer.inject_disk_full_when(wal.fault_file.clone());
                    let cfg = CommitterConfig {
                        shard: id,
                        shards: n,
                        wal,
                        snapshots,
                        background,
                    };
                    glommio::spawn_local(committer::run(
                        store.clone(),
                        writer,
                        cfg,
                        shutdown.clone(),
                    ))
                    .detach();
                }
                glommio::spawn_local(shard_loop(store.clone(), hub.clone(), inbox)).detach();
                let closed_waiters = Rc::new(ClosedWaiters::default());
                #[allow(unused_mut)]
                let mut shards =
                    ShardClient::new(id, store, inbox_tx, seq, closed_waiters, hub_feed);
                #[cfg(feature = "etcd")]
                if let StorageMode::Etcd(etcd) = &storage {
                    shards.write_to(etcd.writer());
                }
                let feed = shards.watch_feed().expect("a new client has its feed");
                let driver = shards.hub_driver(shutdown.clone());
                let fed = hub.clone();
                glommio::spawn_local(async move { drive_hub(&fed, feed, driver).await }).detach();
                let ctx = Rc::new(ExecutorContext {
                    id,
                    background,
                    shards,
                    hub,
                    shutdown,
                });
                front_end(ctx).await;
            })
            .map_err(|e| {
                std::io::Error::other(format!("starting executor {id} on cpu {cpu}: {e}"))
            })?;
        handles.push(handle);
    }
    drop(inbox_tx);
    drop(hub_tx);
    for h in handles {
        h.join()
            .map_err(|e| std::io::Error::other(format!("executor failed: {e}")))?;
    }
    Ok(())
}

/// Serves requests for the shard this executor owns, in small batches.
async fn shard_loop(
    store: Rc<RefCell<ShardStore>>,
    hub: Rc<RefCell<Hub>>,
    inbox: async_channel::Receiver<ShardMsg>,
) {
    while let Ok(first) = inbox.recv().await {
        let mut store = store.borrow_mut();
        handle(&mut store, &hub, first);
        for _ in 1..SHARD_BATCH {
            match inbox.try_recv() {
                Ok(msg) => handle(&mut store, &hub, msg),
                Err(_) => break,
            }
        }
        store.finish_batch();
    }
}

fn handle(store: &mut ShardStore, hub: &RefCell<Hub>, msg: ShardMsg) {
    // A dropped reply means the asker went away; nothing to do about it.
    match msg {
        ShardMsg::Get {
            resource,
            namespace,
            name,
            reply,
        } => {
            let _ = reply.send(store.get(&resource, &namespace, &name));
        }
        ShardMsg::List { req, reply } => {
            let _ = reply.send(store.list(&req));
        }
        ShardMsg::Create { info, obj, reply } => {
            let result = store.create(&info, obj);
            reply_when_durable(store, result, |o| o.revision, send_to(reply));
        }
        ShardMsg::Update {
            info,
            namespace,
            name,
            try_update,
            reply,
        } => {
            let result = store.update(&info, &namespace, &name, try_update);
            reply_when_durable(store, result, |o| o.object().revision, send_to(reply));
        }
        ShardMsg::DeleteWith {
            info,
            namespace,
            name,
            plan,
            reply,
        } => {
            let result = store.delete_with(&info, &namespace, &name, plan);
            reply_when_durable(store, result, |o| o.object().revision, send_to(reply));
        }
        ShardMsg::Stats { reply } => {
            let hub = hub.borrow();
            let _ = reply.send(ShardStats {
                objects: store.total_objects(),
                object_bytes: store.object_bytes(),
                history_events: store.history_events(),
                watch_events: hub.ring_events(),
                watch_index_entries: hub.index_entries(),
                watchers: hub.watchers(),
                objects_by_resource: store.objects_by_resource(),
            });
        }
        ShardMsg::Resources { reply } => {
            let _ = reply.send(store.objects_by_resource());
        }
        ShardMsg::Mirror { changes, through } => store.mirror(changes, through),
        ShardMsg::Resync {
            objects,
            revision,
            kinds,
        } => store.resync(objects, revision, &*kinds),
    }
}
