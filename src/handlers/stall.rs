//! Cuts off watchers whose clients stopped reading.
//!
//! A watcher's memory is already bounded (it is a cursor; when the ring
//! trims past it, its stream ends at the next poll). But a client that
//! stops reading leaves its connection unwritable, hyper stops polling the
//! body, and the cursor is never polled again: the connection would stay
//! open forever. Each executor's sweeper looks once in a while at its
//! watchers and closes the connection of any that has had data to send but
//! was not polled for longer than `--watch-stall-timeout`.

use crate::serving::abort::ConnAbort;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

/// What the sweeper knows about one watcher.
pub struct WatchState {
    last_poll: Cell<Instant>,
    /// The watcher returned data and has not been polled since: hyper has
    /// it in hand and is waiting to write.
    behind: Cell<bool>,
    conn: Option<ConnAbort>,
}

impl WatchState {
    /// Called at every poll; `sent` says whether this poll produced data.
    pub fn polled(&self, now: Instant, sent: bool) {
        self.last_poll.set(now);
        self.behind.set(sent);
    }
}

pub struct StallSweeper {
    watches: RefCell<Vec<Weak<WatchState>>>,
    timeout: Duration,
}

impl StallSweeper {
    pub fn new(timeout: Duration) -> Self {
        Self {
            watches: RefCell::new(Vec::new()),
            timeout,
        }
    }

    pub fn register(&self, conn: Option<ConnAbort>) -> Rc<WatchState> {
        let state = Rc::new(WatchState {
            last_poll: Cell::new(Instant::now()),
            behind: Cell::new(false),
            conn,
        });
        self.watches.borrow_mut().push(Rc::downgrade(&state));
        state
    }

    /// Closes the connections of stalled watchers; forgets ended ones.
    /// Returns how many were cut off.
    pub fn sweep(&self, now: Instant) -> usize {
        let mut cut = 0;
        self.watches.borrow_mut().retain(|w| {
            let Some(state) = w.upgrade() else {
                return false;
            };
            let stalled = state.behind.get() && now.saturating_duration_since(state.last_poll.get()) > self.timeout;
            if stalled {
                if let Some(conn) = &state.conn {
                    tracing::info!(stalled_for = ?now.saturating_duration_since(state.last_poll.get()), "closing the connection of a watcher that stopped reading");
                    conn.abort();
                    cut += 1;
                }
                return false;
            }
            true
        });
        cut
    }

    /// Sweeps until shutdown, at a fraction of the timeout (at most 1 s).
    pub async fn run(self: Rc<Self>, shutdown: kubeshard_shards::Shutdown) {
        let period = (self.timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        while !shutdown.is_triggered() {
            glommio::timer::sleep(period).await;
            self.sweep(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stalled_watchers_with_pending_data_are_cut() {
        let sweeper = StallSweeper::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let idle = sweeper.register(Some(ConnAbort::default()));
        let stuck = sweeper.register(Some(ConnAbort::default()));
        let busy = sweeper.register(Some(ConnAbort::default()));
        idle.polled(t0, false);
        stuck.polled(t0, true);
        busy.polled(t0 + Duration::from_secs(15), true);
        assert_eq!(sweeper.sweep(t0 + Duration::from_secs(20)), 1);
        assert_eq!(
            sweeper.watches.borrow().len(),
            2,
            "the cut one is forgotten"
        );
        drop(idle);
        assert_eq!(sweeper.sweep(t0 + Duration::from_secs(21)), 0);
        assert_eq!(
            sweeper.watches.borrow().len(),
            1,
            "ended watchers are forgotten"
        );
    }
}
