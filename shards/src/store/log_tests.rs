//! The logged store against a reference model: writes build on pending
//! writes, nothing pending is ever visible, a durable group applies in
//! order, and a failed group fails with everything queued behind it.

use super::*;
use crate::backend::UpdateStep;
use kubeshard_core::catalog::Catalog;
use proptest::prelude::*;
use serde_json::json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

#[derive(Debug, Clone)]
enum Op {
    Create(u8, u8),
    Update(u8, u8),
    Delete(u8),
    /// The committer takes the queued writes as a group.
    Take,
    /// The group in flight settles.
    Settle(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..4, 0u8..3).prop_map(|(k, v)| Op::Create(k, v)),
        3 => (0u8..4, 0u8..3).prop_map(|(k, v)| Op::Update(k, v)),
        2 => (0u8..4).prop_map(Op::Delete),
        2 => Just(Op::Take),
        2 => prop::bool::weighted(0.75).prop_map(Op::Settle),
    ]
}

type State = BTreeMap<String, u8>;
type Outcome = Rc<RefCell<Option<Result<(), StorageError>>>>;
/// A write's result: the object it returned and the value it wrote.
type Written = Result<(Arc<StoredObject>, Option<u8>), StorageError>;

/// A committed write as the model sees it.
struct Write {
    key: String,
    value: Option<u8>,
    revision: u64,
    outcome: Outcome,
}

fn cm(name: &str, v: u8) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "d"}, "data": {"v": v.to_string()}})
}

fn visible(store: &ShardStore, resource: &str) -> State {
    (0..4)
        .filter_map(|k| {
            let name = format!("c{k}");
            store.get(resource, "d", &name).map(|o| {
                let v = o.to_value()["data"]["v"].as_str().unwrap().parse().unwrap();
                (name, v)
            })
        })
        .collect()
}

fn latest(durable: &State, pending: &[&Write]) -> State {
    let mut s = durable.clone();
    for w in pending {
        match w.value {
            Some(v) => s.insert(w.key.clone(), v),
            None => s.remove(&w.key),
        };
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn only_durable_writes_are_visible(ops in prop::collection::vec(op(), 1..80)) {
        let seq = Arc::new(Sequencer::new(1, 0));
        let (tx, events) = async_channel::unbounded();
        let mut store = ShardStore::new(0, seq.clone(), true, RingLimits::default(), vec![tx], 0);
        let info = Catalog::with_builtins().snapshot().lookup("", "v1", "configmaps").unwrap().clone();
        let mut durable = State::new();
        let mut queued: Vec<Write> = Vec::new();
        let mut flushing: Vec<Write> = Vec::new();
        let mut published: Vec<u64> = Vec::new();
        let mut expected_events: Vec<u64> = Vec::new();
        for op in &ops {
            let current = latest(&durable, &flushing.iter().chain(&queued).collect::<Vec<_>>());
            let drawn_before = seq.current();
            let (key, result): (String, Written) = match *op {
                Op::Create(k, v) => {
                    let key = format!("c{k}");
                    (key.clone(), store.create(&info, cm(&key, v)).map(|o| (o, Some(v))))
                }
                Op::Update(k, v) => {
                    let key = format!("c{k}");
                    let body = cm(&key, v);
                    let r = store.update(&info, "d", &key, Box::new(move |old| {
                        old.ok_or_else(|| ApiError::not_found("", "configmaps", "x"))?;
                        Ok(UpdateStep::Write(body.clone()))
                    }));
                    (key, r.map(|o| (o.object().clone(), Some(v))))
                }
                Op::Delete(k) => {
                    let key = format!("c{k}");
                    (key.clone(), store.delete_with(&info, "d", &key, super::tests::delete_now()).map(|o| (o.object().clone(), None)))
                }
                Op::Take => {
                    let group = store.take_group();
                    prop_assert_eq!(group.is_some(), flushing.is_empty() && !queued.is_empty());
                    if group.is_some() {
                        flushing = std::mem::take(&mut queued);
                    }
                    store.finish_batch();
                    continue;
                }
                Op::Settle(ok) => {
                    if flushing.is_empty() {
                        continue;
                    }
                    store.group_done(if ok { Ok(()) } else { Err(StorageError::Unavailable("disk".into())) });
                    store.finish_batch();
                    if ok {
                        for w in flushing.drain(..) {
                            prop_assert!(matches!(&*w.outcome.borrow(), Some(Ok(()))));
                            expected_events.push(w.revision);
                            match w.value {
                                Some(v) => durable.insert(w.key, v),
                                None => durable.remove(&w.key),
                            };
                        }
                    } else {
                        for w in flushing.drain(..).chain(queued.drain(..)) {
                            prop_assert!(matches!(&*w.outcome.borrow(), Some(Err(StorageError::Unavailable(_)))));
                        }
                    }
                    while let Ok(batch) = events.try_recv() {
                        published.extend(batch.iter().map(|e| e.revision));
                    }
                    prop_assert_eq!(&published, &expected_events);
                    prop_assert_eq!(visible(&store, &info.storage_key), durable.clone());
                    continue;
                }
            };
            match result {
                Ok((obj, value)) => {
                    // An update that changes nothing draws no revision and
                    // is durable when what it read is.
                    let unchanged = seq.current() == drawn_before;
                    if unchanged {
                        prop_assert_eq!(current.get(&key).copied(), value);
                    }
                    let outcome: Outcome = Rc::default();
                    let o = outcome.clone();
                    store.when_durable(obj.revision, Box::new(move |r| *o.borrow_mut() = Some(r)));
                    if !unchanged {
                        prop_assert!(matches!(op, Op::Create(..)) || current.contains_key(&key));
                        queued.push(Write { key, value, revision: obj.revision, outcome });
                    }
                }
                Err(e) => {
                    let exists = current.contains_key(&key);
                    match op {
                        Op::Create(..) => {
                            prop_assert!(exists && matches!(e, StorageError::AlreadyExists))
                        }
                        _ => prop_assert!(!exists && is_missing(&e), "{e:?}"),
                    }
                }
            }
            store.finish_batch();
            // Pending writes are never visible, and the closed revision
            // stays below the first of them.
            prop_assert_eq!(visible(&store, &info.storage_key), durable.clone());
            if let Some(first) = flushing.first().or(queued.first()) {
                prop_assert!(seq.closed() < first.revision);
            } else {
                prop_assert_eq!(seq.closed(), seq.current());
            }
        }
    }
}

/// The error of a write to an absent key: storage's own (a delete) or the
/// update function's 404.
fn is_missing(e: &StorageError) -> bool {
    match e {
        StorageError::NotFound => true,
        StorageError::Refused(r) => r.code == 404,
        _ => false,
    }
}
