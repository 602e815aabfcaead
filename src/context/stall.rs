//! Cuts off watchers whose clients stopped reading, and responses still
//! being sent when their request's deadline passes.
//!
//! A watcher's memory is already bounded (it is a cursor; when the ring
//! trims past it, its stream ends at the next poll). But a client that
//! stops reading leaves its connection unwritable, hyper stops polling the
//! body, and the cursor is never polled again: the connection would stay
//! open forever. Each executor's sweeper looks once in a while at its
//! watchers and cuts off any that has had data to send but was not polled
//! for longer than `--watch-stall-timeout`: on HTTP/2 by resetting its
//! stream (the connection's other streams go on), on HTTP/1.1 by closing
//! its connection (see `serving::cut`).

use crate::serving::cut::Cut;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

/// What the sweeper knows about one watcher.
pub struct WatchState {
    last_poll: Cell<Instant>,
    /// The watcher returned data and has not been polled since: hyper has
    /// it in hand and is waiting to write.
    behind: Cell<bool>,
    cut: Option<Cut>,
}

/// A response that must be sent by a deadline.
pub struct Deadline {
    at: Instant,
    cut: Cut,
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
    deadlines: RefCell<Vec<Weak<Deadline>>>,
    timeout: Duration,
}

impl StallSweeper {
    pub fn new(timeout: Duration) -> Self {
        Self {
            watches: RefCell::new(Vec::new()),
            deadlines: RefCell::new(Vec::new()),
            timeout,
        }
    }

    pub fn register(&self, cut: Option<Cut>) -> Rc<WatchState> {
        let state = Rc::new(WatchState {
            last_poll: Cell::new(Instant::now()),
            behind: Cell::new(false),
            cut,
        });
        self.watches.borrow_mut().push(Rc::downgrade(&state));
        state
    }

    /// Cuts the response off if it is still being sent at `at`; dropping
    /// the returned handle (the response is done) forgets it.
    pub fn deadline(&self, cut: Cut, at: Instant) -> Rc<Deadline> {
        let d = Rc::new(Deadline { at, cut });
        self.deadlines.borrow_mut().push(Rc::downgrade(&d));
        d
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
                if let Some(c) = &state.cut {
                    tracing::info!(stalled_for = ?now.saturating_duration_since(state.last_poll.get()), "cutting off a watcher that stopped reading");
                    c.cut();
                    cut += 1;
                }
                return false;
            }
            true
        });
        self.deadlines.borrow_mut().retain(|d| {
            let Some(d) = d.upgrade() else {
                return false;
            };
            if now < d.at {
                return true;
            }
            tracing::info!("cutting off a response not sent within its request's deadline");
            d.cut.cut();
            cut += 1;
            false
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
    use crate::serving::abort::ConnAbort;
    use crate::serving::cut::StreamCancel;

    #[test]
    fn only_stalled_watchers_with_pending_data_are_cut() {
        let sweeper = StallSweeper::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let conn = || Some(Cut::Connection(ConnAbort::default()));
        let idle = sweeper.register(conn());
        let stuck = sweeper.register(conn());
        let busy = sweeper.register(conn());
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

    #[test]
    fn responses_past_their_deadline_are_cut_and_finished_ones_forgotten() {
        let sweeper = StallSweeper::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let (late, on_time, done) = (
            StreamCancel::default(),
            StreamCancel::default(),
            StreamCancel::default(),
        );
        let _late = sweeper.deadline(Cut::Stream(late.clone()), t0 + Duration::from_secs(1));
        let _on_time = sweeper.deadline(Cut::Stream(on_time.clone()), t0 + Duration::from_secs(60));
        drop(sweeper.deadline(Cut::Stream(done.clone()), t0));
        assert_eq!(sweeper.sweep(t0 + Duration::from_secs(2)), 1);
        assert!(late.is_cancelled());
        assert!(!on_time.is_cancelled() && !done.is_cancelled());
        assert_eq!(sweeper.deadlines.borrow().len(), 1);
    }
}
