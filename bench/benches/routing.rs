//! Key → shard routing, paid by every single-object request.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use kubeshard_core::keys::{shard_for, ObjectKey};
use std::hint::black_box;
use std::sync::Arc;

fn routing(c: &mut Criterion) {
    let mut g = c.benchmark_group("shard_for");
    for shards in [2usize, 16] {
        g.bench_with_input(BenchmarkId::new("configmap", shards), &shards, |b, &n| {
            b.iter(|| {
                shard_for(
                    black_box("/configmaps"),
                    black_box("default"),
                    black_box("kubeshard-bench-config-000123"),
                    n,
                )
            })
        });
    }
    let key = ObjectKey::new(Arc::from("/pods"), "production", "web-7d4b9c8f6-00042");
    g.bench_function("object_key", |b| b.iter(|| black_box(&key).shard(16)));
    g.finish();
}

criterion_group!(benches, routing);
criterion_main!(benches);
