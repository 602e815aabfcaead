//! A controller work queue: each key at most once, failed keys retried
//! later with exponential backoff (client-go's rate-limited queue, for one
//! thread).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

const FIRST_BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

pub struct WorkQueue<K> {
    ready: VecDeque<K>,
    queued: HashSet<K>,
    delayed: Vec<(Instant, K)>,
    failures: HashMap<K, u32>,
}

impl<K: Eq + Hash + Clone> Default for WorkQueue<K> {
    fn default() -> Self {
        Self {
            ready: VecDeque::new(),
            queued: HashSet::new(),
            delayed: Vec::new(),
            failures: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone> WorkQueue<K> {
    /// Queues `key` unless it is queued already.
    pub fn add(&mut self, key: K) {
        if self.queued.insert(key.clone()) {
            self.ready.push_back(key);
        }
    }

    /// Queues `key` once `delay` has passed.
    pub fn add_after(&mut self, key: K, delay: Duration) {
        self.delayed.push((Instant::now() + delay, key));
    }

    /// Queues `key` again after a backoff that doubles with each failure.
    pub fn retry(&mut self, key: K) {
        let n = self.failures.entry(key.clone()).or_insert(0);
        let delay = FIRST_BACKOFF
            .saturating_mul(1u32 << (*n).min(16))
            .min(MAX_BACKOFF);
        *n += 1;
        self.add_after(key, delay);
    }

    /// `key` succeeded: its next failure starts from the first backoff.
    pub fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// The next key due, if any.
    pub fn pop(&mut self) -> Option<K> {
        let now = Instant::now();
        let mut i = 0;
        while i < self.delayed.len() {
            if self.delayed[i].0 <= now {
                let (_, key) = self.delayed.swap_remove(i);
                self.add(key);
            } else {
                i += 1;
            }
        }
        let key = self.ready.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }

    /// How long until a delayed key is due (None when none waits).
    pub fn next_due(&self) -> Option<Duration> {
        let now = Instant::now();
        self.delayed
            .iter()
            .map(|(at, _)| at.saturating_duration_since(now))
            .min()
    }

    pub fn is_idle(&self) -> bool {
        self.ready.is_empty()
    }

    /// Drops everything (the controller is starting over).
    pub fn clear(&mut self) {
        self.ready.clear();
        self.queued.clear();
        self.delayed.clear();
        self.failures.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_queued_once_and_retried_later() {
        let mut q = WorkQueue::default();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.pop(), Some("a"));
        assert_eq!(q.pop(), Some("b"));
        assert_eq!(q.pop(), None);
        q.retry("a");
        assert!(q.next_due().is_some());
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(q.pop(), Some("a"));
        q.retry("a");
        q.retry("a");
        assert!(q.next_due().unwrap() <= Duration::from_millis(20));
        q.forget(&"a");
        q.clear();
        assert!(q.is_idle() && q.next_due().is_none());
    }
}
