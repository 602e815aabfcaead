//! A pool of ports (Services' node ports): which of a range are taken,
//! shared by every executor under one lock (writes that draw from it are
//! rare), and whether the taken ones are known yet — the server rebuilds
//! them from the stored Services at start, before any write may draw.

use crate::status::ApiError;
use parking_lot::Mutex;
use rand::Rng;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub struct PortPool {
    first: u16,
    last: u16,
    taken: Mutex<BTreeSet<u16>>,
    ready: AtomicBool,
}

/// Why a port asked for cannot be had.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    OutOfRange,
    Taken,
}

impl PortPool {
    pub fn new(first: u16, last: u16) -> Self {
        Self {
            first,
            last,
            taken: Mutex::new(BTreeSet::new()),
            ready: AtomicBool::new(false),
        }
    }

    /// The first and last port of the range.
    pub fn bounds(&self) -> (u16, u16) {
        (self.first, self.last)
    }

    /// `30000-32767`, as kube prints the range in its messages.
    pub fn range(&self) -> String {
        format!("{}-{}", self.first, self.last)
    }

    /// Takes `port` (a dry run only checks it is free).
    pub fn reserve(&self, port: u16, dry_run: bool) -> Result<(), Refused> {
        if !(self.first..=self.last).contains(&port) {
            return Err(Refused::OutOfRange);
        }
        let mut taken = self.taken.lock();
        if taken.contains(&port) {
            return Err(Refused::Taken);
        }
        if !dry_run {
            taken.insert(port);
        }
        Ok(())
    }

    /// Any free port: a random start, then the range in order from there.
    pub fn reserve_any(&self, dry_run: bool) -> Option<u16> {
        let start = rand::thread_rng().gen_range(self.first..=self.last);
        let mut taken = self.taken.lock();
        let port = (start..=self.last)
            .chain(self.first..start)
            .find(|p| !taken.contains(p))?;
        if !dry_run {
            taken.insert(port);
        }
        Some(port)
    }

    pub fn release(&self, ports: &[u16]) {
        let mut taken = self.taken.lock();
        for p in ports {
            taken.remove(p);
        }
    }

    /// Marks `ports` taken (what stored objects hold) and the pool ready.
    pub fn load(&self, ports: impl IntoIterator<Item = u16>) {
        self.taken.lock().extend(ports);
        self.ready.store(true, Ordering::Release);
    }

    /// 503 until [`Self::load`] ran: drawing earlier could hand out a
    /// port a stored object holds.
    pub fn check_ready(&self) -> Result<(), ApiError> {
        if self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(ApiError::new(
            503,
            "ServiceUnavailable",
            "the port allocator is still loading the stored Services; try again",
        ))
    }
}

/// kube's stored form of a pool (a RangeAllocation's `data`): the taken
/// ports as a big integer's big-endian bytes, bit `i` standing for the
/// range's `i`th port (Go's `big.Int.Bytes()` of its allocation bitmap).
impl PortPool {
    /// A pool holding what `bitmap` says is taken, ready.
    pub fn from_bitmap(first: u16, last: u16, bitmap: &[u8]) -> Self {
        let pool = Self::new(first, last);
        let taken = bitmap.iter().rev().enumerate().flat_map(|(byte, bits)| {
            (0..8)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| byte * 8 + b)
        });
        let span = usize::from(last - first);
        pool.load(taken.filter(|i| *i <= span).map(|i| first + i as u16));
        pool
    }

    /// The taken ports as kube stores them (no leading zero bytes).
    pub fn bitmap(&self) -> Vec<u8> {
        let taken = self.taken.lock();
        let Some(top) = taken.iter().next_back() else {
            return Vec::new();
        };
        let len = usize::from(top - self.first) / 8 + 1;
        let mut out = vec![0u8; len];
        for p in taken.iter() {
            let i = usize::from(p - self.first);
            out[len - 1 - i / 8] |= 1 << (i % 8);
        }
        out
    }

    /// Whether `port` is taken.
    pub fn is_taken(&self, port: u16) -> bool {
        self.taken.lock().contains(&port)
    }

    /// Every taken port, in order.
    pub fn taken(&self) -> Vec<u16> {
        self.taken.lock().iter().copied().collect()
    }
}

/// Parses a range as kube's flags write it (`30000-32767`, both ends
/// taken).
pub fn parse_range(s: &str) -> Result<(u16, u16), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("{s:?}: expected FIRST-LAST"))?;
    let first: u16 = a.trim().parse().map_err(|e| format!("{a:?}: {e}"))?;
    let last: u16 = b.trim().parse().map_err(|e| format!("{b:?}: {e}"))?;
    if first == 0 || first > last {
        return Err(format!("{s:?}: not a range of ports"));
    }
    Ok((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_kube_writes_them() {
        assert_eq!(parse_range("30000-32767").unwrap(), (30000, 32767));
        assert!(parse_range("32767-30000").is_err());
        assert!(parse_range("30000").is_err());
        assert!(parse_range("0-10").is_err());
    }

    #[test]
    fn the_bitmap_is_kubes_big_endian_integer() {
        let pool = PortPool::new(30000, 30020);
        pool.load([30000, 30009, 30020]);
        // Bits 0, 9 and 20: 0x10_02_01.
        assert_eq!(pool.bitmap(), vec![0x10, 0x02, 0x01]);
        let back = PortPool::from_bitmap(30000, 30020, &pool.bitmap());
        assert!(back.check_ready().is_ok());
        assert!(back.is_taken(30009) && back.is_taken(30020) && !back.is_taken(30001));
        assert_eq!(back.bitmap(), pool.bitmap());
        assert!(PortPool::new(1, 2).bitmap().is_empty());
        // Bits past the range (a narrower range than the writer's) are dropped.
        assert_eq!(
            PortPool::from_bitmap(30000, 30004, &[0x01, 0x01]).bitmap(),
            vec![0x01]
        );
    }

    #[test]
    fn the_pool_never_gives_a_port_twice() {
        let pool = PortPool::new(30000, 30009);
        assert!(pool.check_ready().is_err());
        pool.load([30005]);
        assert!(pool.check_ready().is_ok());
        assert_eq!(pool.reserve(30005, false), Err(Refused::Taken));
        assert_eq!(pool.reserve(40000, false), Err(Refused::OutOfRange));
        let mut got: Vec<u16> = (0..9).map(|_| pool.reserve_any(false).unwrap()).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            (30000..=30009).filter(|p| *p != 30005).collect::<Vec<_>>()
        );
        assert!(pool.reserve_any(false).is_none());
        pool.release(&[30001]);
        assert_eq!(pool.reserve_any(true), Some(30001));
        assert_eq!(
            pool.reserve_any(false),
            Some(30001),
            "a dry run keeps nothing"
        );
    }
}
