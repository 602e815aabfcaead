//! The watch cache's event ring: appending events (with trimming at the
//! bound) and reading them through a cursor, as watchers do.

mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kubeshard_cache::ring::RingLimits;
use kubeshard_cache::{Event, EventRing, EventType, RingRead, StoredObject};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RING: usize = 10_000;

fn events(n: usize, first_rev: u64) -> Vec<Arc<Event>> {
    let info = common::info("pods");
    let resource: Arc<str> = info.storage_key.clone();
    let obj = Arc::new(StoredObject::encode(&info, &common::pod(1), first_rev));
    (0..n as u64)
        .map(|i| {
            Arc::new(Event::new(
                first_rev + i,
                EventType::Modified,
                resource.clone(),
                obj.clone(),
                Some(obj.clone()),
            ))
        })
        .collect()
}

fn limits() -> RingLimits {
    RingLimits {
        max_events: RING,
        window: Duration::from_secs(300),
    }
}

fn ring(c: &mut Criterion) {
    let now = Instant::now();
    let mut g = c.benchmark_group("event_ring");
    // Appending to a full ring: every push also trims one event.
    let batch = events(1000, RING as u64 + 1);
    g.throughput(Throughput::Elements(batch.len() as u64));
    g.bench_function("push_full_ring_1000", |b| {
        b.iter_batched(
            || {
                let mut r = EventRing::new(0, limits());
                for e in events(RING, 1) {
                    r.push(e, now);
                }
                (r, batch.clone())
            },
            |(mut r, batch)| {
                for e in batch {
                    r.push(e, now);
                }
                r
            },
            BatchSize::LargeInput,
        )
    });
    let mut full = EventRing::new(0, limits());
    for e in events(RING, 1) {
        full.push(e, now);
    }
    g.throughput(Throughput::Elements(1000));
    g.bench_function("cursor_read_1000", |b| {
        b.iter(|| {
            let mut seq = full.seq_after(black_box(RING as u64 - 1000)).unwrap();
            let mut n = 0u64;
            while let RingRead::Event(e) = full.read(seq) {
                n += e.revision;
                seq += 1;
            }
            n
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("seq_after", |b| {
        b.iter(|| full.seq_after(black_box(RING as u64 / 2)))
    });
    g.bench_function("frame_first_use", |b| {
        b.iter_batched(
            || events(1, 1).pop().unwrap(),
            |e| e.frame().len(),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, ring);
criterion_main!(benches);
