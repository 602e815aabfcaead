//! EventRateLimit (kube's optional plugin): core Events are created and
//! updated at most as fast as its configuration allows — per server, per
//! namespace, per user, or per event source and object — each limit a
//! token bucket (`qps`, `burst`), kept for the `cacheSize` keys last
//! seen. One set of buckets for the whole server (every executor takes
//! from the same ones), so the limits are the server's, as in kube.

use super::{Attributes, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

pub const NAME: &str = "EventRateLimit";
const DEFAULT_CACHE_SIZE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Server,
    Namespace,
    User,
    SourceAndObject,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Server => "Server",
            Kind::Namespace => "Namespace",
            Kind::User => "User",
            Kind::SourceAndObject => "SourceAndObject",
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One configured limit and its buckets.
#[derive(Debug)]
struct Limit {
    kind: Kind,
    qps: f64,
    burst: f64,
    cache_size: usize,
    buckets: HashMap<String, Bucket>,
    /// Keys by first use, for eviction once `cache_size` are kept.
    order: VecDeque<String>,
}

impl Limit {
    /// Takes a token for `key`; false when none is left.
    fn take(&mut self, key: &str, now: Instant) -> bool {
        if !self.buckets.contains_key(key) {
            if self.buckets.len() >= self.cache_size {
                if let Some(old) = self.order.pop_front() {
                    self.buckets.remove(&old);
                }
            }
            self.order.push_back(key.to_string());
            self.buckets.insert(
                key.to_string(),
                Bucket {
                    tokens: self.burst,
                    at: now,
                },
            );
        }
        let b = self.buckets.get_mut(key).expect("inserted above");
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The server's limits (shared by every executor's chain).
#[derive(Debug, Clone)]
pub struct Limits(Arc<Mutex<Vec<Limit>>>);

impl Limits {
    /// From the plugin's Configuration (eventratelimit.admission.k8s.io),
    /// checked as kube checks it.
    pub fn parse(v: &Value) -> Result<Limits, String> {
        let list = meta::array_at(v, "/limits");
        if list.is_empty() {
            return Err("limits: Invalid value: null: must not be empty".into());
        }
        let mut limits = Vec::new();
        for (i, l) in list.iter().enumerate() {
            let kind = match meta::str_at(l, "/type") {
                "Server" => Kind::Server,
                "Namespace" => Kind::Namespace,
                "User" => Kind::User,
                "SourceAndObject" => Kind::SourceAndObject,
                t => return Err(format!("limits[{i}].type: Unsupported value: {t:?}: supported values: \"Namespace\", \"Server\", \"SourceAndObject\", \"User\"")),
            };
            let int = |k: &str| l.get(k).and_then(Value::as_i64).unwrap_or(0);
            let (qps, burst, cache) = (int("qps"), int("burst"), int("cacheSize"));
            if burst <= 0 {
                return Err(format!(
                    "limits[{i}].burst: Invalid value: {burst}: must be positive"
                ));
            }
            if qps <= 0 {
                return Err(format!(
                    "limits[{i}].qps: Invalid value: {qps}: must be positive"
                ));
            }
            if cache < 0 {
                return Err(format!(
                    "limits[{i}].cacheSize: Invalid value: {cache}: must not be negative"
                ));
            }
            limits.push(Limit {
                kind,
                qps: qps as f64,
                burst: burst as f64,
                cache_size: if cache == 0 {
                    DEFAULT_CACHE_SIZE
                } else {
                    cache as usize
                },
                buckets: HashMap::new(),
                order: VecDeque::new(),
            });
        }
        Ok(Limits(Arc::new(Mutex::new(limits))))
    }
}

/// The key an event is limited under.
fn key(kind: Kind, a: &Attributes<'_>, event: Option<&Value>) -> String {
    match kind {
        Kind::Server => String::new(),
        Kind::Namespace => a.namespace.to_string(),
        Kind::User => a.user.name.clone(),
        Kind::SourceAndObject => event.map_or_else(String::new, |e| {
            [
                "/source/component",
                "/source/host",
                "/involvedObject/kind",
                "/involvedObject/namespace",
                "/involvedObject/name",
                "/involvedObject/uid",
                "/involvedObject/apiVersion",
            ]
            .iter()
            .map(|p| meta::str_at(e, p))
            .collect()
        }),
    }
}

pub struct EventRateLimit {
    limits: Limits,
}

impl EventRateLimit {
    pub fn new(limits: Limits) -> Self {
        Self { limits }
    }
}

impl Validating for EventRateLimit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        matches!(a.operation, Operation::Create | Operation::Update)
            && a.resource.group.is_empty()
            && a.resource.kind == "Event"
            && !a.dry_run
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let now = Instant::now();
        let mut refused = Vec::new();
        for limit in self.limits.0.lock().iter_mut() {
            let k = key(limit.kind, a, object);
            if !limit.take(&k, now) {
                refused.push(format!(
                    "limit reached on type {} for key {k}",
                    limit.kind.as_str()
                ));
            }
        }
        Outcome::Ready(match refused.as_slice() {
            [] => Ok(()),
            [one] => Err(too_many(one.clone())),
            many => Err(too_many(format!("[{}]", many.join(", ")))),
        })
    }
}

/// kube's TooManyRequests, without a retry hint.
fn too_many(why: String) -> ApiError {
    ApiError::new(429, "TooManyRequests", format!("Too many requests: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn buckets_refill_at_their_rate_and_configs_are_checked() {
        let limits =
            Limits::parse(&json!({"limits": [{"type": "Namespace", "qps": 1, "burst": 2}]}))
                .unwrap();
        let mut all = limits.0.lock();
        let l = &mut all[0];
        let t0 = Instant::now();
        assert!(l.take("a", t0) && l.take("a", t0));
        assert!(!l.take("a", t0), "burst spent");
        assert!(l.take("b", t0), "another key has its own bucket");
        assert!(
            l.take("a", t0 + std::time::Duration::from_millis(1100)),
            "refilled"
        );
        assert!(Limits::parse(&json!({"limits": []})).is_err());
        assert!(
            Limits::parse(&json!({"limits": [{"type": "Pod", "qps": 1, "burst": 1}]})).is_err()
        );
        assert!(
            Limits::parse(&json!({"limits": [{"type": "User", "qps": 0, "burst": 1}]})).is_err()
        );
    }
}
