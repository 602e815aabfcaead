//! etcd leases for keys that expire (Events under `--event-ttl`, the API
//! servers' `masterleases`): a lease per key would be a grant per write,
//! so — as kube's etcd3 store does — one lease is granted a little longer
//! than asked and shared by every key written while it still covers the
//! asked lifetime, up to a bound on the keys attached to it. A key thus
//! lives at least its TTL and at most that plus the reuse window.

use super::bridge::{with_failover, Pool};
use std::time::{Duration, Instant};

/// The longest a granted lease is reused (kube's
/// `--lease-reuse-duration-seconds` default).
const REUSE_MAX: Duration = Duration::from_secs(60);
/// The share of a TTL a lease is reused for, when that is shorter.
const REUSE_SHARE: f64 = 0.05;
/// Keys attached to one lease before a new one is granted.
const MAX_KEYS: u32 = 1000;

/// The lease in use for each lifetime asked (Events' and the API
/// servers' leases do not take turns at one slot).
#[derive(Default)]
pub(super) struct Leases {
    current: std::collections::HashMap<u64, Granted>,
}

struct Granted {
    id: i64,
    expires: Instant,
    keys: u32,
}

impl Leases {
    /// A lease that keeps a key for at least `ttl`: the current one while
    /// it lasts that long and not too much longer, else a new grant.
    pub(super) async fn get(&mut self, pool: &Pool, ttl: Duration) -> Result<i64, String> {
        let ttl = Duration::from_secs(ttl.as_secs().max(1));
        let reuse = REUSE_MAX.min(Duration::from_secs(
            (ttl.as_secs() as f64 * REUSE_SHARE) as u64,
        ));
        let now = Instant::now();
        if let Some(g) = self.current.get_mut(&ttl.as_secs()) {
            let lasts = now + ttl <= g.expires;
            let not_too_long = now + ttl + reuse >= g.expires;
            if lasts && not_too_long && g.keys < MAX_KEYS {
                g.keys += 1;
                return Ok(g.id);
            }
        }
        let lifetime = ttl + reuse;
        let granted = with_failover(pool, true, |c| async move {
            c.lease_client()
                .grant(lifetime.as_secs() as i64, None)
                .await
        })
        .await?;
        self.current.insert(
            ttl.as_secs(),
            Granted {
                id: granted.id(),
                expires: now + lifetime,
                keys: 1,
            },
        );
        Ok(granted.id())
    }
}
