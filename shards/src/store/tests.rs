//! The store against a reference model: after any sequence of creates,
//! updates and deletes, a list at every past revision (within history), with
//! any namespace, label filter and page size, equals the model's state at
//! that revision; events come out in revision order, once each.

use super::*;
use crate::backend::UpdateStep;
use kubeshard_cache::Filter;
use kubeshard_core::catalog::Catalog;
use kubeshard_core::selector::labels::LabelSelector;
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeMap as Model;

#[derive(Debug, Clone)]
enum Op {
    Create(u8, u8, u8),
    Update(u8, u8, u8),
    Delete(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..2, 0u8..6, 0u8..3).prop_map(|(n, k, l)| Op::Create(n, k, l)),
        (0u8..2, 0u8..6, 0u8..3).prop_map(|(n, k, l)| Op::Update(n, k, l)),
        (0u8..2, 0u8..6).prop_map(|(n, k)| Op::Delete(n, k)),
    ]
}

fn cm(ns: u8, name: u8, label: u8) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("cm-{name}"), "namespace": format!("ns-{ns}"), "labels": {"tier": format!("t{label}")}},
           "data": {"label": label.to_string()}})
}

type State = Model<(String, String), u8>;

fn new_store() -> (
    ShardStore,
    async_channel::Receiver<EventBatch>,
    Arc<ResourceInfo>,
) {
    let seq = Arc::new(Sequencer::new(1, 0));
    let (tx, rx) = async_channel::unbounded();
    let store = ShardStore::new(0, seq, false, RingLimits::default(), vec![tx], 0);
    let info = Catalog::with_builtins()
        .snapshot()
        .lookup("", "v1", "configmaps")
        .unwrap()
        .clone();
    (store, rx, info)
}

fn apply(store: &mut ShardStore, info: &ResourceInfo, model: &mut State, op: &Op) -> Option<u64> {
    let out = match *op {
        Op::Create(n, k, l) => {
            let res = store.create(info, cm(n, k, l));
            let key = (format!("ns-{n}"), format!("cm-{k}"));
            assert_eq!(
                res.is_ok(),
                !model.contains_key(&key),
                "create succeeds iff absent"
            );
            res.ok().map(|o| {
                model.insert(key, l);
                o.revision
            })
        }
        Op::Update(n, k, l) => {
            let key = (format!("ns-{n}"), format!("cm-{k}"));
            let body = cm(n, k, l);
            let res = store.update(
                info,
                &key.0,
                &key.1,
                Box::new(move |old| {
                    old.ok_or_else(|| ApiError::not_found("", "configmaps", "x"))?;
                    Ok(UpdateStep::Write(body.clone()))
                }),
            );
            match (res, model.get(&key).copied()) {
                (Err(e), None) => {
                    assert!(
                        matches!(e, StorageError::Refused(ref r) if r.code == 404),
                        "{e:?}"
                    );
                    None
                }
                (Ok(UpdateOutcome::Unchanged(_)), Some(prev)) => {
                    assert_eq!(prev, l, "unchanged only when nothing changed");
                    None
                }
                (Ok(UpdateOutcome::Updated(o)), Some(prev)) => {
                    assert_ne!(prev, l);
                    model.insert(key, l);
                    Some(o.revision)
                }
                (other, m) => panic!("unexpected {other:?} with model {m:?}"),
            }
        }
        Op::Delete(n, k) => {
            let key = (format!("ns-{n}"), format!("cm-{k}"));
            let res = store.delete_with(info, &key.0, &key.1, delete_now());
            assert_eq!(
                res.is_ok(),
                model.remove(&key).is_some(),
                "delete succeeds iff present"
            );
            res.ok().map(|o| o.object().revision)
        }
    };
    store.finish_batch();
    out
}

/// A deletion plan that deletes at once.
pub(super) fn delete_now() -> DeletePlan {
    Box::new(|_| Ok(DeleteStep::Delete))
}

fn page_all(
    store: &ShardStore,
    info: &ResourceInfo,
    revision: u64,
    filter: Filter,
    limit: usize,
) -> Vec<(String, String, u8)> {
    let filter = Arc::new(filter);
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let chunk = store
            .list(&ListRequest {
                resource: info.storage_key.clone(),
                filter: filter.clone(),
                revision,
                start_after: start.clone(),
                limit,
                count_remaining: true,
            })
            .expect("history covers the revision");
        for o in &chunk.items {
            let v = o.to_value();
            out.push((
                o.namespace.to_string(),
                o.name.to_string(),
                v["data"]["label"].as_str().unwrap().parse().unwrap(),
            ));
        }
        if !chunk.more {
            assert_eq!(chunk.remaining, 0);
            return out;
        }
        assert!(
            limit > 0 && chunk.items.len() == limit,
            "a page with more is full"
        );
        let last = chunk.items.last().unwrap();
        start = Some((last.namespace.clone(), last.name.clone()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn lists_at_every_revision_match_the_model(ops in prop::collection::vec(op(), 1..60), limit in 0usize..4, ns in prop::option::of(0u8..2), tier in prop::option::of(0u8..3)) {
        let (mut store, events, info) = new_store();
        let mut model = State::new();
        let mut history: Vec<(u64, State)> = vec![(0, State::new())];
        for op in &ops {
            if let Some(rev) = apply(&mut store, &info, &mut model, op) {
                history.push((rev, model.clone()));
            }
        }
        for (rev, state) in &history {
            let filter = Filter {
                namespace: ns.map(|n| format!("ns-{n}")),
                labels: tier.map(|t| LabelSelector::parse(&format!("tier=t{t}")).unwrap()).unwrap_or_else(LabelSelector::everything),
                ..Filter::default()
            };
            let got = page_all(&store, &info, *rev, filter, limit);
            let want: Vec<(String, String, u8)> = state
                .iter()
                .filter(|((n, _), _)| ns.is_none_or(|x| *n == format!("ns-{x}")))
                .filter(|(_, l)| tier.is_none_or(|t| **l == t))
                .map(|((n, k), l)| (n.clone(), k.clone(), *l))
                .collect();
            prop_assert_eq!(got, want, "list at revision {}", rev);
        }
        // Events: every committed revision exactly once, in order.
        let mut revs = Vec::new();
        while let Ok(batch) = events.try_recv() {
            revs.extend(batch.iter().map(|e| e.revision));
        }
        let committed: Vec<u64> = history.iter().skip(1).map(|(r, _)| *r).collect();
        prop_assert_eq!(revs, committed);
    }
}

#[test]
fn lists_before_history_are_expired() {
    let seq = Arc::new(Sequencer::new(1, 0));
    let limits = RingLimits {
        max_events: 2,
        window: std::time::Duration::from_secs(60),
    };
    let mut store = ShardStore::new(0, seq, false, limits, vec![], 0);
    let info = Catalog::with_builtins()
        .snapshot()
        .lookup("", "v1", "configmaps")
        .unwrap()
        .clone();
    for k in 0..5 {
        store.create(&info, cm(0, k, 0)).unwrap();
    }
    store.finish_batch();
    let req = |revision| ListRequest {
        resource: info.storage_key.clone(),
        filter: Arc::new(Filter::default()),
        revision,
        start_after: None,
        limit: 0,
        count_remaining: false,
    };
    assert_eq!(
        store.list(&req(1)).unwrap_err(),
        3,
        "revisions 1..3 were trimmed"
    );
    assert_eq!(store.list(&req(3)).unwrap().items.len(), 3);
    assert_eq!(store.list(&req(5)).unwrap().items.len(), 5);
    assert_eq!(
        store
            .get_at(&info.storage_key, "ns-0", "cm-4", 3)
            .unwrap()
            .map(|o| o.revision),
        None
    );
}

/// Objects with the same labels share one copy of them, on create and
/// when an update leaves the labels alone.
#[test]
fn equal_label_sets_are_stored_once() {
    let (mut store, _rx, info) = new_store();
    let a = store.create(&info, cm(0, 1, 7)).unwrap();
    let b = store.create(&info, cm(1, 2, 7)).unwrap();
    let c = store.create(&info, cm(0, 3, 8)).unwrap();
    assert!(a.labels.shares_with(&b.labels));
    assert!(!a.labels.shares_with(&c.labels));
    assert_eq!(c.labels.get("tier"), Some("t8"));
}

/// A panic in a write's function (an update, a deletion plan or check)
/// fails that write with a 500; the shard keeps its data and serves on.
#[test]
fn a_panicking_write_function_answers_500_and_the_shard_serves_on() {
    let (mut store, _rx, info) = new_store();
    let stored = store.create(&info, cm(0, 1, 1)).unwrap();
    let err = store
        .update(&info, "ns-0", "cm-1", Box::new(|_| panic!("injected")))
        .unwrap_err();
    assert!(matches!(err, StorageError::Internal(_)), "{err:?}");
    let err = store
        .delete_with(&info, "ns-0", "cm-1", Box::new(|_| panic!("injected")))
        .unwrap_err();
    assert!(matches!(err, StorageError::Internal(_)), "{err:?}");
    let current = store.current(&info.storage_key, "ns-0", "cm-1").unwrap();
    assert_eq!(current.revision, stored.revision);
    let body = cm(0, 1, 2);
    let updated = store
        .update(
            &info,
            "ns-0",
            "cm-1",
            Box::new(move |_| Ok(UpdateStep::Write(body.clone()))),
        )
        .unwrap();
    assert!(matches!(updated, UpdateOutcome::Updated(_)));
}
