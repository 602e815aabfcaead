//! `--storage etcd`: the shards loaded from etcd, and the catalog as the
//! etcd mirror's guide from keys back to kinds.

use super::StoreStart;
use kubeshard_core::catalog::{Catalog, ResourceInfo};
use kubeshard_shards::etcd::{Etcd, EtcdConfig, Resolve};
use kubeshard_shards::storage::StorageMode;
use kubeshard_shards::{Sequencer, StartState};
use std::sync::Arc;

/// Connects to etcd and reads the shards' starting state from it.
pub fn open(cfg: &EtcdConfig, shards: usize, catalog: &Arc<Catalog>) -> Result<StoreStart, String> {
    let started = std::time::Instant::now();
    let (etcd, loaded, revision) =
        Etcd::open(cfg, Arc::new(CatalogKinds(catalog.clone())), shards)?;
    tracing::info!(
        servers = ?cfg.endpoints,
        prefix = %cfg.prefix,
        objects = loaded.iter().map(Vec::len).sum::<usize>(),
        revision,
        elapsed = ?started.elapsed(),
        "loaded the watch cache from etcd"
    );
    let start = StartState {
        hub_start: revision,
        shards: Vec::new(),
        loaded,
    };
    Ok((
        StorageMode::Etcd(Box::new(etcd)),
        start,
        Arc::new(Sequencer::mirrored(shards, revision)),
        None,
    ))
}

/// Kinds by storage key, as the catalog has them now.
struct CatalogKinds(Arc<Catalog>);

impl Resolve for CatalogKinds {
    fn info(&self, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.0.snapshot().by_storage_key(resource).cloned()
    }

    fn unknown(&self, resource: &str, namespaced: bool) -> Arc<ResourceInfo> {
        let mut parts = resource.rsplit('/');
        let plural = parts.next().unwrap_or_default();
        let group = parts.next().unwrap_or_default();
        let mut info = ResourceInfo::new(group, "v1", "Unknown", plural, namespaced);
        info.storage_key = resource.into();
        Arc::new(info)
    }
}
