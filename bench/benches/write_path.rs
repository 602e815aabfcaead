//! What the schema-aware write path adds per object: the strict decode
//! (duplicates and unknown fields) against plain serde_json, defaulting,
//! the type check, the field-ownership record of an update, a strategic
//! merge patch and a server-side apply — all on a realistic pod
//! (`clone_only` is the clone the mutating ones start with).

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kubeshard_core::apply::{self, Writer};
use kubeshard_core::{defaults, fieldvalidation, patch::strategic, schema};
use serde_json::{json, Value};
use std::hint::black_box;

fn writer<'a>(manager: &'a str) -> Writer<'a> {
    Writer {
        schema: schema::builtin().kind("", "v1", "Pod"),
        manager,
        api_version: "v1",
        subresource: "",
        status_is_separate: true,
        now: "2025-01-01T00:00:00Z",
    }
}

fn write_path(c: &mut Criterion) {
    let schema = schema::builtin().kind("", "v1", "Pod");
    let pod = common::pod(7);
    let bytes = serde_json::to_vec(&pod).unwrap();
    let mut g = c.benchmark_group("write_path");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("decode_plain", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&bytes)).unwrap())
    });
    g.bench_function("decode_strict_with_schema", |b| {
        b.iter(|| fieldvalidation::decode_json(black_box(&bytes), schema).unwrap())
    });
    g.bench_function("check_types", |b| {
        b.iter(|| {
            let mut p = pod.clone();
            fieldvalidation::check_types(&mut p, schema.unwrap()).unwrap();
            p
        })
    });
    g.bench_function("clone_only", |b| b.iter(|| black_box(&pod).clone()));
    g.bench_function("defaults", |b| {
        b.iter(|| {
            let mut p = pod.clone();
            defaults::apply("", "Pod", &mut p);
            p
        })
    });
    let mut created = pod.clone();
    apply::update(&writer("creator"), None, &mut created);
    g.bench_function("managed_fields_update", |b| {
        b.iter(|| {
            let mut next = created.clone();
            next["metadata"]["labels"]["tier"] = json!("backend");
            apply::update(&writer("editor"), Some(black_box(&created)), &mut next);
            next
        })
    });
    // A pod as a cluster leaves it: written by its creator, the scheduler
    // and a labeller; then one more writer changes a field none of them
    // owns (the common case: their entries stay as they were).
    let mut shared = created.clone();
    for (manager, path, value) in [
        ("scheduler", "/spec/nodeName", json!("node-9")),
        ("labeller", "/metadata/labels/zone", json!("a")),
        ("annotator", "/metadata/annotations/note", json!("x")),
    ] {
        let mut next = shared.clone();
        match next.pointer_mut(path) {
            Some(v) => *v = value,
            None => {
                let (parent, key) = path.rsplit_once('/').unwrap();
                next.pointer_mut(parent).unwrap()[key] = value;
            }
        }
        apply::update(&writer(manager), Some(&shared), &mut next);
        shared = next;
    }
    g.bench_function("managed_fields_update_four_managers", |b| {
        b.iter(|| {
            let mut next = shared.clone();
            next["spec"]["activeDeadlineSeconds"] = json!(60);
            apply::update(&writer("editor"), Some(black_box(&shared)), &mut next);
            next
        })
    });
    let patch = json!({"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}});
    g.bench_function("strategic_merge_patch", |b| {
        b.iter(|| strategic::apply(created.clone(), patch.clone(), schema.unwrap()).unwrap())
    });
    let config = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod["metadata"]["name"], "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}});
    g.bench_function("server_side_apply", |b| {
        b.iter(|| apply::apply(&writer("applier"), Some(&created), &config, true, "bench").unwrap())
    });
    g.finish();
}

criterion_group!(benches, write_path);
criterion_main!(benches);
