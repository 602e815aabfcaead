//! Cutting one response off: a watch whose client stopped reading, or a
//! response still being sent when its request's deadline passes.
//!
//! An HTTP/1.1 response can only be cut by closing its connection (the
//! connection carries nothing else meanwhile). An HTTP/2 response is one
//! stream among many: it is cut by ending the task hyper runs that stream
//! in, which drops the stream's handles, and h2 then resets the stream
//! (RST_STREAM) while the connection's other streams go on.
//!
//! hyper spawns every HTTP/2 stream through [`super::io::LocalExec`],
//! which runs it under a [`StreamCancel`] and makes that handle the
//! "current stream" while the stream's task is polled; a request reads it
//! on its first poll ([`current_stream`]).

use super::abort::ConnAbort;
use atomic_waker::AtomicWaker;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// How to cut a request's response off. Carried in request extensions.
#[derive(Clone, Debug)]
pub enum Cut {
    Connection(ConnAbort),
    Stream(StreamCancel),
}

impl Cut {
    /// The cut for a request being served now: its HTTP/2 stream when it
    /// has one, else its connection.
    pub fn for_request(conn: &ConnAbort) -> Cut {
        match current_stream() {
            Some(s) => Cut::Stream(s),
            None => Cut::Connection(conn.clone()),
        }
    }

    pub fn cut(&self) {
        match self {
            Cut::Connection(c) => c.abort(),
            Cut::Stream(s) => s.cancel(),
        }
    }
}

/// Ends one HTTP/2 stream's task.
#[derive(Clone, Default, Debug)]
pub struct StreamCancel(Arc<CancelInner>);

#[derive(Default, Debug)]
struct CancelInner {
    cancelled: AtomicBool,
    waker: AtomicWaker,
}

impl StreamCancel {
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.waker.wake();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }
}

thread_local! {
    static CURRENT: RefCell<Option<StreamCancel>> = const { RefCell::new(None) };
}

/// The stream whose task is being polled on this thread, if any.
pub fn current_stream() -> Option<StreamCancel> {
    CURRENT.with_borrow(Clone::clone)
}

pin_project_lite::pin_project! {
    /// A stream's task: ends (dropping the stream) once cancelled.
    pub struct Cancellable<F> {
        #[pin]
        fut: F,
        cancel: StreamCancel,
    }
}

impl<F> Cancellable<F> {
    pub fn new(fut: F) -> Self {
        Self {
            fut,
            cancel: StreamCancel::default(),
        }
    }
}

impl<F: Future> Future for Cancellable<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.cancel.is_cancelled() {
            return Poll::Ready(None);
        }
        this.cancel.0.waker.register(cx.waker());
        let outer = CURRENT.with_borrow_mut(|c| c.replace(this.cancel.clone()));
        let out = this.fut.poll(cx);
        CURRENT.with_borrow_mut(|c| *c = outer);
        out.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future;

    #[test]
    fn a_stream_sees_its_own_handle_and_ends_when_cancelled() {
        let seen = std::rc::Rc::new(RefCell::new(None));
        let s = seen.clone();
        let task = Cancellable::new(async move {
            *s.borrow_mut() = current_stream();
            future::pending::<()>().await;
        });
        let handle = task.cancel.clone();
        let mut task = std::pin::pin!(task);
        future::block_on(async {
            assert!(future::poll_once(task.as_mut()).await.is_none());
            assert!(
                current_stream().is_none(),
                "only while the stream is polled"
            );
            let mine = seen.borrow().clone().expect("seen inside");
            assert!(Arc::ptr_eq(&mine.0, &handle.0));
            mine.cancel();
            assert_eq!(task.as_mut().await, None);
        });
    }
}
