//! Requests waiting for the closed revision to pass their write, so that
//! what a client wrote is in every list and watch it starts next.
//!
//! With a log, a write is durable when its shard's group is, but the
//! closed revision also waits for every other shard's earlier revisions to
//! become durable, typically one sync of the other shard later. Polling
//! for that (yielding, then sleeping on a 100 µs timer, over and over)
//! cost more CPU per create than the rest of the wait's bookkeeping by far
//! at 256 clients. Instead each waiter registers here under its revision,
//! and the executor's hub loop — which reads the closed revision whenever
//! an event batch arrives, and every 200 µs while events wait — wakes
//! exactly the waiters the closed revision has passed.

use crate::sequencer::Sequencer;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How often the hub loop looks for waiters past their deadline.
const EXPIRY_SCAN: Duration = Duration::from_millis(10);

struct Waiting {
    waker: Waker,
    deadline: Instant,
}

/// One executor's waiters, keyed by (revision, registration).
pub struct ClosedWaiters {
    waiting: RefCell<BTreeMap<(u64, u64), Waiting>>,
    registrations: Cell<u64>,
    next_expiry_scan: Cell<Instant>,
    /// The hub loop has ended (shutdown): nobody will wake a waiter again.
    ended: Cell<bool>,
}

impl Default for ClosedWaiters {
    fn default() -> Self {
        Self {
            waiting: RefCell::default(),
            registrations: Cell::new(0),
            next_expiry_scan: Cell::new(Instant::now()),
            ended: Cell::new(false),
        }
    }
}

impl ClosedWaiters {
    /// Wakes every waiter at or below `closed`, and (every
    /// [`EXPIRY_SCAN`]) those whose deadline has passed.
    pub fn advance(&self, closed: u64, now: Instant) {
        let mut woken = Vec::new();
        {
            let mut waiting = self.waiting.borrow_mut();
            if waiting.is_empty() {
                return;
            }
            let later = waiting.split_off(&(closed.saturating_add(1), 0));
            let passed = std::mem::replace(&mut *waiting, later);
            woken.extend(passed.into_values().map(|w| w.waker));
            if now >= self.next_expiry_scan.get() {
                self.next_expiry_scan.set(now + EXPIRY_SCAN);
                let expired: Vec<(u64, u64)> = waiting
                    .iter()
                    .filter(|(_, w)| w.deadline <= now)
                    .map(|(k, _)| *k)
                    .collect();
                for k in expired {
                    woken.extend(waiting.remove(&k).map(|w| w.waker));
                }
            }
        }
        for waker in woken {
            waker.wake();
        }
    }

    /// The hub loop is ending: every waiter, now and later, gives up.
    pub fn end(&self) {
        self.ended.set(true);
        let all = std::mem::take(&mut *self.waiting.borrow_mut());
        for w in all.into_values() {
            w.waker.wake();
        }
    }

    /// Resolves to true once `seq`'s closed revision reaches `revision`,
    /// false if `deadline` passes first.
    pub fn wait<'a>(
        &'a self,
        seq: &'a Sequencer,
        revision: u64,
        deadline: Instant,
    ) -> WaitClosed<'a> {
        WaitClosed {
            waiters: self,
            seq,
            revision,
            deadline,
            key: None,
        }
    }

    fn register(&self, key: &mut Option<(u64, u64)>, revision: u64, w: Waiting) {
        let k = *key.get_or_insert_with(|| {
            let n = self.registrations.get();
            self.registrations.set(n.wrapping_add(1));
            (revision, n)
        });
        self.waiting.borrow_mut().insert(k, w);
    }

    fn unregister(&self, key: &mut Option<(u64, u64)>) {
        if let Some(k) = key.take() {
            self.waiting.borrow_mut().remove(&k);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.borrow().len()
    }
}

/// See [`ClosedWaiters::wait`].
pub struct WaitClosed<'a> {
    waiters: &'a ClosedWaiters,
    seq: &'a Sequencer,
    revision: u64,
    deadline: Instant,
    key: Option<(u64, u64)>,
}

impl Future for WaitClosed<'_> {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = &mut *self;
        if this.seq.closed() >= this.revision {
            this.waiters.unregister(&mut this.key);
            return Poll::Ready(true);
        }
        if this.waiters.ended.get() || Instant::now() >= this.deadline {
            this.waiters.unregister(&mut this.key);
            return Poll::Ready(false);
        }
        let waiting = Waiting {
            waker: cx.waker().clone(),
            deadline: this.deadline,
        };
        this.waiters.register(&mut this.key, this.revision, waiting);
        Poll::Pending
    }
}

impl Drop for WaitClosed<'_> {
    fn drop(&mut self) {
        self.waiters.unregister(&mut self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(f: &mut WaitClosed<'_>, count: &Arc<Count>) -> Poll<bool> {
        let waker = Waker::from(count.clone());
        Pin::new(f).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn wakes_exactly_the_waiters_the_closed_revision_passed() {
        let seq = Sequencer::new(2, 0);
        let waiters = ClosedWaiters::default();
        let far = Instant::now() + Duration::from_secs(60);
        seq.begin(0);
        let (r1, r2) = (seq.next(), seq.next());
        let (c1, c2) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let mut w1 = waiters.wait(&seq, r1, far);
        let mut w2 = waiters.wait(&seq, r2, far);
        assert!(poll(&mut w1, &c1).is_pending());
        assert!(poll(&mut w2, &c2).is_pending());
        // Polled again: still one registration each.
        assert!(poll(&mut w1, &c1).is_pending());
        assert_eq!(waiters.len(), 2);
        seq.hold(0, r2);
        waiters.advance(seq.closed(), Instant::now());
        assert_eq!(c1.0.load(Ordering::SeqCst), 1);
        assert_eq!(c2.0.load(Ordering::SeqCst), 0);
        assert_eq!(poll(&mut w1, &c1), Poll::Ready(true));
        seq.end(0);
        waiters.advance(seq.closed(), Instant::now());
        assert_eq!(c2.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut w2, &c2), Poll::Ready(true));
        assert_eq!(waiters.len(), 0);
    }

    #[test]
    fn a_deadline_ends_the_wait_and_a_dropped_waiter_leaves() {
        let seq = Sequencer::new(1, 0);
        let waiters = ClosedWaiters::default();
        seq.begin(0);
        let r = seq.next();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let soon = Instant::now() + Duration::from_millis(1);
        let mut w = waiters.wait(&seq, r, soon);
        assert!(poll(&mut w, &count).is_pending());
        std::thread::sleep(Duration::from_millis(2));
        waiters.advance(seq.closed(), Instant::now() + EXPIRY_SCAN);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "woken at its deadline");
        assert_eq!(poll(&mut w, &count), Poll::Ready(false));
        let mut gone = waiters.wait(&seq, r, Instant::now() + Duration::from_secs(60));
        assert!(poll(&mut gone, &count).is_pending());
        drop(gone);
        assert_eq!(waiters.len(), 0);
    }
}
