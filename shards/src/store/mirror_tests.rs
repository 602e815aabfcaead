//! A mirrored store against a reference model: after any sequence of
//! another store's changes — some handed over one by one, some lost to
//! a compaction and caught up by a resync — the shard holds exactly the
//! model's objects at the model's revisions, its events come out in
//! revision order, each one a real change, and the sequencer closes at
//! the last revision handed over.

use super::*;
use kubeshard_core::catalog::Catalog;
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    /// The changes since the last handover are lost; the state is read.
    Resync,
    /// What changed since the last handover is handed over.
    Handover,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6, 0u8..4).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..6).prop_map(Op::Delete),
        1 => Just(Op::Resync),
        3 => Just(Op::Handover),
    ]
}

fn cm(name: u8, value: u8, revision: u64) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("cm-{name}"), "namespace": "ns",
                        "resourceVersion": revision.to_string()},
           "data": {"v": value.to_string()}})
}

proptest! {
    #[test]
    fn a_mirror_holds_what_the_other_store_holds(ops in proptest::collection::vec(op(), 1..60)) {
        let seq = Arc::new(Sequencer::mirrored(1, 0));
        let (tx, rx) = async_channel::unbounded();
        let mut store = ShardStore::new(0, seq.clone(), false, RingLimits::default(), vec![tx], 0);
        let info = Catalog::with_builtins()
            .snapshot()
            .lookup("", "v1", "configmaps")
            .unwrap()
            .clone();
        // The other store: name → (value, revision), and its unsent changes.
        let mut model: BTreeMap<u8, (u8, u64)> = BTreeMap::new();
        let mut pending: Vec<Mirrored> = Vec::new();
        let mut revision = 0u64;
        for op in &ops {
            match *op {
                Op::Put(k, v) => {
                    revision += 1;
                    model.insert(k, (v, revision));
                    pending.push(Mirrored {
                        info: info.clone(),
                        namespace: "ns".into(),
                        name: format!("cm-{k}"),
                        revision,
                        change: MirroredChange::Put(cm(k, v, revision)),
                    });
                }
                Op::Delete(k) => {
                    if model.remove(&k).is_some() {
                        revision += 1;
                        pending.push(Mirrored {
                            info: info.clone(),
                            namespace: "ns".into(),
                            name: format!("cm-{k}"),
                            revision,
                            change: MirroredChange::Delete,
                        });
                    }
                }
                Op::Handover => {
                    store.mirror(std::mem::take(&mut pending), revision);
                    store.finish_batch();
                }
                Op::Resync => {
                    pending.clear();
                    let objects = model
                        .iter()
                        .map(|(k, (v, rev))| {
                            let obj = StoredObject::encode(&info, &cm(*k, *v, *rev), *rev);
                            (info.clone(), Arc::new(obj))
                        })
                        .collect();
                    let configmaps = info.clone();
                    let kinds = move |_: &str, _| configmaps.clone();
                    store.resync(objects, revision, &kinds);
                    store.finish_batch();
                }
            }
            if matches!(op, Op::Handover | Op::Resync) {
                prop_assert_eq!(seq.closed(), revision);
                let held: BTreeMap<u8, (u8, u64)> = store
                    .frozen_objects()
                    .iter()
                    .map(|(_, o)| {
                        let v = o.to_value();
                        let name: u8 = o.name.trim_start_matches("cm-").parse().unwrap();
                        let value: u8 = v["data"]["v"].as_str().unwrap().parse().unwrap();
                        (name, (value, o.revision))
                    })
                    .collect();
                prop_assert_eq!(&held, &model);
            }
        }
        // Events: in revision order; each ADDED/MODIFIED at the revision
        // its object carries.
        let mut last = 0;
        while let Ok(batch) = rx.try_recv() {
            for ev in batch.iter() {
                prop_assert!(ev.revision >= last, "{} after {}", ev.revision, last);
                last = ev.revision;
                if ev.kind != EventType::Deleted {
                    prop_assert_eq!(ev.object.revision, ev.revision);
                }
            }
        }
    }
}
