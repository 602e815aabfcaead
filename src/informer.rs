//! Executor-local informers: keep some in-memory state current with a
//! resource by listing it once and then reading this executor's watch hub
//! in revision order, as a client-go informer does over a watch — but with
//! no connection and no copy: events are the hub's own.
//!
//! The security front end uses them for its RBAC index and its
//! service-account and bootstrap-token caches. Because the hub already
//! orders every shard's events, an index fed this way is a consistent
//! picture of the store as of the revision it has caught up to, and
//! [`Informers::catch_up`] lets a caller wait until that covers a revision
//! (read-your-writes for a denied request after a new binding).

use crate::storage::Storage;
use kubeshard_cache::index::{Cursor, Read};
use kubeshard_cache::{EventType, Filter, Hub, StoredObject};
use kubeshard_shards::store::ListRequest;
use kubeshard_shards::ExecutorContext;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// One change an informer hands to its sink.
pub enum Change<'a> {
    /// Forget everything from this informer (before a full relist).
    Reset,
    Upsert(&'a StoredObject),
    Delete(&'a StoredObject),
}

pub type Sink = Box<dyn FnMut(Change<'_>)>;

/// A sink that keeps `map` a copy of the informer's objects: each under
/// its `key` (objects without one are left out), as `value` makes it.
pub fn mirror<K, V>(
    map: Rc<RefCell<HashMap<K, V>>>,
    key: impl Fn(&StoredObject) -> Option<K> + 'static,
    value: impl Fn(&StoredObject) -> V + 'static,
) -> Sink
where
    K: Hash + Eq + 'static,
    V: 'static,
{
    Box::new(move |change| {
        let mut m = map.borrow_mut();
        match change {
            Change::Reset => m.clear(),
            Change::Upsert(o) => {
                if let Some(k) = key(o) {
                    m.insert(k, value(o));
                }
            }
            Change::Delete(o) => {
                if let Some(k) = key(o) {
                    m.remove(&k);
                }
            }
        }
    })
}

struct Informer {
    resource: Arc<str>,
    filter: Filter,
    /// None until the first list completed (and while relisting).
    cursor: Option<Cursor>,
    /// Events at or below the list's revision are already in the list.
    listed: u64,
    sink: Sink,
}

impl Informer {
    /// Applies every event the hub holds past the cursor. False when the
    /// cursor's position was trimmed (the informer must relist).
    fn drain(&mut self, hub: &mut Hub) -> bool {
        let Some(cursor) = self.cursor.as_mut() else {
            return true;
        };
        let ring = hub.ring(&self.resource);
        loop {
            match ring.read(cursor) {
                Read::Event(e) => {
                    if e.revision <= self.listed || !self.filter.matches(&e.object) {
                        continue;
                    }
                    match e.kind {
                        EventType::Deleted => (self.sink)(Change::Delete(&e.object)),
                        _ => (self.sink)(Change::Upsert(&e.object)),
                    }
                }
                Read::CaughtUp => return true,
                Read::Overwritten => return false,
            }
        }
    }
}

/// The informers of one executor.
#[derive(Default)]
pub struct Informers {
    all: RefCell<Vec<Rc<RefCell<Informer>>>>,
}

/// How long a caller may wait for the informers to reach a revision.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(2);

impl Informers {
    /// Starts keeping `sink` current with `resource` (objects `filter`
    /// matches) on this executor.
    pub fn start(&self, ctx: &Rc<ExecutorContext>, resource: Arc<str>, filter: Filter, sink: Sink) {
        let inf = Rc::new(RefCell::new(Informer {
            resource,
            filter,
            cursor: None,
            listed: 0,
            sink,
        }));
        self.all.borrow_mut().push(inf.clone());
        glommio::spawn_local(run(inf, ctx.clone())).detach();
    }

    /// True once every informer has listed and applied everything the hub
    /// released up to `revision`.
    fn caught_up(&self, hub: &RefCell<Hub>, revision: u64) -> bool {
        let mut h = hub.borrow_mut();
        if h.released() < revision {
            return false;
        }
        self.all.borrow().iter().all(|inf| {
            let mut inf = inf.borrow_mut();
            inf.cursor.is_some() && inf.drain(&mut h)
        })
    }

    /// Waits (briefly) until the informers cover `revision`; false when
    /// they did not get there in time.
    pub async fn catch_up(&self, hub: &RefCell<Hub>, revision: u64) -> bool {
        let deadline = Instant::now() + CATCH_UP_LIMIT;
        loop {
            if self.caught_up(hub, revision) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            glommio::timer::sleep(Duration::from_micros(200)).await;
        }
    }

    /// True once every informer has done its first list.
    pub fn synced(&self) -> bool {
        self.all
            .borrow()
            .iter()
            .all(|i| i.borrow().cursor.is_some())
    }
}

/// List, then follow the hub; relist when the hub's history no longer
/// reaches the informer's position.
async fn run(inf: Rc<RefCell<Informer>>, ctx: Rc<ExecutorContext>) {
    loop {
        if ctx.shutdown.is_triggered() {
            return;
        }
        let (resource, filter) = {
            let i = inf.borrow();
            (i.resource.clone(), i.filter.clone())
        };
        let revision = ctx.shards.progress();
        let req = ListRequest {
            resource: resource.clone(),
            filter: Arc::new(filter.clone()),
            revision,
            start_after: None,
            limit: 0,
            count_remaining: false,
        };
        let chunks = match ctx.shards.list(&req).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(%resource, error = ?e, "informer list failed; retrying");
                glommio::timer::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        {
            let mut i = inf.borrow_mut();
            (i.sink)(Change::Reset);
            for item in chunks.iter().flat_map(|c| c.items.iter()) {
                (i.sink)(Change::Upsert(item));
            }
            i.listed = revision;
            i.cursor = ctx
                .hub
                .borrow_mut()
                .ring(&resource)
                .cursor_after(&filter, revision)
                .ok();
            if i.cursor.is_none() {
                continue;
            }
        }
        let hub = ctx.hub.clone();
        let fell_behind = std::future::poll_fn(|cx| {
            let mut h = hub.borrow_mut();
            let mut i = inf.borrow_mut();
            if !i.drain(&mut h) {
                return Poll::Ready(());
            }
            if let Some(c) = &i.cursor {
                h.ring(&resource).wait(c, cx.waker());
            }
            Poll::Pending
        });
        futures_lite::future::or(fell_behind, ctx.shutdown.wait()).await;
        let mut i = inf.borrow_mut();
        if let Some(c) = i.cursor.take() {
            ctx.hub.borrow_mut().ring(&resource).release(&c);
        }
        if ctx.shutdown.is_triggered() {
            return;
        }
        tracing::info!(%resource, "informer fell behind the watch history; relisting");
    }
}
