//! The bulk lane: where a connection waits between the parts of a large
//! body, so small requests on the same core go first.
//!
//! glommio runs ready tasks first in, first out, and looks for new input
//! only once none is ready (or when its preempt timer fires, every
//! 100 ms). A connection that had sent its turn's part of a LIST (see
//! [`super::turn`]) used to go straight back to the end of the run queue:
//! under a flood of large LISTs the queue seldom emptied, so a small
//! request's bytes sat unseen in its socket, and once read, its task — and
//! the shard it asked on the other core — waited behind every busy LIST's
//! next part, at each step. The other tenant's GET took 5–20 ms at p99
//! where it takes 1 ms alone (BENCHMARKS.md, the APF flood).
//!
//! Now such a connection waits here instead, and the lane lets one waiter
//! go per pass of the executor's loop. Each pass starts by polling for
//! input, and whatever that wakes runs before the released part, so a
//! small request waits for at most one part of someone else's body per
//! step. When nothing else is ready the passes follow each other at once:
//! a pass costs a non-blocking poll and a timer, against the tens of
//! microseconds a 256 KiB part takes to send.
//!
//! An executor opts in with [`install`] (the server does, for every
//! executor that serves); elsewhere — unit tests, bodies collected in
//! place — a waiting connection goes to the back of the run queue as
//! before.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::task::{Poll, Waker};
use std::time::Duration;

/// How far ahead the releaser's timer is set: any deadline in the future
/// makes it fire at the start of the executor's next pass, after the
/// input poll, which is the point.
const NEXT_PASS: Duration = Duration::from_micros(1);

#[derive(Default)]
struct Lane {
    waiting: VecDeque<Waker>,
    /// The releaser, while it waits for the lane to fill.
    releaser: Option<Waker>,
}

thread_local! {
    static LANE: RefCell<Option<Lane>> = const { RefCell::new(None) };
}

/// Gives this executor a lane, once; later calls do nothing.
pub fn install() {
    let fresh = LANE.with(|l| {
        let mut l = l.borrow_mut();
        let fresh = l.is_none();
        l.get_or_insert_with(Lane::default);
        fresh
    });
    if fresh {
        glommio::spawn_local(release()).detach();
    }
}

/// Queues the task behind `waker` for its next part of body; without a
/// lane on this executor, the task goes to the back of the run queue.
pub fn wait(waker: &Waker) {
    let queued = LANE.with(|l| match l.borrow_mut().as_mut() {
        Some(lane) => {
            lane.waiting.push_back(waker.clone());
            lane.releaser.take()
        }
        None => Some(waker.clone()),
    });
    if let Some(w) = queued {
        w.wake();
    }
}

/// Waits for a turn in this executor's lane when others wait there
/// (bodies are being sent): heavy work a request does at once, such as
/// gathering and joining a large LIST, then runs at the start of a pass
/// like a part of body, rather than in the middle of everyone's small
/// requests. With the lane empty it is ready at once.
pub async fn turn() {
    let mut queued = false;
    std::future::poll_fn(|cx| {
        if queued {
            return Poll::Ready(());
        }
        let busy = LANE.with(|l| l.borrow().as_ref().is_some_and(|l| !l.waiting.is_empty()));
        if !busy {
            return Poll::Ready(());
        }
        queued = true;
        wait(cx.waker());
        Poll::Pending
    })
    .await
}

/// Lets one waiter go per pass of the executor's loop, for as long as
/// the executor runs.
async fn release() {
    loop {
        std::future::poll_fn(|cx| {
            LANE.with(|l| {
                let mut l = l.borrow_mut();
                let lane = l.as_mut().expect("the releaser runs where a lane is");
                if lane.waiting.is_empty() {
                    lane.releaser = Some(cx.waker().clone());
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            })
        })
        .await;
        glommio::timer::sleep(NEXT_PASS).await;
        let next = LANE.with(|l| l.borrow_mut().as_mut().and_then(|l| l.waiting.pop_front()));
        if let Some(w) = next {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::body::{Body, MAX_PART};
    use crate::serving::turn::Turn;
    use bytes::{Buf, Bytes};
    use hyper::body::Body as _;
    use std::cell::Cell;
    use std::pin::Pin;
    use std::rc::Rc;

    /// Sends `body` part by part, as a connection's task does, counting
    /// the parts in `sent`.
    async fn send(mut body: Body, sent: Rc<Cell<usize>>) {
        Turn::new(std::future::poll_fn(move |cx| loop {
            match Pin::new(&mut body).poll_frame(cx) {
                Poll::Ready(Some(Ok(f))) => {
                    let _ = f.into_data().ok().map(|d| d.remaining());
                    sent.set(sent.get() + 1);
                }
                Poll::Ready(None) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        }))
        .await
    }

    /// Three connections send large bodies (parts of shared bytes, no
    /// real socket, so every part is ready at once and the run queue never
    /// empties by itself). A request whose input — here a timer, which the
    /// executor sees when it polls, as it sees a socket — arrives
    /// meanwhile must be served while they still send, not after.
    #[test]
    fn a_timer_woken_task_runs_between_the_parts_of_large_bodies() {
        const PARTS: usize = 4000;
        let ex = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
            .make()
            .expect("an executor");
        let (sent_when_served, total) = ex.run(async {
            install();
            let sent = Rc::new(Cell::new(0));
            let part = Bytes::from(vec![1u8; MAX_PART]);
            let senders: Vec<_> = (0..3)
                .map(|_| {
                    let len = (PARTS * MAX_PART) as u64;
                    let chunks = std::iter::repeat_n(part.clone(), PARTS).collect();
                    glommio::spawn_local(send(Body::Chunks { chunks, len }, sent.clone()))
                })
                .collect();
            let small = {
                let sent = sent.clone();
                glommio::spawn_local(async move {
                    glommio::timer::sleep(Duration::from_millis(2)).await;
                    sent.get()
                })
            };
            let served_at = small.await;
            for s in senders {
                s.await;
            }
            (served_at, sent.get())
        });
        assert_eq!(total, 3 * PARTS);
        assert!(
            sent_when_served < total / 2,
            "the small task ran after {sent_when_served} of {total} parts"
        );
    }

    /// A heavy step asked for while bodies wait runs in its turn, after
    /// the waiters ahead of it; with the lane empty it runs at once.
    #[test]
    fn a_turn_waits_behind_the_lane_only_when_someone_waits_there() {
        let ex = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
            .make()
            .expect("an executor");
        let order = ex.run(async {
            install();
            let order = Rc::new(RefCell::new(Vec::new()));
            turn().await;
            order.borrow_mut().push("alone");
            let ahead = {
                let order = order.clone();
                let mut waited = false;
                glommio::spawn_local(std::future::poll_fn(move |cx| {
                    if waited {
                        order.borrow_mut().push("waiter");
                        return Poll::Ready(());
                    }
                    waited = true;
                    wait(cx.waker());
                    Poll::Pending
                }))
            };
            // The waiter runs first and queues itself in the lane.
            futures_lite::future::yield_now().await;
            turn().await;
            order.borrow_mut().push("turn");
            ahead.await;
            Rc::try_unwrap(order).expect("one owner").into_inner()
        });
        assert_eq!(order, ["alone", "waiter", "turn"]);
    }

    #[test]
    fn without_a_lane_a_waiting_task_wakes_itself() {
        struct Count(std::sync::atomic::AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let count = std::sync::Arc::new(Count(Default::default()));
        wait(&Waker::from(count.clone()));
        assert_eq!(count.0.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
