//! What a custom resource's schema costs per object written: parsing and
//! compiling a CRD's schema (once per CRD change), defaulting, value
//! validation, the CEL rules, and all of it together — for the 50-field
//! schema with 3 CEL rules that `bench/scripts/crd.py` loads, and for an
//! update, where transition rules see the old object and unchanged
//! values ratchet.

use criterion::{criterion_group, criterion_main, Criterion};
use kubeshard_core::crd::CustomRules;
use serde_json::{json, Map, Value};
use std::hint::black_box;

fn schema() -> Value {
    let mut props = Map::new();
    for i in 0..50 {
        props.insert(
            format!("p{i}"),
            [
                json!({"type": "string", "maxLength": 64}),
                json!({"type": "integer", "minimum": 0, "maximum": 1_000_000}),
                json!({"type": "boolean"}),
                json!({"type": "string", "enum": ["a", "b", "c"]}),
            ][i % 4]
                .clone(),
        );
    }
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props,
        "x-kubernetes-validations": [
            {"rule": "self.p1 <= self.p5 + 1000000", "message": "p1 too large"},
            {"rule": "self.p0.size() < 64", "message": "p0 too long"},
            {"rule": "self.p3 in ['a', 'b', 'c']", "message": "p3 not known"}]}}})
}

fn object() -> Value {
    let mut spec = Map::new();
    for i in 0..50 {
        spec.insert(
            format!("p{i}"),
            [
                json!(format!("value-{i}")),
                json!(i * 10),
                json!(i % 2 == 0),
                json!(["a", "b", "c"][i % 3]),
            ][i % 4]
                .clone(),
        );
    }
    json!({"apiVersion": "bench.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

fn crd_validation(c: &mut Criterion) {
    let schema = schema();
    let rules = CustomRules::new(&schema, false, None);
    let obj = object();
    let mut changed = obj.clone();
    changed["spec"]["p1"] = json!(11);
    let mut g = c.benchmark_group("crd_validation");
    g.bench_function("compile_schema", |b| {
        b.iter(|| CustomRules::new(black_box(&schema), false, None))
    });
    g.bench_function("default", |b| {
        b.iter(|| {
            let mut o = obj.clone();
            rules.default(black_box(&mut o));
            o
        })
    });
    g.bench_function("clone_only", |b| b.iter(|| black_box(&obj).clone()));
    g.bench_function("validate_create", |b| {
        b.iter(|| rules.validate(black_box(&obj), None))
    });
    g.bench_function("validate_update", |b| {
        b.iter(|| rules.validate(black_box(&changed), Some(&obj)))
    });
    let plain = CustomRules::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-preserve-unknown-fields": true}}}),
        false,
        None,
    );
    g.bench_function("validate_create_schemaless", |b| {
        b.iter(|| plain.validate(black_box(&obj), None))
    });
    g.finish();
}

criterion_group!(benches, crd_validation);
criterion_main!(benches);
