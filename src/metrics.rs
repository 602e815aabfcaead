//! /metrics: kube's series (requests, watches, storage objects, audit,
//! admission, flow control) and kubeshard's own (store and watch-cache
//! sizes per executor, gathered from every shard by message when scraped),
//! in the Prometheus text format kube-apiserver serves, or in OpenMetrics
//! for scrapers that ask for it.

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

/// kube's `apiserver_storage_objects{resource}`: objects per resource
/// (`plural.group`, or the plural for the core group), summed over the
/// shards, for every resource the catalog stores.
pub fn storage_objects(
    stats: &[ShardStats],
    catalog: &kubeshard_core::catalog::CatalogSnapshot,
) -> String {
    use std::collections::BTreeMap;
    let mut by_key: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for s in stats {
        for (key, n, _) in &s.objects_by_resource {
            *by_key.entry(key).or_default() += n;
        }
    }
    let mut out: BTreeMap<String, usize> = BTreeMap::new();
    for info in catalog.resources() {
        let name = if info.group.is_empty() {
            info.plural.clone()
        } else {
            format!("{}.{}", info.plural, info.group)
        };
        let n = by_key.get(&*info.storage_key).copied().unwrap_or(0);
        out.insert(name, n);
    }
    let mut text = String::from(
        "# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of last check split by kind.\n\
         # TYPE apiserver_storage_objects gauge\n",
    );
    for (resource, n) in out {
        text.push_str(&format!(
            "apiserver_storage_objects{{resource=\"{resource}\"}} {n}\n"
        ));
    }
    text
}

/// The exposition formats /metrics speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text 0.0.4, kube-apiserver's only format.
    Text,
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the scraper lists it (Prometheus does), else text.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// OpenMetrics text as Prometheus text 0.0.4: a counter family is named
/// after its `_total` sample, `_created` samples, units and the `# EOF`
/// terminator go.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let lines: Vec<&str> = openmetrics.lines().collect();
    let mut counters = std::collections::HashSet::new();
    for l in &lines {
        if let Some(name) = l
            .strip_prefix("# TYPE ")
            .and_then(|r| r.strip_suffix(" counter"))
        {
            counters.insert(name.to_string());
        }
    }
    for l in lines {
        if l == "# EOF" || l.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| l.strip_prefix(p).map(|rest| (p, rest)));
        if let Some((prefix, rest)) = meta {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            if counters.contains(name) {
                out.push_str(&format!("{prefix}{name}_total {tail}\n"));
                continue;
            }
        } else {
            let name = l.split(['{', ' ']).next().unwrap_or("");
            if name
                .strip_suffix("_created")
                .is_some_and(|family| counters.contains(family))
            {
                continue;
            }
        }
        out.push_str(l);
        out.push('\n');
    }
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

    #[test]
    fn openmetrics_becomes_prometheus_text() {
        let om = "# HELP apiserver_request [STABLE] Requests.\n# TYPE apiserver_request counter\n\
                  apiserver_request_total{code=\"200\"} 3\napiserver_request_created{code=\"200\"} 1.5\n\
                  # HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        assert_eq!(
            to_prometheus_text(om),
            "# HELP apiserver_request_total [STABLE] Requests.\n# TYPE apiserver_request_total counter\n\
             apiserver_request_total{code=\"200\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
        assert_eq!(Format::negotiate(None), Format::Text);
        let prometheus =
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
    }
}
