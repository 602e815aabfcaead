//! Label-selector parsing and matching, as every list and every watch
//! event pays for it.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use kubeshard_core::selector::labels::LabelSelector;
use std::collections::BTreeMap;
use std::hint::black_box;

fn labels() -> Vec<(String, String)> {
    [
        ("app", "web"),
        ("app.kubernetes.io/name", "web"),
        ("app.kubernetes.io/version", "1.2.3"),
        ("pod-template-hash", "7d4b9c8f6"),
        ("tier", "frontend"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

const SELECTORS: [(&str, &str); 4] = [
    ("equality", "app=web"),
    ("set", "tier in (frontend,backend)"),
    (
        "mixed",
        "app=web,tier in (frontend,backend),!canary,app.kubernetes.io/version",
    ),
    ("miss", "app=api,tier notin (frontend)"),
];

fn selector(c: &mut Criterion) {
    let pairs = labels();
    let map: BTreeMap<String, String> = pairs.iter().cloned().collect();
    let mut g = c.benchmark_group("label_selector");
    for (name, text) in SELECTORS {
        g.bench_with_input(BenchmarkId::new("parse", name), text, |b, t| {
            b.iter(|| LabelSelector::parse(black_box(t)).unwrap())
        });
        let sel = LabelSelector::parse(text).unwrap();
        // The stored form: a sorted slice of pairs.
        g.bench_with_input(BenchmarkId::new("match_pairs", name), &sel, |b, s| {
            b.iter(|| s.matches(black_box(pairs.as_slice())))
        });
        g.bench_with_input(BenchmarkId::new("match_btreemap", name), &sel, |b, s| {
            b.iter(|| s.matches(black_box(&map)))
        });
    }
    g.finish();
}

criterion_group!(benches, selector);
criterion_main!(benches);
