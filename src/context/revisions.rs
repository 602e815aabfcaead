//! When revisions were current, so that a list snapshot expires with time
//! as kube's do when etcd compacts (every five minutes, whatever changed):
//! a continue token or an exact resourceVersion older than the history
//! window answers 410 even when nothing it lists has changed since, and
//! the client continues (inconsistently) or relists.
//!
//! Each executor samples the closed revision once a second and keeps the
//! samples of one window.

use kubeshard_shards::Shutdown;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

const SAMPLE_EVERY: Duration = Duration::from_secs(1);

pub struct RevisionClock {
    window: Duration,
    samples: RefCell<VecDeque<(Instant, u64)>>,
}

impl RevisionClock {
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            samples: RefCell::new(VecDeque::new()),
        }
    }

    /// Records that `revision` was closed at `at`; forgets samples older
    /// than the window that a newer old-enough sample replaces.
    pub fn record(&self, at: Instant, revision: u64) {
        let mut s = self.samples.borrow_mut();
        s.push_back((at, revision));
        // The oldest sample that is a window old is the one the floor
        // reads; every sample before it can go.
        if let Some(horizon) = at.checked_sub(self.window) {
            while s.get(1).is_some_and(|(second, _)| *second <= horizon) {
                s.pop_front();
            }
        }
    }

    /// The oldest revision a snapshot may still be at, at `now`: what was
    /// closed a window ago (0 while the server is younger than that).
    pub fn floor(&self, now: Instant) -> u64 {
        let Some(horizon) = now.checked_sub(self.window) else {
            return 0;
        };
        self.samples
            .borrow()
            .iter()
            .take_while(|(at, _)| *at <= horizon)
            .last()
            .map_or(0, |(_, rev)| *rev)
    }

    /// Samples `closed()` every second until shutdown.
    pub async fn run(self: Rc<Self>, closed: impl Fn() -> u64, shutdown: Shutdown) {
        while !shutdown.is_triggered() {
            self.record(Instant::now(), closed());
            futures_lite::future::or(glommio::timer::sleep(SAMPLE_EVERY), shutdown.wait()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_what_was_closed_a_window_ago() {
        let c = RevisionClock::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(c.floor(t0), 0);
        for s in 0..30u64 {
            let now = t0 + Duration::from_secs(s);
            c.record(now, 100 + s);
            // A window ago, 100 + s - 10 was closed; before that, nothing.
            let want = if s >= 10 { 100 + s - 10 } else { 0 };
            assert_eq!(c.floor(now), want, "at {s} s");
            // Samples older than needed are dropped, not the one needed.
            assert!(c.samples.borrow().len() <= 12);
        }
    }
}
