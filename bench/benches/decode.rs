//! Decoding a pod from request bytes, encoding it once for storage (the
//! JSON served by GET/LIST/WATCH plus pre-extracted labels and fields), and
//! reading the stored form back.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kubeshard_cache::StoredObject;
use serde_json::Value;
use std::hint::black_box;

fn decode(c: &mut Criterion) {
    let info = common::info("pods");
    let pod = common::pod(7);
    let bytes = serde_json::to_vec(&pod).unwrap();
    let mut g = c.benchmark_group("pod");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("decode_json_value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&bytes)).unwrap())
    });
    g.bench_function("stored_object_encode", |b| {
        b.iter(|| StoredObject::encode(&info, black_box(&pod), 123456))
    });
    g.bench_function("decode_and_encode", |b| {
        b.iter(|| {
            let v: Value = serde_json::from_slice(black_box(&bytes)).unwrap();
            StoredObject::encode(&info, &v, 123456)
        })
    });
    let stored = StoredObject::encode(&info, &pod, 123456);
    g.bench_function("stored_object_to_value", |b| {
        b.iter(|| black_box(&stored).to_value())
    });
    g.bench_function("stored_object_field_and_label", |b| {
        b.iter(|| {
            let s = black_box(&stored);
            (
                s.field("spec.nodeName"),
                s.label("app"),
                s.field("metadata.name"),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
