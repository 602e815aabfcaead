//! Max-in-flight limiting (`--max-requests-inflight`,
//! `--max-mutating-requests-inflight`): beyond the limit a request is
//! refused at once with 429 and `Retry-After: 1` rather than queued, so
//! overload sheds load instead of growing latency. Long-running requests
//! (watches), members of system:masters and health probes are exempt, so
//! an operator and the kubelet's probes still get through a flood.
//!
//! The counts are global (kube's limits are per server, not per core):
//! two atomics, touched once on the way in and once on the way out.
//! With API Priority and Fairness on (the default) APF decides, and
//! counts the gauge per executor instead of here.

use crate::request::RequestInfo;
use kubeshard_core::authn::{UserInfo, MASTERS};
use kubeshard_core::status::ApiError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub struct Inflight {
    read_only: AtomicUsize,
    mutating: AtomicUsize,
    max_read_only: usize,
    max_mutating: usize,
}

/// A slot held until the request is answered.
#[derive(Debug)]
pub struct Permit {
    inflight: Arc<Inflight>,
    mutating: bool,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.inflight
            .counter(self.mutating)
            .fetch_sub(1, Ordering::AcqRel);
    }
}

impl Inflight {
    pub fn new(max_read_only: usize, max_mutating: usize) -> Self {
        Self {
            read_only: AtomicUsize::new(0),
            mutating: AtomicUsize::new(0),
            max_read_only,
            max_mutating,
        }
    }

    fn counter(&self, mutating: bool) -> &AtomicUsize {
        if mutating {
            &self.mutating
        } else {
            &self.read_only
        }
    }

    /// The limits: (read-only, mutating).
    pub fn limits(&self) -> (usize, usize) {
        (self.max_read_only, self.max_mutating)
    }

    /// Requests in flight now: (read-only, mutating).
    pub fn current(&self) -> (usize, usize) {
        (
            self.read_only.load(Ordering::Acquire),
            self.mutating.load(Ordering::Acquire),
        )
    }
}

/// kube's `apiserver_current_inflight_requests` gauge, in the text format.
pub fn metrics(inflight: &Inflight) -> String {
    let (read_only, mutating) = inflight.current();
    gauge(read_only as i64, mutating as i64)
}

/// The gauge with these counts (APF counts them itself, per executor).
pub fn gauge(read_only: i64, mutating: i64) -> String {
    format!(
        "# HELP apiserver_current_inflight_requests Requests in flight, by kind, counted by the max-in-flight limiter.\n\
         # TYPE apiserver_current_inflight_requests gauge\n\
         apiserver_current_inflight_requests{{request_kind=\"readOnly\"}} {read_only}\n\
         apiserver_current_inflight_requests{{request_kind=\"mutating\"}} {mutating}\n"
    )
}

fn exempt(user: &UserInfo, info: &RequestInfo) -> bool {
    if info.is_long_running() {
        return true;
    }
    if user.in_group(MASTERS) {
        return true;
    }
    let p = info.path.as_str();
    ["/healthz", "/livez", "/readyz"]
        .iter()
        .any(|h| p == *h || p.strip_prefix(h).is_some_and(|r| r.starts_with('/')))
}

/// Whether the request counts as mutating (kube's read-only/mutating
/// split of the limits and the gauge).
pub fn is_mutating(info: &RequestInfo) -> bool {
    matches!(
        info.verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection" | "post" | "put"
    )
}

/// A permit for this request, None when exempt, or 429.
pub fn admit(
    inflight: &Arc<Inflight>,
    user: &UserInfo,
    info: &RequestInfo,
) -> Result<Option<Permit>, ApiError> {
    if exempt(user, info) {
        return Ok(None);
    }
    let mutating = is_mutating(info);
    let max = if mutating {
        inflight.max_mutating
    } else {
        inflight.max_read_only
    };
    if max == 0 {
        return Ok(None);
    }
    let counter = inflight.counter(mutating);
    if counter.fetch_add(1, Ordering::AcqRel) >= max {
        counter.fetch_sub(1, Ordering::AcqRel);
        return Err(ApiError::too_many_requests(
            "Too many requests, please try again later.",
            1,
        ));
    }
    Ok(Some(Permit {
        inflight: inflight.clone(),
        mutating,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Query;

    fn info(method: http::Method, path: &str) -> RequestInfo {
        RequestInfo::parse(&method, path, &Query::parse(None))
    }

    #[test]
    fn limits_each_kind_separately_and_releases_on_drop() {
        let inflight = Arc::new(Inflight::new(1, 1));
        let u = UserInfo::new("u", &[]);
        let get = info(http::Method::GET, "/api/v1/namespaces/a/pods/p");
        let post = info(http::Method::POST, "/api/v1/namespaces/a/pods");
        let held = admit(&inflight, &u, &get).unwrap().unwrap();
        assert_eq!(admit(&inflight, &u, &get).unwrap_err().code, 429);
        let w = admit(&inflight, &u, &post).unwrap().unwrap();
        assert_eq!(inflight.current(), (1, 1));
        drop(held);
        drop(w);
        assert!(admit(&inflight, &u, &get).unwrap().is_some());
        assert_eq!(inflight.current(), (0, 0));
    }

    #[test]
    fn exemptions() {
        let inflight = Arc::new(Inflight::new(1, 1));
        let u = UserInfo::new("u", &[]);
        let _held = admit(&inflight, &u, &info(http::Method::GET, "/api/v1/pods")).unwrap();
        let watch = RequestInfo::parse(
            &http::Method::GET,
            "/api/v1/pods",
            &Query::parse(Some("watch=1")),
        );
        assert!(admit(&inflight, &u, &watch).unwrap().is_none());
        assert!(
            admit(&inflight, &u, &info(http::Method::GET, "/readyz/shards"))
                .unwrap()
                .is_none()
        );
        let admin = UserInfo::new("a", &[MASTERS]);
        assert!(
            admit(&inflight, &admin, &info(http::Method::GET, "/api/v1/pods"))
                .unwrap()
                .is_none()
        );
        assert_eq!(
            admit(&inflight, &u, &info(http::Method::GET, "/healthzz"))
                .unwrap_err()
                .code,
            429
        );
    }
}
