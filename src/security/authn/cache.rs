//! Recently verified service-account tokens, per executor, so a client
//! reusing its token pays the signature check once every few seconds.
//! Only the signature and claims are cached: the account (and bound
//! object) checks run on every request, so a deletion takes effect at
//! once.

use super::serviceaccount::Claims;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TTL: Duration = Duration::from_secs(10);
const MAX_ENTRIES: usize = 4096;

#[derive(Default)]
pub struct TokenCache {
    entries: HashMap<String, (Instant, Arc<Claims>)>,
}

impl TokenCache {
    pub fn get(&mut self, token: &str) -> Option<Arc<Claims>> {
        let (until, claims) = self.entries.get(token)?;
        if *until > Instant::now() {
            return Some(claims.clone());
        }
        self.entries.remove(token);
        None
    }

    /// Keeps `claims` until the sooner of the TTL and the token's expiry.
    pub fn put(&mut self, token: &str, claims: Arc<Claims>) {
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.clear();
        }
        let mut ttl = TTL;
        if let Some(exp) = claims.exp {
            let left = exp - chrono::Utc::now().timestamp();
            ttl = ttl.min(Duration::from_secs(left.max(0) as u64));
        }
        self.entries
            .insert(token.to_string(), (Instant::now() + ttl, claims));
    }
}
