//! Server CPU and memory from /proc, for `--server-pid`.
//!
//! CPU is utime+stime of the whole process (all threads), sampled before
//! and after a run, so the figure is what the server spent serving it.
//! Peak RSS is VmHWM: the high-water mark over the process's life, which
//! includes anything loaded before the run (say so when comparing).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// utime+stime of `pid`, in seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count
    // fields from the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 overall, 12 and 13 here.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some((utime + stime) as f64 / ticks)
}

/// A `kB` field of /proc/PID/status, in bytes.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// What the server spent during a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServerStats {
    pub pid: u32,
    /// CPU seconds (user + system) spent during the run.
    pub cpu_seconds: f64,
    /// cpu_seconds / wall seconds: 1.0 is one core busy.
    pub cpu_cores: f64,
    /// VmHWM at the end of the run.
    pub peak_rss_bytes: u64,
    /// VmRSS at the end of the run.
    pub rss_bytes: u64,
}

/// Sampled at the start of a run.
pub struct Sampler {
    pid: u32,
    cpu0: f64,
}

impl Sampler {
    /// None if the process cannot be read (gone, or not on Linux).
    pub fn start(pid: u32) -> Option<Sampler> {
        Some(Sampler {
            pid,
            cpu0: cpu_seconds(pid)?,
        })
    }

    pub fn finish(&self, wall: Duration) -> Option<ServerStats> {
        let cpu = cpu_seconds(self.pid)? - self.cpu0;
        Some(ServerStats {
            pid: self.pid,
            cpu_seconds: cpu,
            cpu_cores: cpu / wall.as_secs_f64().max(1e-9),
            peak_rss_bytes: status_kb(self.pid, "VmHWM")?,
            rss_bytes: status_kb(self.pid, "VmRSS")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process() {
        let me = std::process::id();
        let s = Sampler::start(me).expect("own /proc entry");
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let st = s.finish(Duration::from_secs(1)).unwrap();
        assert!(st.cpu_seconds >= 0.0);
        assert!(
            st.peak_rss_bytes >= st.rss_bytes / 2 && st.rss_bytes > 1 << 20,
            "{st:?}"
        );
        assert!(Sampler::start(u32::MAX).is_none());
    }
}
