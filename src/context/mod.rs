//! The per-executor server context: what every layer above storage needs
//! on one executor (the engine, the catalog, the configuration, the
//! admission chain, the security state, the watch and connection
//! bookkeeping). It routes nothing: the handlers route (`impl Api` in
//! `handlers`), the filters and the registry read it.

pub mod revisions;
pub mod stall;

use crate::admission::Admission;
use crate::config::ServerConfig;
use crate::storage::Backend;
use kubeshard_core::catalog::CatalogReader;
use kubeshard_shards::{ExecutorContext, ShardClient, Shutdown};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Everything a handler needs, one per executor.
pub struct Api {
    pub exec: Rc<ExecutorContext>,
    pub catalog: CatalogReader,
    pub config: Arc<ServerConfig>,
    pub admission: Admission,
    /// This executor's watchers and large responses, for cutting off the
    /// ones that stall or overrun.
    pub stalls: Rc<stall::StallSweeper>,
    /// This executor's open connections.
    pub connections: Rc<crate::serving::connections::Connections>,
    /// When revisions were current (snapshots expire with time).
    pub revisions: Rc<revisions::RevisionClock>,
    /// Authentication, authorization and audit state of this executor.
    pub security: Rc<crate::security::Security>,
    ready: Arc<AtomicBool>,
}

impl Api {
    /// The catalog entry of a built-in resource (at v1), for the server's
    /// own reads and writes of it.
    pub fn builtin(
        &self,
        group: &str,
        plural: &str,
    ) -> Result<Arc<kubeshard_core::catalog::ResourceInfo>, kubeshard_core::status::ApiError> {
        self.catalog
            .current()
            .lookup(group, "v1", plural)
            .cloned()
            .ok_or_else(|| {
                kubeshard_core::status::ApiError::internal(&format!(
                    "{plural} missing from the catalog"
                ))
            })
    }

    pub fn new(
        exec: Rc<ExecutorContext>,
        catalog: CatalogReader,
        config: Arc<ServerConfig>,
        ready: Arc<AtomicBool>,
        security: Rc<crate::security::Security>,
    ) -> Self {
        let stall_timeout = config.watch_stall_timeout;
        let revisions = Rc::new(revisions::RevisionClock::new(config.history_window));
        let connections = Rc::new(crate::serving::connections::Connections::new(
            config.conn_limit.clone(),
            config.conn_timeouts,
        ));
        let admission = crate::admission::plugins::build(
            &config.admission,
            &crate::admission::plugins::PluginInit {
                ctx: &exec,
                informers: &security.informers,
                keys: &config.keys,
                security: &security,
            },
        );
        Self {
            exec,
            catalog,
            config,
            admission,
            stalls: Rc::new(stall::StallSweeper::new(stall_timeout)),
            connections,
            revisions,
            security,
            ready,
        }
    }

    /// The engine itself: its figures and revisions, for metrics and
    /// health. Reads and writes go through [`Self::storage`].
    pub fn shards(&self) -> &ShardClient {
        &self.exec.shards
    }

    /// The storage objects are read from and written to.
    pub fn storage(&self) -> &Backend {
        &self.exec.shards
    }

    pub fn shutdown(&self) -> &Shutdown {
        &self.exec.shutdown
    }

    pub fn mark_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Bootstrap done, this executor's authorization caches loaded, and
    /// not shutting down.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
            && self.security.informers.synced()
            && !self.shutdown().is_triggered()
    }
}
