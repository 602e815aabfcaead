//! etcd's current revision for consistent reads, one quorum read for
//! many readers: a reader needs a revision read that *started* after it
//! arrived, so it joins the next read to start, and every reader that
//! arrived while one was in flight shares the one after it. At most one
//! read per executor is in flight, whatever the number of readers.

use super::bridge::Bridge;
use std::cell::{Cell, RefCell};

#[derive(Default)]
pub struct RevisionReads {
    /// The number the next read to start gets.
    next: Cell<u64>,
    running: Cell<bool>,
    /// The last read that finished: its number and answer.
    last: RefCell<Option<(u64, Result<u64, String>)>>,
    finished: event_listener::Event,
}

impl RevisionReads {
    pub async fn current(&self, bridge: &Bridge) -> Result<u64, String> {
        self.shared(|| bridge.revision()).await
    }

    /// A `read` that started after this call, shared with the readers
    /// that arrive while it runs.
    async fn shared<F, Fut>(&self, read: F) -> Result<u64, String>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<u64, String>>,
    {
        let ticket = self.next.get();
        loop {
            if let Some((id, answer)) = &*self.last.borrow() {
                if *id >= ticket {
                    return answer.clone();
                }
            }
            if !self.running.get() {
                let id = self.next.get();
                self.next.set(id + 1);
                self.running.set(true);
                // The reader making the read may be dropped mid-read (its
                // client left, its timeout passed): then the read is no
                // longer running, and a waiter starts the next one.
                let running = Running(self);
                let answer = read().await;
                *self.last.borrow_mut() = Some((id, answer.clone()));
                drop(running);
                return answer;
            }
            let wake = self.finished.listen();
            if self.running.get() {
                wake.await;
            }
        }
    }
}

/// Marks the read finished, however its reader ends.
struct Running<'a>(&'a RevisionReads);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.set(false);
        self.0.finished.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future;

    #[test]
    fn a_reader_dropped_mid_read_does_not_stall_the_others() {
        let reads = RevisionReads::default();
        let calls = Cell::new(0u64);
        // The first read never answers; the next answers its number.
        let read = || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move {
                if n == 1 {
                    future::pending::<()>().await;
                }
                Ok(n)
            }
        };
        future::block_on(async {
            let mut first = Box::pin(reads.shared(read));
            assert!(future::poll_once(first.as_mut()).await.is_none());
            let mut second = Box::pin(reads.shared(read));
            assert!(
                future::poll_once(second.as_mut()).await.is_none(),
                "it waits for the read under way"
            );
            drop(first);
            assert_eq!(future::poll_once(second.as_mut()).await, Some(Ok(2)));
        });
    }
}
