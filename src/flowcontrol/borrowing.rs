//! Lending and borrowing between priority levels (kube's periodic
//! adjustment): every period each level's seat demand (seats executing
//! plus seats waiting, averaged over time) sets a target, and the seats
//! are shared out so each level gets the same fraction of its target,
//! within what it must keep (nominal minus lendable) and what it may take
//! (nominal plus its borrowing limit). The exempt level lends its unused
//! seats; seats it uses come off the top.

use super::dispatcher::Level;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// How often the limits are recomputed.
pub const PERIOD: std::time::Duration = std::time::Duration::from_secs(10);

/// A level's demand over the current period: its time integral (and of
/// its square, for the spread), its peak, and the smoothed envelope that
/// carries over between periods.
#[derive(Debug, Clone)]
pub struct Demand {
    since: Instant,
    at: Instant,
    value: usize,
    integral: f64,
    squares: f64,
    peak: usize,
    smoothed: f64,
}

impl Demand {
    pub fn new(now: Instant) -> Self {
        Self {
            since: now,
            at: now,
            value: 0,
            integral: 0.0,
            squares: 0.0,
            peak: 0,
            smoothed: 0.0,
        }
    }

    /// The demand is `value` from `now` on.
    pub fn observe(&mut self, now: Instant, value: usize) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        let v = self.value as f64;
        self.integral += v * dt;
        self.squares += v * v * dt;
        self.at = now;
        self.value = value;
        self.peak = self.peak.max(value);
    }

    /// Closes the period: (peak, smoothed envelope), and starts the next
    /// one from the current value.
    fn roll(&mut self, now: Instant) -> (usize, f64) {
        self.observe(now, self.value);
        let span = now.saturating_duration_since(self.since).as_secs_f64();
        let peak = self.peak;
        if span > 0.0 {
            let avg = self.integral / span;
            let var = (self.squares / span - avg * avg).max(0.0);
            let envelope = avg + var.sqrt();
            self.smoothed = envelope.max(0.977 * self.smoothed + 0.023 * envelope);
        }
        self.since = now;
        self.integral = 0.0;
        self.squares = 0.0;
        self.peak = self.value;
        (peak, self.smoothed)
    }
}

/// The new seat limit of every limited level.
pub fn allocate(levels: &mut HashMap<Arc<str>, Level>, now: Instant) -> Vec<(Arc<str>, usize)> {
    let total: usize = levels.values().map(|l| l.nominal).sum();
    let mut reserved = 0usize;
    // (name, lower, upper, target, floor)
    let mut items: Vec<(Arc<str>, f64, f64, f64, usize)> = Vec::new();
    for (name, level) in levels.iter_mut() {
        let (peak, smoothed) = level.demand.roll(now);
        if level.spec.exempt {
            reserved += level.lower.max(peak);
            continue;
        }
        let floor = level.lower;
        let lower = floor.max(level.nominal.min(peak));
        let target = (lower as f64).max(smoothed);
        items.push((
            name.clone(),
            lower as f64,
            level.upper as f64,
            target,
            floor,
        ));
    }
    let remaining = total.saturating_sub(reserved) as f64;
    let floors: f64 = items.iter().map(|i| i.4 as f64).sum();
    let lowers: f64 = items.iter().map(|i| i.1).sum();
    let alloc: Vec<f64> = if remaining <= floors {
        items.iter().map(|i| i.4 as f64).collect()
    } else if remaining <= lowers {
        let frac = (remaining - floors) / (lowers - floors).max(f64::EPSILON);
        items
            .iter()
            .map(|i| i.4 as f64 + ((i.1 - i.4 as f64) * frac).round())
            .collect()
    } else {
        fair_shares(&items, remaining)
    };
    items
        .iter()
        .zip(alloc)
        .map(|(i, a)| (i.0.clone(), (a.round() as usize).max(1)))
        .collect()
}

/// The allocation where every level gets the same proportion of its
/// target, clamped to its bounds, summing to `required` (found by
/// bisection on the proportion: the clamped sum only grows with it).
fn fair_shares(items: &[(Arc<str>, f64, f64, f64, usize)], required: f64) -> Vec<f64> {
    let at = |p: f64| -> Vec<f64> {
        items
            .iter()
            .map(|i| (p * i.3.max(0.001)).clamp(i.1, i.2))
            .collect()
    };
    let sum = |p: f64| at(p).iter().sum::<f64>();
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while sum(hi) < required && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..64 {
        let mid = (lo + hi) / 2.0;
        if sum(mid) < required {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    at(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, lower: f64, upper: f64, target: f64) -> (Arc<str>, f64, f64, f64, usize) {
        (name.into(), lower, upper, target, lower as usize)
    }

    #[test]
    fn idle_seats_go_to_the_busy_level() {
        let items = [item("busy", 5.0, 100.0, 80.0), item("idle", 2.0, 40.0, 2.0)];
        let got = fair_shares(&items, 50.0);
        assert!((got.iter().sum::<f64>() - 50.0).abs() < 1e-6);
        assert!(got[0] > 45.0, "{got:?}");
        assert!(got[1] >= 2.0);
    }

    #[test]
    fn bounds_hold_when_demand_exceeds_them() {
        let items = [item("a", 5.0, 10.0, 100.0), item("b", 5.0, 100.0, 100.0)];
        let got = fair_shares(&items, 60.0);
        assert_eq!(got[0], 10.0);
        assert!((got[1] - 50.0).abs() < 1e-6);
    }

    #[test]
    fn demand_envelope_is_mean_plus_spread() {
        let t0 = Instant::now();
        let mut d = Demand::new(t0);
        d.observe(t0, 10);
        d.observe(t0 + std::time::Duration::from_secs(5), 0);
        let (peak, smoothed) = d.roll(t0 + std::time::Duration::from_secs(10));
        assert_eq!(peak, 10);
        // mean 5, standard deviation 5: envelope 10.
        assert!((smoothed - 10.0).abs() < 1e-9, "{smoothed}");
    }
}
