//! A cross-core message round trip: what a request for a key owned by
//! another executor pays. One thread plays the owning shard: it receives
//! `ShardMsg::Get` over an async-channel inbox and answers on the
//! request's oneshot, exactly as the shard loop does.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use futures_lite::future::block_on;
use kubeshard_cache::StoredObject;
use kubeshard_shards::messages::ShardMsg;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn round_trip(c: &mut Criterion) {
    let info = common::info("pods");
    let obj = Arc::new(StoredObject::encode(&info, &common::pod(3), 42));
    let resource: Arc<str> = info.storage_key.clone();
    let (tx, rx) = async_channel::unbounded::<ShardMsg>();
    let shard = std::thread::spawn(move || {
        block_on(async move {
            while let Ok(msg) = rx.recv().await {
                if let ShardMsg::Get { reply, .. } = msg {
                    let _ = reply.send(Some(obj.clone()));
                }
            }
        })
    });
    c.bench_function("shard_msg_get_round_trip", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            block_on(async {
                for _ in 0..iters {
                    let (reply, answer) = futures_channel::oneshot::channel();
                    tx.send(ShardMsg::Get {
                        resource: resource.clone(),
                        namespace: "production".into(),
                        name: "web-7d4b9c8f6-00003".into(),
                        reply,
                    })
                    .await
                    .unwrap();
                    answer.await.unwrap().unwrap();
                }
            });
            start.elapsed().max(Duration::from_nanos(1))
        })
    });
    drop(tx);
    shard.join().unwrap();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
