//! Lets a request end its whole connection: a watch whose client stopped
//! reading holds its connection unwritable, and only closing the
//! connection frees it (hyper stops polling a body it cannot write).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Carried in each request's extensions (so it must be Send + Sync).
#[derive(Clone, Default)]
pub struct ConnAbort(Arc<Inner>);

#[derive(Default)]
struct Inner {
    aborted: AtomicBool,
    event: event_listener::Event,
}

impl ConnAbort {
    pub fn abort(&self) {
        self.0.aborted.store(true, Ordering::SeqCst);
        self.0.event.notify(usize::MAX);
    }

    /// Resolves once `abort` was called.
    pub async fn wait(&self) {
        loop {
            if self.0.aborted.load(Ordering::SeqCst) {
                return;
            }
            let listener = self.0.event.listen();
            if self.0.aborted.load(Ordering::SeqCst) {
                return;
            }
            listener.await;
        }
    }
}
