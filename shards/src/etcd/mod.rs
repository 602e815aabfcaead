//! The etcd backend (`--storage etcd`): objects live in an etcd cluster,
//! in kube-apiserver's layout and encodings, so several kubeshard
//! replicas — and kube-apiservers — serve the same data.
//!
//! - [`bridge`]: etcd-client on a thread of its own (it runs on tokio).
//! - [`grpc`]: the executors' own connections, for their transactions.
//! - [`writes`]: creates, guaranteed updates and deletions as etcd
//!   transactions; etcd's mod revisions are the resource versions.
//! - [`mirror`]: the shards as the watch cache: loaded at start, then fed
//!   by one watch on the prefix; the closed revision follows it.
//! - [`codec`], [`keys`]: values and keys as kube writes them.
//!
//! Reads are served from the shards. A consistent read first asks etcd
//! for its revision and waits for the mirror to reach it (kube's
//! consistent reads from cache, KEP-2340).

pub mod bridge;
pub mod codec;
mod compactor;
mod grpc;
pub mod keys;
mod leases;
pub mod metrics;
pub mod mirror;
pub mod raw;
mod revision;
pub mod writes;

pub use bridge::Bridge;
pub use keys::Resolve;
pub use writes::Writer;

use crate::messages::ShardMsg;
use crate::sequencer::Sequencer;
use kubeshard_cache::StoredObject;
use std::path::PathBuf;
use std::sync::Arc;

/// Where etcd is and how to reach it (kube's `--etcd-*` flags).
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    pub endpoints: Vec<String>,
    /// The key prefix, without its trailing `/` (`/registry`).
    pub prefix: String,
    pub tls: Option<TlsFiles>,
    /// How often history is compacted (None: never, left to others).
    pub compaction: Option<std::time::Duration>,
    /// Resources whose objects expire (by storage key): written under an
    /// etcd lease of this lifetime, renewed by every write (kube's
    /// `--event-ttl` for Events).
    pub expiring: Vec<(Arc<str>, std::time::Duration)>,
}

#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

/// Objects per shard by storage key: what the shards start with.
pub type Loaded = Vec<Vec<(Arc<str>, Arc<StoredObject>)>>;

/// A connected etcd backend, before the shards run: what the runtime
/// needs to start the mirror once their inboxes exist.
#[derive(Clone)]
pub struct Etcd {
    pub bridge: Bridge,
    expiring: Arc<[(Arc<str>, std::time::Duration)]>,
    /// The members, for the executors' own connections.
    endpoints: Arc<[String]>,
    asked: async_channel::Receiver<()>,
    resolve: Arc<dyn Resolve>,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Etcd")
    }
}

impl Etcd {
    /// Connects, and reads every object under the prefix: the shards'
    /// starting state and the revision it is at.
    pub fn open(
        cfg: &EtcdConfig,
        resolve: Arc<dyn Resolve>,
        shards: usize,
    ) -> Result<(Self, Loaded, u64), String> {
        let (bridge, asked) = Bridge::connect(cfg)?;
        if let Some(every) = cfg.compaction {
            bridge.spawn(compactor::run(bridge.pool.clone(), every));
        }
        let (objects, revision) =
            futures_lite::future::block_on(mirror::load(&bridge, &*resolve, shards))?;
        let objects = objects
            .into_iter()
            .map(|part| {
                part.into_iter()
                    .map(|(info, obj)| (info.storage_key.clone(), obj))
                    .collect()
            })
            .collect();
        Ok((
            Self {
                bridge,
                expiring: cfg.expiring.clone().into(),
                endpoints: cfg.endpoints.clone().into(),
                asked,
                resolve,
            },
            objects,
            revision,
        ))
    }

    /// Starts following etcd from after `revision` into the shards.
    pub fn follow(&self, inboxes: Vec<async_channel::Sender<ShardMsg>>, seq: Arc<Sequencer>) {
        let after = seq.current();
        let work = mirror::follow(
            self.bridge.clone(),
            self.resolve.clone(),
            inboxes,
            seq,
            after,
            self.asked.clone(),
        );
        self.bridge.spawn(work);
    }

    /// The writes of the executor this is called on.
    pub fn writer(&self) -> Writer {
        let local = grpc::Local::new(&self.endpoints, self.bridge.pool.clone());
        Writer::new(self.bridge.clone(), self.expiring.clone(), local)
    }
}
