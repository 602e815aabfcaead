//! A circuit breaker per webhook and executor: after a run of failed
//! calls (unreachable, timed out, nonsense answers) the webhook is not
//! called for a while, and every write it covers meets its failure policy
//! at once instead of each waiting out the timeout and holding a
//! connection slot. A single call then probes it; success closes the
//! circuit, failure keeps it open twice as long (up to a limit). Refusals
//! are answers, not failures.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Consecutive failures that open the circuit.
pub const TRIP_AFTER: u32 = 5;
const FIRST_OPEN: Duration = Duration::from_secs(1);
const MAX_OPEN: Duration = Duration::from_secs(30);

#[derive(Default)]
struct State {
    failures: u32,
    /// Calls are short-circuited until then (open), or it is the probe's
    /// deadline (half open).
    open_until: Option<Instant>,
    open_for: Duration,
    /// The failure that opened it, repeated to the writes it refuses.
    last_error: String,
}

/// What [`Circuits::after`] changed, for the metrics.
#[derive(Debug, PartialEq, Eq)]
pub enum Transition {
    None,
    Opened,
    Closed,
}

/// The circuits of one executor's webhooks, by webhook uid.
#[derive(Default)]
pub struct Circuits {
    states: HashMap<String, State>,
}

impl Circuits {
    /// Whether `uid` may be called now: Err with the reason when its
    /// circuit is open. Once the open period is over one call goes
    /// through as the probe; the others wait for its answer (or for the
    /// probe's own timeout).
    pub fn before(&mut self, uid: &str, now: Instant, timeout: Duration) -> Result<(), String> {
        let Some(state) = self.states.get_mut(uid) else {
            return Ok(());
        };
        match state.open_until {
            Some(until) if now < until => Err(format!(
                "{} (not called: {} consecutive calls failed; next attempt in {:.1}s)",
                state.last_error,
                state.failures,
                (until - now).as_secs_f64()
            )),
            Some(_) => {
                state.open_until = Some(now + timeout + Duration::from_millis(100));
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Records a call's outcome (Err: the failure).
    pub fn after(&mut self, uid: &str, now: Instant, outcome: Result<(), &str>) -> Transition {
        match outcome {
            Ok(()) => match self.states.remove(uid) {
                Some(s) if s.open_until.is_some() => Transition::Closed,
                _ => Transition::None,
            },
            Err(error) => {
                let state = self.states.entry(uid.to_string()).or_default();
                state.failures += 1;
                state.last_error = error.to_string();
                if state.open_until.is_some() {
                    state.open_for = (state.open_for * 2).min(MAX_OPEN);
                    state.open_until = Some(now + state.open_for);
                    Transition::None
                } else if state.failures >= TRIP_AFTER {
                    state.open_for = FIRST_OPEN;
                    state.open_until = Some(now + FIRST_OPEN);
                    Transition::Opened
                } else {
                    Transition::None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_a_run_of_failures_and_probes_before_closing() {
        let mut c = Circuits::default();
        let t0 = Instant::now();
        let timeout = Duration::from_secs(10);
        for i in 1..TRIP_AFTER {
            assert!(c.before("w/0", t0, timeout).is_ok());
            assert_eq!(c.after("w/0", t0, Err("refused")), Transition::None, "{i}");
        }
        // A success in between starts the count again.
        assert_eq!(c.after("w/0", t0, Ok(())), Transition::None);
        for _ in 1..TRIP_AFTER {
            c.after("w/0", t0, Err("refused"));
        }
        assert_eq!(c.after("w/0", t0, Err("refused")), Transition::Opened);
        let e = c.before("w/0", t0, timeout).unwrap_err();
        assert!(
            e.starts_with("refused (not called: 5 consecutive calls failed; next attempt in 1.0s)"),
            "{e}"
        );
        assert!(c.before("other/0", t0, timeout).is_ok());
        // After a second one probe goes; others wait for it.
        let t1 = t0 + Duration::from_millis(1001);
        assert!(c.before("w/0", t1, timeout).is_ok());
        assert!(c.before("w/0", t1, timeout).is_err());
        // The probe failed: open twice as long.
        assert_eq!(c.after("w/0", t1, Err("still refused")), Transition::None);
        assert!(c
            .before("w/0", t1 + Duration::from_millis(1500), timeout)
            .is_err());
        let t2 = t1 + Duration::from_millis(2001);
        assert!(c.before("w/0", t2, timeout).is_ok());
        assert_eq!(c.after("w/0", t2, Ok(())), Transition::Closed);
        assert!(c.before("w/0", t2, timeout).is_ok());
    }
}
