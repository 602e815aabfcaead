//! The progress bar shown while a phase runs (stderr, only on a terminal).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A bar over either an operation count or a duration; operations done so
/// far are counted either way and shown with their rate.
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    done: Arc<AtomicU64>,
    by_time: bool,
}

impl Progress {
    /// `count` wins over `duration` as the bar's length when both are set.
    pub fn new(label: &str, count: Option<u64>, duration: Option<Duration>, quiet: bool) -> Self {
        let by_time = count.is_none();
        let len = match count {
            Some(c) => c,
            None => duration.map_or(0, |d| d.as_millis() as u64),
        };
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(5))
        };
        let tmpl = if by_time {
            "{prefix:>10} [{bar:30}] {elapsed:>4} {msg}"
        } else {
            "{prefix:>10} [{bar:30}] {pos}/{len} {per_sec} {msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(tmpl)
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Self {
            bar,
            done: Arc::default(),
            by_time,
        }
    }

    pub fn hidden() -> Self {
        Self::new("", Some(0), None, true)
    }

    /// One more operation completed.
    pub fn inc(&self) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.by_time {
            self.bar.set_position(n);
        }
    }

    /// Called periodically by the scheduler with the elapsed time.
    pub fn tick(&self, elapsed: Duration) {
        let n = self.done.load(Ordering::Relaxed);
        if self.by_time {
            self.bar
                .set_position((elapsed.as_millis() as u64).min(self.bar.length().unwrap_or(0)));
            let rate = n as f64 / elapsed.as_secs_f64().max(1e-3);
            self.bar.set_message(format!("{n} ops, {rate:.0}/s"));
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
