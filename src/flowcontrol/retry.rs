//! The `Retry-After` a priority level's rejections carry, adapted to how
//! many it has been rejecting (kube's rule): it starts at one second and
//! doubles, up to 32, while drops in the last `retry_after` seconds
//! number at least three per second of it; it shrinks by one a second
//! when they fall below one per second. Clients that honour it back off
//! harder the longer an overload lasts.

use std::collections::VecDeque;

const MAX: u64 = 32;

#[derive(Debug)]
pub struct RetryAfter {
    value: u64,
    raised_at: u64,
    /// (unix second, drops in it), oldest first.
    history: VecDeque<(u64, u64)>,
}

impl Default for RetryAfter {
    fn default() -> Self {
        Self {
            value: 1,
            raised_at: 0,
            history: VecDeque::new(),
        }
    }
}

impl RetryAfter {
    /// Records a drop at `now` (unix seconds) and returns the value the
    /// rejection should carry.
    pub fn dropped(&mut self, now: u64) -> u64 {
        let new_second = self.history.back().is_none_or(|(s, _)| *s < now);
        if new_second {
            let recent: u64 = self
                .history
                .iter()
                .filter(|(s, _)| *s + self.value >= now && *s < now)
                .map(|(_, n)| n)
                .sum();
            if now.saturating_sub(self.raised_at) >= self.value && recent >= 3 * self.value {
                self.value = (self.value * 2).min(MAX);
                self.raised_at = now;
            } else if recent < self.value && self.value > 1 {
                self.value -= 1;
            }
            self.history.push_back((now, 1));
        } else if let Some((_, n)) = self.history.back_mut() {
            *n += 1;
        }
        let keep = (2 * self.value).min(MAX);
        while self.history.front().is_some_and(|(s, _)| *s + keep < now) {
            self.history.pop_front();
        }
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_under_sustained_drops_and_decays_after() {
        let mut r = RetryAfter::default();
        assert_eq!(r.dropped(100), 1);
        for _ in 0..5 {
            r.dropped(100);
        }
        // Six drops in the last second (≥ 3×1): doubled.
        assert_eq!(r.dropped(101), 2);
        for _ in 0..10 {
            r.dropped(101);
        }
        assert_eq!(r.dropped(103), 4, "11 drops within 2 s");
        // Quiet seconds later, one drop at a time: back down by one each.
        assert_eq!(r.dropped(200), 3);
        assert_eq!(r.dropped(201), 2);
        assert_eq!(r.dropped(210), 1);
    }
}
