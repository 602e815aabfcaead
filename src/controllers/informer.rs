//! An in-process informer over every stored resource: a consistent list of
//! everything through the shards, then the executor's merged event stream
//! (the hub's per-resource rings) read as cursors — what a client-go
//! informer does over list + watch, without the HTTP.
//!
//! Batches come out in revision order, each one a consistent cut (the hub
//! releases events to its rings in revision order up to the closed
//! revision), so a controller's view is always the store at some revision.
//! When a cursor falls off its ring (the controller was too slow) or the
//! catalog changes, the informer lists again and says so: the controller
//! rebuilds its state from the new list, as a client-go informer resyncs
//! after a 410.

use crate::storage::{status, Storage, StorageError};
use kubeshard_cache::index::{Cursor, Read};
use kubeshard_cache::{EventType, Filter, StoredObject};
use kubeshard_core::catalog::CatalogReader;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::ListRequest;
use kubeshard_shards::ExecutorContext;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

/// How long a relist waits before trying again when history moved on
/// under it.
const RELIST_PAUSE: Duration = Duration::from_millis(10);

/// One observed change of one object.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resource's storage key.
    pub resource: Arc<str>,
    pub kind: EventType,
    /// The object after the change (its last state for a deletion).
    pub object: Arc<StoredObject>,
    /// The object before the change, when known.
    pub prev: Option<Arc<StoredObject>>,
}

/// What the informer hands its controllers.
pub enum Batch {
    /// The full current state (as ADDED changes): forget everything and
    /// start over from this.
    Relisted(Vec<Change>),
    /// Changes since the previous batch, in revision order.
    Changes(Vec<Change>),
}

struct Stream {
    resource: Arc<str>,
    cursor: Cursor,
    /// Events at or below this were in the list.
    listed_at: u64,
}

pub struct Informer {
    exec: Rc<ExecutorContext>,
    catalog: CatalogReader,
    streams: Vec<Stream>,
    /// The catalog's resources when the streams were opened.
    resources: Vec<Arc<str>>,
    stale: bool,
}

impl Informer {
    pub fn new(exec: Rc<ExecutorContext>, catalog: CatalogReader) -> Self {
        Self {
            exec,
            catalog,
            streams: Vec::new(),
            resources: Vec::new(),
            stale: true,
        }
    }

    /// The next batch, or None when nothing happened within `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Result<Option<Batch>, ApiError> {
        if self.stale || self.catalog_changed() {
            return self.relist().await.map(Some);
        }
        let changes = self.drain();
        if self.stale {
            return self.relist().await.map(Some);
        }
        if !changes.is_empty() {
            return Ok(Some(Batch::Changes(changes)));
        }
        let woken = futures_lite::future::or(
            async {
                self.wait_for_events().await;
                true
            },
            async {
                glommio::timer::sleep(timeout).await;
                false
            },
        )
        .await;
        if !woken {
            return Ok(None);
        }
        let changes = self.drain();
        if self.stale {
            return self.relist().await.map(Some);
        }
        Ok((!changes.is_empty()).then_some(Batch::Changes(changes)))
    }

    /// The storage keys of every resource the catalog serves now.
    fn stored_keys(&self) -> Vec<Arc<str>> {
        self.catalog
            .current()
            .stored_resources()
            .iter()
            .map(|r| r.storage_key.clone())
            .collect()
    }

    fn catalog_changed(&self) -> bool {
        self.stored_keys() != self.resources
    }

    /// Lists every resource at one revision and positions a cursor on each
    /// resource's ring just after it.
    async fn relist(&mut self) -> Result<Batch, ApiError> {
        self.release_all();
        let resources = self.stored_keys();
        'attempt: loop {
            let revision = self.exec.shards.progress();
            let mut items = Vec::new();
            for resource in &resources {
                let req = ListRequest {
                    resource: resource.clone(),
                    filter: Arc::new(Filter::default()),
                    revision,
                    start_after: None,
                    limit: 0,
                    count_remaining: false,
                };
                let chunks = match self.exec.shards.list(&req).await {
                    Ok(c) => c,
                    // History moved on while listing: list again, newer —
                    // after a pause. Failing fast, the retry would never
                    // give the executor back, so the writes that have to
                    // land before a list can succeed never would.
                    Err(StorageError::TooOld { .. }) => {
                        glommio::timer::sleep(RELIST_PAUSE).await;
                        continue 'attempt;
                    }
                    Err(e) => return Err(status(e)),
                };
                for object in chunks.into_iter().flat_map(|c| c.items) {
                    items.push(Change {
                        resource: resource.clone(),
                        kind: EventType::Added,
                        object,
                        prev: None,
                    });
                }
            }
            let Some(streams) = self.cursors_after(&resources, revision) else {
                glommio::timer::sleep(RELIST_PAUSE).await;
                continue 'attempt;
            };
            self.streams = streams;
            self.resources = resources;
            self.stale = false;
            return Ok(Batch::Relisted(items));
        }
    }

    /// A cursor on each resource's ring just after `revision`, or None
    /// (holding none) when a ring no longer reaches back to it.
    fn cursors_after(&self, resources: &[Arc<str>], revision: u64) -> Option<Vec<Stream>> {
        let mut hub = self.exec.hub.borrow_mut();
        let mut streams = Vec::with_capacity(resources.len());
        for resource in resources {
            match hub
                .ring(resource)
                .cursor_after(&Filter::default(), revision)
            {
                Ok(cursor) => streams.push(Stream {
                    resource: resource.clone(),
                    cursor,
                    listed_at: revision,
                }),
                Err(_) => {
                    for s in &streams {
                        hub.ring(&s.resource).release(&s.cursor);
                    }
                    return None;
                }
            }
        }
        Some(streams)
    }

    /// Every event released to the rings so far, in revision order; marks
    /// the informer stale when a cursor was overtaken.
    fn drain(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        let mut hub = self.exec.hub.borrow_mut();
        for s in &mut self.streams {
            let ring = hub.ring(&s.resource);
            loop {
                match ring.read(&mut s.cursor) {
                    Read::Event(e) => {
                        if e.revision <= s.listed_at {
                            continue;
                        }
                        out.push((
                            e.revision,
                            Change {
                                resource: s.resource.clone(),
                                kind: e.kind,
                                object: e.object.clone(),
                                prev: e.prev.clone(),
                            },
                        ));
                    }
                    Read::CaughtUp => break,
                    Read::Overwritten => {
                        tracing::info!(
                            resource = %s.resource,
                            "controllers fell behind the event history; listing again"
                        );
                        self.stale = true;
                        break;
                    }
                }
            }
        }
        out.sort_by_key(|(rev, _)| *rev);
        out.into_iter().map(|(_, c)| c).collect()
    }

    /// Resolves once any stream's ring has a new event.
    fn wait_for_events(&self) -> impl Future<Output = ()> + '_ {
        let mut registered = false;
        std::future::poll_fn(move |cx| {
            if registered {
                return Poll::Ready(());
            }
            let mut hub = self.exec.hub.borrow_mut();
            for s in &self.streams {
                hub.ring(&s.resource).wait(&s.cursor, cx.waker());
            }
            registered = true;
            Poll::Pending
        })
    }

    fn release_all(&mut self) {
        let mut hub = self.exec.hub.borrow_mut();
        for s in self.streams.drain(..) {
            hub.ring(&s.resource).release(&s.cursor);
        }
    }
}

impl Drop for Informer {
    fn drop(&mut self) {
        self.release_all();
    }
}
