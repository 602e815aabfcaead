//! One coarse timer per executor for request deadlines.
//!
//! A glommio timer per request costs ~10% of GET throughput (see
//! RUNTIME-NOTES), so deadlines share one timer: a request registers its
//! deadline in a list that a single task sweeps every [`TICK`] while
//! anything is registered. Deadlines fire up to one tick late, which a
//! 60-second budget does not notice.

use kubeshard_core::status::ApiError;
use kubeshard_shards::Shutdown;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(50);

pin_project_lite::pin_project! {
    /// A handler's future under a deadline (see [`CoarseTimer::limit`]).
    pub struct Limited<F> {
        #[pin]
        fut: F,
        deadline: Rc<Deadline>,
    }
}

impl<F: Future> Future for Limited<F> {
    type Output = Result<F::Output, ApiError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.fut.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        if this.deadline.fired.get() {
            return Poll::Ready(Err(ApiError::timeout(
                "request did not complete within requested timeout - context deadline exceeded",
                0,
            )));
        }
        *this.deadline.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

struct Deadline {
    fired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

#[derive(Default)]
pub struct CoarseTimer {
    pending: RefCell<Vec<(Instant, Weak<Deadline>)>>,
    armed: event_listener::Event,
}

impl CoarseTimer {
    /// Registers a deadline at (or up to one tick after) `at`.
    fn deadline(&self, at: Instant) -> Rc<Deadline> {
        let d = Rc::new(Deadline {
            fired: Cell::new(false),
            waker: RefCell::new(None),
        });
        let was_empty = {
            let mut p = self.pending.borrow_mut();
            p.push((at, Rc::downgrade(&d)));
            p.len() == 1
        };
        if was_empty {
            self.armed.notify(1);
        }
        d
    }

    /// Runs `fut`, or gives up with 504 once `limit` has passed.
    ///
    /// A plain struct rather than an async block around `fut`: an async
    /// wrapper keeps the handler's future once as its argument and again
    /// inside its body, and the request future (which hyper moves) tripled
    /// to ~17 KB around a 5.6 KB handler.
    pub fn limit<F: Future>(&self, limit: Duration, fut: F) -> Limited<F> {
        Limited {
            fut,
            deadline: self.deadline(Instant::now() + limit),
        }
    }

    /// Fires expired deadlines and drops abandoned ones.
    fn sweep(&self, now: Instant) {
        self.pending.borrow_mut().retain(|(at, d)| {
            let Some(d) = d.upgrade() else {
                return false;
            };
            if *at > now {
                return true;
            }
            d.fired.set(true);
            if let Some(w) = d.waker.borrow_mut().take() {
                w.wake();
            }
            false
        });
    }

    /// The sweeper: ticks while deadlines are registered, sleeps otherwise.
    pub async fn run(self: Rc<Self>, shutdown: Shutdown) {
        while !shutdown.is_triggered() {
            if self.pending.borrow().is_empty() {
                let listener = self.armed.listen();
                if self.pending.borrow().is_empty() {
                    futures_lite::future::or(listener, shutdown.wait()).await;
                    continue;
                }
            }
            glommio::timer::sleep(TICK).await;
            self.sweep(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_fires_expired_and_drops_abandoned() {
        use futures_lite::future::{pending, ready};
        let t = CoarseTimer::default();
        let expired = t.limit(Duration::ZERO, pending::<()>());
        let later = t.limit(Duration::from_secs(60), pending::<()>());
        drop(t.limit(Duration::ZERO, pending::<()>()));
        t.sweep(Instant::now());
        assert_eq!(t.pending.borrow().len(), 1);
        let waker = futures_lite::future::block_on(std::future::poll_fn(|cx| {
            Poll::Ready(cx.waker().clone())
        }));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut expired = std::pin::pin!(expired);
        match expired.as_mut().poll(&mut cx) {
            Poll::Ready(Err(e)) => assert_eq!(e.code, 504),
            other => panic!("expected a timeout, got {:?}", other.map(|r| r.is_ok())),
        }
        let mut later = std::pin::pin!(later);
        assert!(later.as_mut().poll(&mut cx).is_pending());
        // A handler that is done wins, even past its deadline.
        let done = t.limit(Duration::ZERO, ready(7));
        t.sweep(Instant::now());
        let mut done = std::pin::pin!(done);
        assert!(matches!(done.as_mut().poll(&mut cx), Poll::Ready(Ok(7))));
    }
}
