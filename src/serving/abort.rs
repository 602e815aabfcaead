//! Lets the server end a connection from outside its task: a watch whose
//! client stopped reading holds its connection unwritable (hyper stops
//! polling a body it cannot write), a connection that overstayed its idle
//! time is closed by the sweep, and one that must make room at the
//! connection cap is evicted.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

const OPEN: u8 = 0;
const CLOSE_IDLE: u8 = 1;
const ABORTED: u8 = 2;

/// Carried in each request's extensions (so it must be Send + Sync).
#[derive(Clone, Default, Debug)]
pub struct ConnAbort(Arc<Inner>);

#[derive(Default, Debug)]
struct Inner {
    state: AtomicU8,
    event: event_listener::Event,
}

/// How a connection is to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It has nothing in flight: finish gracefully (HTTP/2 GOAWAY), then
    /// close.
    Idle,
    /// Close at once.
    Abort,
}

impl ConnAbort {
    pub fn abort(&self) {
        self.0.state.store(ABORTED, Ordering::SeqCst);
        self.0.event.notify(usize::MAX);
    }

    /// Asks an idle connection to close gracefully.
    pub fn close_idle(&self) {
        let _ = self
            .0
            .state
            .compare_exchange(OPEN, CLOSE_IDLE, Ordering::SeqCst, Ordering::SeqCst);
        self.0.event.notify(usize::MAX);
    }

    pub fn is_aborted(&self) -> bool {
        self.0.state.load(Ordering::SeqCst) != OPEN
    }

    fn ending(&self) -> Option<Ending> {
        match self.0.state.load(Ordering::SeqCst) {
            OPEN => None,
            CLOSE_IDLE => Some(Ending::Idle),
            _ => Some(Ending::Abort),
        }
    }

    /// Resolves once the connection was asked to end, with how.
    pub async fn wait(&self) -> Ending {
        loop {
            if let Some(e) = self.ending() {
                return e;
            }
            let listener = self.0.event.listen();
            if let Some(e) = self.ending() {
                return e;
            }
            listener.await;
        }
    }

    /// Resolves once the connection must close at once.
    pub async fn aborted(&self) {
        while self.wait().await != Ending::Abort {
            let listener = self.0.event.listen();
            if self.ending() == Some(Ending::Abort) {
                return;
            }
            listener.await;
        }
    }
}
