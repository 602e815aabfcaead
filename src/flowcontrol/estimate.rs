//! How many seats a request occupies while it executes: one, except for
//! LISTs (and watches that start with the current state), which cost
//! what they load. kube sizes them by the bytes they touch, 100 kB per
//! seat; every kubeshard LIST is served from the cache, where kube counts
//! at most 1 MB, so a LIST costs 1 to 10 seats.

use crate::request::{Query, RequestInfo};
use std::collections::HashMap;

const BYTES_PER_SEAT: u64 = 100_000;
/// A cache-served LIST is charged no more memory than this.
const CACHE_BYTES_CAP: u64 = 1_000_000;

/// Objects and their mean size per resource (by storage key), refreshed
/// from the shards now and then, as kube's object-count tracker is.
#[derive(Debug, Default, Clone)]
pub struct ObjectStats {
    pub by_resource: HashMap<std::sync::Arc<str>, (u64, u64)>,
}

/// The largest width a level gives one request: 15% of its seats, and no
/// more than its seats over its hand size (so a hand can still hold a
/// wide request), at least 1; levels that do not queue cap at 10.
pub fn max_seats(nominal: usize, hand_size: Option<usize>) -> usize {
    match hand_size {
        Some(hand) => {
            let share = (nominal as f64 * 0.15).ceil() as usize;
            share.min(nominal / hand.max(1)).max(1)
        }
        None => 10,
    }
}

/// Seats for a request to `storage_key` (None for non-resource requests).
pub fn seats(
    info: &RequestInfo,
    query: &Query,
    storage_key: Option<&str>,
    stats: &ObjectStats,
    max: usize,
) -> usize {
    let listing = match info.verb.as_str() {
        "list" => true,
        // A watch that begins with the current state loads it like a LIST.
        "watch" => {
            query.get("sendInitialEvents") == Some("true")
                || matches!(query.get("resourceVersion"), None | Some("") | Some("0"))
        }
        _ => false,
    };
    if !listing || !info.name.is_empty() {
        return 1;
    }
    let Some((count, mean)) = storage_key.and_then(|k| stats.by_resource.get(k)) else {
        return 1;
    };
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<u64>().ok())
        .filter(|l| *l > 0 && l < count)
        .unwrap_or(*count);
    let bytes = (limit * mean).min(CACHE_BYTES_CAP);
    (bytes.div_ceil(BYTES_PER_SEAT) as usize).clamp(1, max.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn request(verb: &str, query: &str) -> (RequestInfo, Query) {
        let info = RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            resource: "pods".into(),
            ..RequestInfo::default()
        };
        (info, Query::parse(Some(query)))
    }

    #[test]
    fn lists_cost_what_they_load_up_to_the_cap() {
        let stats = ObjectStats {
            by_resource: [(Arc::from("pods"), (10_000, 3_000))].into(),
        };
        let s = |verb, query| {
            let (info, query) = request(verb, query);
            seats(&info, &query, Some("pods"), &stats, 10)
        };
        assert_eq!(s("get", ""), 1);
        assert_eq!(s("list", ""), 10, "30 MB capped at 1 MB");
        assert_eq!(s("list", "limit=100"), 3, "300 kB");
        assert_eq!(s("list", "limit=1"), 1);
        assert_eq!(s("watch", "resourceVersion=5"), 1);
        assert_eq!(s("watch", "resourceVersion=5&sendInitialEvents=true"), 10);
        assert_eq!(s("watch", ""), 10);
        let (info, query) = request("list", "");
        assert_eq!(
            seats(&info, &query, Some("pods"), &stats, 4),
            4,
            "level cap"
        );
        assert_eq!(
            seats(&info, &query, Some("nodes"), &stats, 10),
            1,
            "unknown"
        );
    }

    #[test]
    fn width_cap_follows_the_level() {
        // kube's defaults at 600 seats: every queuing level caps at 10.
        assert_eq!(max_seats(25, Some(4)), 4);
        assert_eq!(max_seats(74, Some(6)), 12, "ceil(11.1) and 74 / 6");
        assert_eq!(max_seats(1, Some(8)), 1);
        assert_eq!(max_seats(13, None), 10);
    }
}
