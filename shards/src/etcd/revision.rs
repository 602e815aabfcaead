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
                let answer = bridge.revision().await;
                *self.last.borrow_mut() = Some((id, answer.clone()));
                self.running.set(false);
                self.finished.notify(usize::MAX);
                return answer;
            }
            let wake = self.finished.listen();
            if self.running.get() {
                wake.await;
            }
        }
    }
}
