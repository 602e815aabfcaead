//! /metrics in the Prometheus text format: store and watch-cache sizes per
//! executor, gathered from every shard by message when scraped. (The full
//! observability surface — request latencies, APF, etcd — comes later.)

use kubeshard_shards::messages::ShardStats;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShardLabel {
    shard: String,
}

type PerShard = Family<ShardLabel, Gauge>;

/// A per-shard gauge: name, help, and how to read it from the stats.
type Figure = (&'static str, &'static str, fn(&ShardStats) -> usize);

/// Renders one scrape from the shards' stats (index = shard id).
pub fn render(stats: &[ShardStats], closed_revision: u64) -> String {
    let mut registry = Registry::with_prefix("kubeshard");
    let families: [Figure; 6] = [
        ("store_objects", "Objects stored in the shard.", |s| {
            s.objects
        }),
        (
            "store_object_bytes",
            "Heap bytes of stored objects (encodings and metadata).",
            |s| s.object_bytes,
        ),
        (
            "store_history_events",
            "Events kept in the shard's history rings for list snapshots.",
            |s| s.history_events,
        ),
        (
            "watch_cache_events",
            "Events kept in the executor's merged watch rings.",
            |s| s.watch_events,
        ),
        (
            "watch_cache_index_entries",
            "Secondary index entries of the watch rings.",
            |s| s.watch_index_entries,
        ),
        ("watchers", "Open watch streams on the executor.", |s| {
            s.watchers
        }),
    ];
    for (name, help, value) in families {
        let family = PerShard::default();
        for (i, s) in stats.iter().enumerate() {
            family
                .get_or_create(&ShardLabel {
                    shard: i.to_string(),
                })
                .set(value(s) as i64);
        }
        registry.register(name, help, family);
    }
    let closed = Gauge::<i64>::default();
    closed.set(closed_revision as i64);
    registry.register(
        "closed_revision",
        "The closed revision: everything at or below it is visible.",
        closed,
    );
    let mut out = String::new();
    encode(&mut out, &registry).expect("writing to a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let stats = vec![
            ShardStats {
                objects: 3,
                watchers: 2,
                ..Default::default()
            },
            ShardStats::default(),
        ];
        let text = render(&stats, 42);
        assert!(
            text.contains("kubeshard_store_objects{shard=\"0\"} 3"),
            "{text}"
        );
        assert!(text.contains("kubeshard_watchers{shard=\"0\"} 2"), "{text}");
        assert!(text.contains("kubeshard_closed_revision 42"), "{text}");
        assert!(
            text.contains("# HELP kubeshard_watch_cache_events"),
            "{text}"
        );
        assert!(text.trim_end().ends_with("# EOF"));
    }
}
