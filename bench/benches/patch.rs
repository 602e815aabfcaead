//! Patch engines on bodies an attacker can send: a strategic merge patch
//! naming 16,000 containers of a pod that has 16,000 (and 20,000 with
//! duplicate names), which took 13 s and 46 s before strategic merge went
//! linear; and a JSON patch of doubling copies, which stops at the copy
//! budget.

use criterion::{criterion_group, criterion_main, Criterion};
use kubeshard_core::patch::{json, strategic};
use kubeshard_core::schema;
use serde_json::{json, Value};
use std::hint::black_box;

fn containers(n: usize, name: impl Fn(usize) -> String) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": name(i), "image": format!("old-{i}"), "terminationMessagePath": "/dev/termination-log"}))
        .collect()
}

fn pod(containers: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn strategic_merge(c: &mut Criterion) {
    let schema = schema::builtin().kind("", "v1", "Pod").unwrap();
    let mut g = c.benchmark_group("strategic_merge");
    g.sample_size(10);

    let live = pod(containers(16_000, |i| format!("c{i}")));
    let items: Vec<Value> = (0..16_000)
        .rev()
        .map(|i| json!({"name": format!("c{i}"), "image": format!("new-{i}")}))
        .collect();
    let patch = json!({"spec": {"containers": items}});
    g.bench_function("16k_containers", |b| {
        b.iter(|| strategic::apply(live.clone(), black_box(patch.clone()), schema).unwrap())
    });

    let live = pod(containers(20_000, |i| format!("n{}", i / 2)));
    let items: Vec<Value> = (0..20_000)
        .map(|j| json!({"name": format!("n{}", (19_999 - j) / 2), "image": format!("p{j}")}))
        .collect();
    let patch = json!({"spec": {"containers": items}});
    g.bench_function("20k_duplicate_names", |b| {
        b.iter(|| strategic::apply(live.clone(), black_box(patch.clone()), schema).unwrap())
    });

    let live = pod(containers(16_000, |i| format!("c{i}")));
    let order: Vec<Value> = (0..16_000)
        .rev()
        .map(|i| json!({"name": format!("missing-{i}")}))
        .collect();
    let patch = json!({"spec": {"$setElementOrder/containers": order, "containers": [{"name": "missing-0"}]}});
    g.bench_function("16k_set_element_order_missing", |b| {
        b.iter(|| strategic::apply(live.clone(), black_box(patch.clone()), schema).unwrap())
    });
    g.finish();
}

fn json_patch_copies(c: &mut Criterion) {
    let doc = json!({"kind": "ConfigMap", "data": {"a": "x".repeat(1000)}});
    let ops: Vec<Value> = (0..30)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/x{i}")}))
        .collect();
    let patch: json::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
    let mut g = c.benchmark_group("json_patch");
    g.sample_size(10);
    g.bench_function("doubling_copies_to_the_limit", |b| {
        b.iter(|| {
            let mut d = doc.clone();
            json::apply(&mut d, black_box(&patch)).unwrap_err()
        })
    });
    g.finish();
}

criterion_group!(benches, strategic_merge, json_patch_copies);
criterion_main!(benches);
