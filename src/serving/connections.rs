//! The open connections of one executor, under a limit the executors
//! share, and the sweep that closes the ones that overstay.
//!
//! Every accepted socket costs a file descriptor, and a client that never
//! authenticates costs the same as one that does. So that no flood of
//! such connections can lock the server out (descriptors exhausted,
//! `accept` failing, health checks and administrators refused):
//!
//! - the number of open connections is capped below the descriptor limit,
//!   keeping room for the data directory's files and for `accept` itself;
//! - at the cap, a new connection evicts the oldest one that has not
//!   authenticated anybody and has no request in flight (a TLS handshake
//!   in progress counts), so an administrator always gets in; only when no
//!   such connection exists is the new one refused;
//! - connections with no request in flight are closed after an idle
//!   timeout, and sooner when they started a request and never finished
//!   its headers (slowloris), as Go's `IdleTimeout` and
//!   `ReadHeaderTimeout` do for kube-apiserver.

use super::abort::ConnAbort;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long connections may sit idle.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// kube-apiserver's `IdleTimeout` (90 s): a connection with nothing in
    /// flight for this long is closed.
    pub idle: Duration,
    /// kube-apiserver's `ReadHeaderTimeout` (32 s): an HTTP/1.1
    /// connection that has sent part of a request but not its whole head
    /// for this long is closed.
    pub header: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(90),
            header: Duration::from_secs(32),
        }
    }
}

/// The cap on open connections, shared by every executor.
#[derive(Debug)]
pub struct ConnLimit {
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
}

impl ConnLimit {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// The cap derived from the process's descriptor limit: a tenth of it
    /// (at least 128) stays free for files, the listeners and `accept`.
    pub fn from_fd_limit(fd_limit: usize) -> Self {
        let reserve = (fd_limit / 10).max(128);
        Self::new(fd_limit.saturating_sub(reserve))
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections refused at the cap so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// The connection gauges, in the Prometheus text format.
pub fn metrics(limit: &ConnLimit) -> String {
    format!(
        "# HELP kubeshard_connections_open Client connections open (all executors).\n\
         # TYPE kubeshard_connections_open gauge\n\
         kubeshard_connections_open {}\n\
         # HELP kubeshard_connections_max The cap on open connections (--max-connections).\n\
         # TYPE kubeshard_connections_max gauge\n\
         kubeshard_connections_max {}\n\
         # HELP kubeshard_connections_refused Connections refused at the cap, with nothing to evict.\n\
         # TYPE kubeshard_connections_refused counter\n\
         kubeshard_connections_refused_total {}\n",
        limit.open(),
        limit.max(),
        limit.refused()
    )
}

/// What the server knows about one connection. Shared by the connection's
/// task, its IO adapter (reads), its requests (in flight, authenticated)
/// and the executor's registry (weakly).
#[derive(Debug)]
pub struct ConnState {
    opened: Instant,
    /// Requests whose responses are not finished.
    active: Cell<u32>,
    /// When the last request finished (or the connection opened).
    idle_since: Cell<Instant>,
    /// Bytes arrived while nothing was in flight: a request head is on its
    /// way (or, on HTTP/2, frames that open no stream).
    read_while_idle: Cell<bool>,
    /// A request on it authenticated a user other than anonymous.
    trusted: Cell<bool>,
    /// HTTP/2: control frames arrive while idle, so only the idle timeout
    /// applies.
    multiplexed: Cell<bool>,
    pub abort: ConnAbort,
    limit: Arc<ConnLimit>,
}

impl ConnState {
    /// A request started on this connection.
    pub fn request_started(self: &Rc<Self>) -> ActiveRequest {
        self.active.set(self.active.get() + 1);
        ActiveRequest(self.clone())
    }

    /// The IO adapter read `n` bytes.
    pub fn read(&self, n: usize) {
        if n > 0 && self.active.get() == 0 {
            self.read_while_idle.set(true);
        }
    }

    pub fn set_trusted(&self) {
        self.trusted.set(true);
    }

    pub fn set_multiplexed(&self) {
        self.multiplexed.set(true);
    }

    fn evictable(&self) -> bool {
        !self.trusted.get() && self.active.get() == 0
    }

    /// Why the sweep should close this connection now, if it should.
    fn overstayed(&self, now: Instant, t: &Timeouts) -> Option<&'static str> {
        if self.active.get() > 0 {
            return None;
        }
        let idle = now.saturating_duration_since(self.idle_since.get());
        if idle > t.idle {
            return Some("idle");
        }
        if idle > t.header && self.read_while_idle.get() && !self.multiplexed.get() {
            return Some("request head not finished");
        }
        None
    }
}

impl Drop for ConnState {
    fn drop(&mut self) {
        self.limit.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Held while a request's response is being produced or sent.
pub struct ActiveRequest(Rc<ConnState>);

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        let s = &self.0;
        s.active.set(s.active.get() - 1);
        if s.active.get() == 0 {
            s.idle_since.set(Instant::now());
            s.read_while_idle.set(false);
        }
    }
}

/// One executor's connections.
pub struct Connections {
    limit: Arc<ConnLimit>,
    timeouts: Timeouts,
    list: RefCell<Vec<Weak<ConnState>>>,
}

/// What to do with a newly accepted socket.
pub enum Admit {
    Serve(Rc<ConnState>),
    /// At the cap with nothing to evict: close it at once.
    Refuse,
}

impl Connections {
    pub fn new(limit: Arc<ConnLimit>, timeouts: Timeouts) -> Self {
        Self {
            limit,
            timeouts,
            list: RefCell::new(Vec::new()),
        }
    }

    /// Registers a new connection, evicting an untrusted idle one when the
    /// cap is reached.
    pub fn admit(&self, now: Instant) -> Admit {
        if self.limit.open.fetch_add(1, Ordering::Relaxed) >= self.limit.max && !self.evict_one() {
            self.limit.open.fetch_sub(1, Ordering::Relaxed);
            self.limit.refused.fetch_add(1, Ordering::Relaxed);
            return Admit::Refuse;
        }
        let state = Rc::new(ConnState {
            opened: now,
            active: Cell::new(0),
            idle_since: Cell::new(now),
            read_while_idle: Cell::new(false),
            trusted: Cell::new(false),
            multiplexed: Cell::new(false),
            abort: ConnAbort::default(),
            limit: self.limit.clone(),
        });
        let mut list = self.list.borrow_mut();
        // Forget closed connections now and then, not on every accept.
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(Rc::downgrade(&state));
        Admit::Serve(state)
    }

    /// Closes the oldest connection that has authenticated nobody and has
    /// nothing in flight; false when there is none. The descriptor comes
    /// back once its task has run, which is why a new connection may
    /// briefly take the cap one over.
    pub fn evict_one(&self) -> bool {
        let list = self.list.borrow();
        let victim = list
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| c.evictable() && !c.abort.is_aborted())
            .min_by_key(|c| c.opened);
        match victim {
            Some(c) => {
                c.abort.abort();
                true
            }
            None => false,
        }
    }

    /// Closes connections that overstayed; returns how many.
    pub fn sweep(&self, now: Instant) -> usize {
        let mut closed = 0;
        self.list.borrow_mut().retain(|w| {
            let Some(c) = w.upgrade() else {
                return false;
            };
            if let Some(why) = c.overstayed(now, &self.timeouts) {
                tracing::debug!(reason = why, "closing a connection");
                c.abort.close_idle();
                closed += 1;
                return false;
            }
            true
        });
        closed
    }

    /// Sweeps until shutdown, at a fraction of the header timeout (at most
    /// every second).
    pub async fn run(self: Rc<Self>, shutdown: kubeshard_shards::Shutdown) {
        let period =
            (self.timeouts.header / 4).clamp(Duration::from_millis(100), Duration::from_secs(1));
        while !shutdown.is_triggered() {
            futures_lite::future::or(glommio::timer::sleep(period), shutdown.wait()).await;
            self.sweep(Instant::now());
        }
    }
}

/// Raises the soft descriptor limit to the hard one (as Go's runtime does
/// for kube-apiserver) and returns it.
pub fn raise_fd_limit() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conns(max: usize) -> Connections {
        Connections::new(Arc::new(ConnLimit::new(max)), Timeouts::default())
    }

    fn served(a: Admit) -> Rc<ConnState> {
        match a {
            Admit::Serve(s) => s,
            Admit::Refuse => panic!("refused"),
        }
    }

    #[test]
    fn at_the_cap_the_oldest_untrusted_idle_connection_makes_room() {
        let c = conns(3);
        let t = Instant::now();
        let admin = served(c.admit(t));
        admin.set_trusted();
        let busy = served(c.admit(t));
        let _req = busy.request_started();
        let idle = served(c.admit(t + Duration::from_secs(1)));
        // Full: the idle, untrusted one goes.
        let newer = served(c.admit(t + Duration::from_secs(2)));
        assert!(idle.abort.is_aborted());
        assert!(!admin.abort.is_aborted() && !busy.abort.is_aborted());
        drop(idle);
        // Full again and nothing evictable but `newer`: it goes next.
        let newest = served(c.admit(t + Duration::from_secs(3)));
        assert!(newer.abort.is_aborted());
        drop(newer);
        newest.set_trusted();
        // Only trusted or busy connections left: refused, count unchanged.
        assert!(matches!(c.admit(t), Admit::Refuse));
        assert_eq!(c.limit.open(), 3);
        assert_eq!(c.limit.refused(), 1);
    }

    #[test]
    fn idle_and_unfinished_heads_time_out() {
        let c = conns(10);
        let t = Instant::now();
        let quiet = served(c.admit(t));
        let trickling = served(c.admit(t));
        trickling.read(10);
        let h2 = served(c.admit(t));
        h2.set_multiplexed();
        h2.read(10);
        let working = served(c.admit(t));
        let req = working.request_started();
        working.read(100);
        assert_eq!(c.sweep(t + Duration::from_secs(10)), 0);
        assert_eq!(
            c.sweep(t + Timeouts::default().header + Duration::from_secs(1)),
            1
        );
        assert!(trickling.abort.is_aborted());
        assert!(!quiet.abort.is_aborted() && !h2.abort.is_aborted());
        drop(req);
        // Idle since its request ended, and what it read while busy was no
        // unfinished head.
        assert_eq!(
            c.sweep(t + Timeouts::default().header + Duration::from_secs(2)),
            0
        );
        assert_eq!(
            c.sweep(t + Timeouts::default().idle + Duration::from_secs(2)),
            3
        );
        assert!(quiet.abort.is_aborted() && h2.abort.is_aborted() && working.abort.is_aborted());
    }
}
