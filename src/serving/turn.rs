//! How much of a response one connection sends per turn on its executor.
//!
//! Every connection is one task on its core's executor, and the executor
//! runs ready tasks one after the other. hyper keeps writing a response
//! for as long as the socket takes it (up to 16 parts of
//! [`super::body::MAX_PART`], 4 MiB, per poll), so under a flood of large
//! LISTs a small request that became ready meanwhile waited behind every
//! LIST connection's multi-megabyte turn: tens of milliseconds at p99
//! (BENCHMARKS.md, the APF flood). Like tokio's cooperative budget, a
//! connection's task now sends at most [`TURN_BYTES`] of body per poll and
//! then waits in its executor's bulk lane ([`super::lane`]) for its next
//! part; the parts are shared bytes, so waiting costs a wake-up, not a
//! copy.
//!
//! The budget is a per-thread counter that [`Turn`] fills when its task is
//! polled and empties again after: a body polled outside a turn (tests,
//! YAML conversion) is never held back.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Body bytes one connection's task hands hyper per poll: one part, so
/// a small request waits behind at most one part per busy connection.
pub const TURN_BYTES: usize = super::body::MAX_PART;

thread_local! {
    static LEFT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Whether the task being polled may send more body this turn. The first
/// part of a turn always goes, whatever its size, so a body always makes
/// progress.
pub fn has_room() -> bool {
    LEFT.with(|l| l.get() > 0)
}

/// Counts `bytes` of body against this turn.
pub fn spend(bytes: usize) {
    LEFT.with(|l| l.set(l.get().saturating_sub(bytes)));
}

pin_project_lite::pin_project! {
    /// Runs a connection's (or an HTTP/2 stream's) future with a fresh
    /// budget on every poll.
    pub struct Turn<F> {
        #[pin]
        fut: F,
    }
}

impl<F: Future> Turn<F> {
    pub fn new(fut: F) -> Self {
        Self { fut }
    }
}

impl<F: Future> Future for Turn<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Restores "no limit" however the poll ends, panics included.
        struct Unlimited;
        impl Drop for Unlimited {
            fn drop(&mut self) {
                LEFT.with(|l| l.set(usize::MAX));
            }
        }
        LEFT.with(|l| l.set(TURN_BYTES));
        let _reset = Unlimited;
        self.project().fut.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    #[test]
    fn a_turn_has_one_part_of_room_and_outside_there_is_no_limit() {
        assert!(has_room());
        spend(usize::MAX / 2);
        assert!(has_room(), "outside a turn nothing is held back");
        LEFT.with(|l| l.set(usize::MAX));

        let mut seen = Vec::new();
        let turn = Turn::new(std::future::poll_fn(|_| {
            seen.push(has_room());
            spend(TURN_BYTES - 1);
            seen.push(has_room());
            spend(1);
            seen.push(has_room());
            Poll::Ready(())
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(std::pin::pin!(turn).poll(&mut cx).is_ready());
        assert_eq!(seen, [true, true, false]);
        assert!(has_room(), "the turn's end lifts the limit");
        assert_eq!(LEFT.with(Cell::get), usize::MAX);
    }
}
