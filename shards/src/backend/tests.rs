//! The storage contract as property tests, written once against
//! [`Storage`] and run on both backends: the plain [`Reference`] map and
//! the sharded engine (two executors, in memory), reached through the same
//! trait the registry uses.
//!
//! After any sequence of creates, updates, upserts and deletes: each write
//! succeeds exactly when the model says it may and fails with the model's
//! error; revisions grow; a write is visible once [`Storage::progress`]
//! covers it; and a list at every past revision, paged at any size, with
//! or without a namespace, equals the model at that revision; and the
//! watch hub fed by the backend's [`WatchFeed`] holds exactly one event
//! per write, in revision order, with the model's before and after.

use super::feed::pump;
use super::reference::Reference;
use super::{Storage, StorageError, UpdateStep};
use crate::runtime::{self, RuntimeConfig, StartState};
use crate::sequencer::Sequencer;
use crate::storage::StorageMode;
use crate::store::{ListRequest, NsName, UpdateOutcome};
use kubeshard_cache::ring::RingLimits;
use kubeshard_cache::{EventType, Filter, Hub};
use kubeshard_core::catalog::{Catalog, ResourceInfo};
use kubeshard_core::registry::deletion::DeleteStep;
use kubeshard_core::selector::labels::LabelSelector;
use kubeshard_core::status::ApiError;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    Create(u8, u8, u8),
    /// An update that refuses to create.
    Update(u8, u8, u8),
    /// An update that creates when absent (PUT, apply).
    Upsert(u8, u8, u8),
    Delete(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let key = (0u8..2, 0u8..5);
    prop_oneof![
        (key.clone(), 0u8..3).prop_map(|((n, k), l)| Op::Create(n, k, l)),
        (key.clone(), 0u8..3).prop_map(|((n, k), l)| Op::Update(n, k, l)),
        (key.clone(), 0u8..3).prop_map(|((n, k), l)| Op::Upsert(n, k, l)),
        key.prop_map(|(n, k)| Op::Delete(n, k)),
    ]
}

/// Every case writes under its own label and namespaces, so cases can
/// share one running engine.
static CASES: AtomicU32 = AtomicU32::new(0);

fn configmaps() -> Arc<ResourceInfo> {
    Catalog::with_builtins()
        .snapshot()
        .lookup("", "v1", "configmaps")
        .unwrap()
        .clone()
}

fn namespace(case: u32, n: u8) -> String {
    format!("c{case}-ns-{n}")
}

fn object(case: u32, n: u8, k: u8, l: u8) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("cm-{k}"), "namespace": namespace(case, n),
                        "labels": {"case": case.to_string(), "tier": format!("t{l}")}},
           "data": {"label": l.to_string()}})
}

type Model = BTreeMap<(String, String), u8>;

fn label_of(obj: &kubeshard_cache::StoredObject) -> u8 {
    obj.to_value()["data"]["label"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap()
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn missing(e: &StorageError) -> bool {
    match e {
        StorageError::NotFound => true,
        StorageError::Refused(r) => r.code == 404,
        _ => false,
    }
}

/// One watch event as the model expects it: revision, type, namespace,
/// name, the label after and the label before.
type Seen = (u64, EventType, String, String, u8, Option<u8>);

/// Runs `ops` against `s` and the model; Err says what differed. `hub`
/// is fed from `s`'s watch feed: by the backend's own loop (`feed` None),
/// or here after every write.
async fn check<S: Storage>(
    s: &S,
    hub: &RefCell<Hub>,
    mut feed: Option<&mut S::Feed>,
    case: u32,
    ops: &[Op],
) -> Result<(), String> {
    let info = configmaps();
    let mut model = Model::new();
    let mut snapshots: Vec<(u64, Model)> = Vec::new();
    let mut expected: Vec<Seen> = Vec::new();
    let start = s.current_revision();
    let mut last = start;
    for op in ops {
        let (n, k) = match *op {
            Op::Create(n, k, _) | Op::Update(n, k, _) | Op::Upsert(n, k, _) | Op::Delete(n, k) => {
                (n, k)
            }
        };
        let key = (namespace(case, n), format!("cm-{k}"));
        let present = model.get(&key).copied();
        let written = match *op {
            Op::Create(_, _, l) => match s.create(&info, object(case, n, k, l)).await {
                Ok(o) => {
                    ensure(present.is_none(), || {
                        format!("{op:?}: created over {present:?}")
                    })?;
                    model.insert(key.clone(), l);
                    Some((o.revision, EventType::Added, l))
                }
                Err(StorageError::AlreadyExists) if present.is_some() => None,
                Err(e) => return Err(format!("{op:?}: {e:?} with {present:?}")),
            },
            Op::Update(_, _, l) | Op::Upsert(_, _, l) => {
                let creates = matches!(op, Op::Upsert(..));
                let body = object(case, n, k, l);
                let name = key.1.clone();
                let outcome = s
                    .guaranteed_update(
                        &info,
                        &key.0,
                        &key.1,
                        Box::new(move |old| match old {
                            None if !creates => Err(ApiError::not_found("", "configmaps", &name)),
                            _ => Ok(UpdateStep::Write(body.clone())),
                        }),
                    )
                    .await;
                match (outcome, present) {
                    (Err(e), None) if !creates && missing(&e) => None,
                    (Ok(UpdateOutcome::Created(o)), None) if creates => {
                        model.insert(key.clone(), l);
                        Some((o.revision, EventType::Added, l))
                    }
                    (Ok(UpdateOutcome::Unchanged(o)), Some(p)) if p == l => {
                        ensure(o.revision <= last, || format!("{op:?}: unchanged drew"))?;
                        None
                    }
                    (Ok(UpdateOutcome::Updated(o)), Some(p)) if p != l => {
                        model.insert(key.clone(), l);
                        Some((o.revision, EventType::Modified, l))
                    }
                    (other, p) => return Err(format!("{op:?}: {other:?} with {p:?}")),
                }
            }
            Op::Delete(..) => {
                let plan = Box::new(|_: &Arc<_>| Ok(DeleteStep::Delete));
                match s.delete(&info, &key.0, &key.1, plan).await {
                    Ok(out) => {
                        let Some(p) = present else {
                            return Err(format!("{op:?}: deleted nothing"));
                        };
                        model.remove(&key);
                        Some((out.object().revision, EventType::Deleted, p))
                    }
                    Err(StorageError::NotFound) if present.is_none() => None,
                    Err(e) => return Err(format!("{op:?}: {e:?} with {present:?}")),
                }
            }
        };
        if let Some((rev, kind, l)) = written {
            ensure(rev > last, || {
                format!("{op:?}: revision {rev} after {last}")
            })?;
            last = rev;
            ensure(s.wait_progress(rev, Duration::from_secs(5)).await, || {
                format!("{op:?}: progress never reached {rev}")
            })?;
            snapshots.push((rev, model.clone()));
            let before = if kind == EventType::Added {
                None
            } else {
                present
            };
            expected.push((rev, kind, key.0.clone(), key.1.clone(), l, before));
            if let Some(f) = feed.as_deref_mut() {
                pump(hub, f, None, std::time::Instant::now());
            }
        }
        let got = s
            .get(&info.storage_key, &key.0, &key.1)
            .await
            .map_err(|e| format!("get: {e:?}"))?;
        let got = got.as_deref().map(label_of);
        ensure(got == model.get(&key).copied(), || {
            format!("{op:?}: get answered {got:?}, model {:?}", model.get(&key))
        })?;
    }
    // Progress covering a write makes it visible to reads at once; the
    // hub takes it on its next turn.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while hub.borrow().released() < last {
        ensure(std::time::Instant::now() < deadline, || {
            format!("the hub never released {last}")
        })?;
        futures_lite::future::yield_now().await;
    }
    let seen: Vec<Seen> = {
        let mut h = hub.borrow_mut();
        let ring = h.ring(&info.storage_key);
        let events = ring
            .ring()
            .events_after(start)
            .map_err(|c| format!("the hub's history was trimmed through {c}"))?;
        let ours = format!("c{case}-");
        events
            .filter(|e| e.object.namespace.starts_with(&ours))
            .map(|e| {
                let o = &e.object;
                let before = e.prev.as_deref().map(label_of);
                let after = label_of(o);
                (
                    e.revision,
                    e.kind,
                    o.namespace.to_string(),
                    o.name.to_string(),
                    after,
                    before,
                )
            })
            .collect()
    };
    ensure(seen == expected, || {
        format!("watch events {seen:?}, model {expected:?}")
    })?;
    for (rev, state) in &snapshots {
        for ns in [None, Some(0u8), Some(1)] {
            for limit in [0usize, 1, 3] {
                let listed = list_pages(s, &info, case, ns, *rev, limit).await?;
                let want: Model = state
                    .iter()
                    .filter(|((n, _), _)| ns.is_none_or(|ns| *n == namespace(case, ns)))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                ensure(listed == want, || {
                    format!("list at {rev} ns {ns:?} limit {limit}: {listed:?}, model {want:?}")
                })?;
            }
        }
    }
    Ok(())
}

/// A whole list, page by page, merged from every part as the list
/// handler merges them.
async fn list_pages<S: Storage>(
    s: &S,
    info: &ResourceInfo,
    case: u32,
    ns: Option<u8>,
    revision: u64,
    limit: usize,
) -> Result<Model, String> {
    let filter = Arc::new(Filter {
        namespace: ns.map(|n| namespace(case, n)),
        labels: LabelSelector::parse(&format!("case={case}")).unwrap(),
        ..Filter::default()
    });
    let mut out = Model::new();
    let mut start_after: Option<NsName> = None;
    loop {
        let req = ListRequest {
            resource: info.storage_key.clone(),
            filter: filter.clone(),
            revision,
            start_after: start_after.clone(),
            limit,
            count_remaining: false,
        };
        let chunks = s.list(&req).await.map_err(|e| format!("list: {e:?}"))?;
        let more = chunks.iter().any(|c| c.more);
        let mut items: Vec<_> = chunks.into_iter().flat_map(|c| c.items).collect();
        items.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let page_full = limit > 0 && items.len() >= limit;
        if limit > 0 {
            items.truncate(limit);
        }
        for o in &items {
            let key = (o.namespace.to_string(), o.name.to_string());
            if out.insert(key, label_of(o)).is_some() {
                return Err(format!("{}/{} listed twice", o.namespace, o.name));
            }
        }
        match items.last() {
            Some(o) if more || page_full => {
                start_after = Some((o.namespace.clone(), o.name.clone()));
            }
            _ => return Ok(out),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_reference_map_keeps_the_contract(ops in prop::collection::vec(op(), 1..40)) {
        let s = Reference::default();
        let case = CASES.fetch_add(1, Ordering::Relaxed);
        let hub = RefCell::new(Hub::new(0, RingLimits::default()));
        let mut feed = s.watch_feed().unwrap();
        prop_assert!(s.watch_feed().is_none(), "the feed is taken once");
        let r = futures_lite::future::block_on(check(&s, &hub, Some(&mut feed), case, &ops));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// One case for the engine: the ops, and where to send the verdict.
type Job = (u32, Work, async_channel::Sender<Result<(), String>>);

/// What executor 0 runs for a job.
enum Work {
    Ops(Vec<Op>),
    PanicOnRemoteShard,
    FloodRemoteShard,
    Background,
}

/// The sharded engine, two executors in memory, running `check` for
/// every job sent to executor 0; it stops when `shutdown` is triggered and
/// the job sender dropped.
fn engine(
    shutdown: runtime::Shutdown,
    inbox_capacity: usize,
) -> (async_channel::Sender<Job>, std::thread::JoinHandle<()>) {
    let (jobs_tx, jobs_rx) = async_channel::unbounded::<Job>();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cfg = RuntimeConfig {
        shards: 2,
        cpus: (0..cpus).collect(),
        limits: RingLimits::default(),
        io_memory: 512 * 1024,
        spin_before_park: None,
        storage: StorageMode::Memory,
        inbox_capacity,
    };
    let handle = std::thread::spawn(move || {
        let seq = Arc::new(Sequencer::new(cfg.shards, 0));
        let front_end = move |ctx: std::rc::Rc<runtime::ExecutorContext>| {
            let jobs = jobs_rx.clone();
            async move {
                if ctx.id != 0 {
                    return ctx.shutdown.wait().await;
                }
                while let Ok((case, work, reply)) = jobs.recv().await {
                    let verdict = match work {
                        Work::Ops(ops) => check(&ctx.shards, &ctx.hub, None, case, &ops).await,
                        Work::PanicOnRemoteShard => panic_on_remote_shard(&ctx.shards, case).await,
                        Work::FloodRemoteShard => flood_remote_shard(&ctx, case).await,
                        Work::Background => background_stays_in_its_queue(&ctx).await,
                    };
                    let _ = reply.send(verdict).await;
                }
            }
        };
        runtime::run(cfg, seq, shutdown, StartState::default(), front_end).unwrap();
    });
    (jobs_tx, handle)
}

#[test]
fn the_sharded_engine_keeps_the_contract() {
    let (mut stop, shutdown) = runtime::shutdown_pair();
    let (jobs, engine) = engine(shutdown, runtime::INBOX_CAPACITY);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
    let result = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        let case = CASES.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = async_channel::bounded(1);
        jobs.send_blocking((case, Work::Ops(ops), tx)).unwrap();
        let verdict = rx.recv_blocking().unwrap();
        prop_assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
        Ok(())
    });
    drop(jobs);
    stop.trigger();
    engine.join().unwrap();
    result.unwrap();
}

/// A panic in an update function on the shard that owns the key — not
/// the asking executor's — fails that write as Internal; the object is
/// untouched and both shards go on serving reads and writes.
async fn panic_on_remote_shard<S: Storage>(s: &S, case: u32) -> Result<(), String> {
    let info = configmaps();
    let remote = (0..64u8)
        .find(|k| {
            let ns = namespace(case, 0);
            kubeshard_core::keys::shard_for(&info.storage_key, &ns, &format!("cm-{k}"), 2) == 1
        })
        .ok_or("no key on shard 1")?;
    let local = (0..64u8)
        .find(|k| {
            let ns = namespace(case, 0);
            kubeshard_core::keys::shard_for(&info.storage_key, &ns, &format!("cm-{k}"), 2) == 0
        })
        .ok_or("no key on shard 0")?;
    let created = s
        .create(&info, object(case, 0, remote, 1))
        .await
        .map_err(|e| format!("create: {e:?}"))?;
    let name = format!("cm-{remote}");
    let ns = namespace(case, 0);
    let panicked = s
        .guaranteed_update(&info, &ns, &name, Box::new(|_| panic!("injected")))
        .await;
    ensure(matches!(panicked, Err(StorageError::Internal(_))), || {
        format!("a panicking update answered {panicked:?}")
    })?;
    let now = s
        .get(&info.storage_key, &ns, &name)
        .await
        .map_err(|e| format!("{e:?}"))?;
    ensure(now.map(|o| o.revision) == Some(created.revision), || {
        "the object changed".into()
    })?;
    let body = object(case, 0, remote, 2);
    let updated = s
        .guaranteed_update(
            &info,
            &ns,
            &name,
            Box::new(move |_| Ok(UpdateStep::Write(body.clone()))),
        )
        .await;
    ensure(matches!(updated, Ok(UpdateOutcome::Updated(_))), || {
        format!("the next update answered {updated:?}")
    })?;
    s.create(&info, object(case, 0, local, 1))
        .await
        .map_err(|e| format!("the local shard: {e:?}"))?;
    Ok(())
}

#[test]
fn a_panic_on_a_remote_shard_fails_one_write_and_both_shards_serve_on() {
    run_one(Work::PanicOnRemoteShard, runtime::INBOX_CAPACITY).unwrap();
}

/// Concurrent writes to keys another shard owns, many more than its inbox
/// holds, all land: senders wait for room (back-pressure) rather than
/// fail or queue without bound.
async fn flood_remote_shard(ctx: &Rc<runtime::ExecutorContext>, case: u32) -> Result<(), String> {
    let info = configmaps();
    let ns = namespace(case, 0);
    let remote: Vec<u8> = (0..=u8::MAX)
        .filter(|k| {
            kubeshard_core::keys::shard_for(&info.storage_key, &ns, &format!("cm-{k}"), 2) == 1
        })
        .collect();
    let writes: Vec<_> = remote
        .iter()
        .map(|&k| {
            let (ctx, info) = (ctx.clone(), info.clone());
            glommio::spawn_local(
                async move { ctx.shards.create(&info, object(case, 0, k, 1)).await },
            )
        })
        .collect();
    for w in writes {
        w.await
            .map_err(|e| format!("a write failed under back-pressure: {e:?}"))?;
    }
    let listed = list_pages(
        &ctx.shards,
        &info,
        case,
        Some(0),
        ctx.shards.current_revision(),
        0,
    )
    .await?;
    ensure(listed.len() == remote.len(), || {
        format!("{} of {} writes stored", listed.len(), remote.len())
    })
}

/// Runs one job on a fresh engine whose inboxes hold `inbox_capacity`.
fn run_one(work: Work, inbox_capacity: usize) -> Result<(), String> {
    let (mut stop, shutdown) = runtime::shutdown_pair();
    let (jobs, engine) = engine(shutdown, inbox_capacity);
    let (tx, rx) = async_channel::bounded(1);
    let case = CASES.fetch_add(1, Ordering::Relaxed);
    jobs.send_blocking((case, work, tx)).unwrap();
    let verdict = rx.recv_blocking().unwrap();
    drop(jobs);
    stop.trigger();
    engine.join().unwrap();
    verdict
}

#[test]
fn a_flood_into_a_full_inbox_waits_and_loses_nothing() {
    run_one(Work::FloodRemoteShard, 1).unwrap();
}

/// Background work (controllers, snapshots, bootstrap) runs in the
/// executor's lower-share queue, and so does every task it spawns.
async fn background_stays_in_its_queue(ctx: &Rc<runtime::ExecutorContext>) -> Result<(), String> {
    let (tx, rx) = async_channel::bounded(1);
    runtime::spawn_background(ctx.background, async move {
        let here = glommio::executor().current_task_queue();
        let spawned =
            glommio::spawn_local(async { glommio::executor().current_task_queue() }).await;
        let _ = tx.send((here, spawned)).await;
    });
    let (here, spawned) = rx.recv().await.map_err(|e| e.to_string())?;
    let requests = glommio::executor().current_task_queue();
    ensure(here == ctx.background && spawned == ctx.background, || {
        format!("ran in {here:?} and {spawned:?}, not {:?}", ctx.background)
    })?;
    ensure(requests != ctx.background, || {
        "requests run in the background queue".into()
    })
}

#[test]
fn background_work_runs_in_the_background_queue() {
    run_one(Work::Background, runtime::INBOX_CAPACITY).unwrap();
}

/// A compare-and-swap backend runs the update function again when another
/// writer got in between its read and its write; the last run's answer is
/// what lands and nothing the other writer wrote is lost from history.
#[test]
fn a_conflicting_writer_makes_the_update_function_run_again() {
    let s = Reference::default();
    let info = configmaps();
    futures_lite::future::block_on(async {
        s.create(&info, object(9999, 0, 0, 0)).await.unwrap();
        s.interfere(&info, object(9999, 0, 0, 1));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        let out = s
            .guaranteed_update(
                &info,
                &namespace(9999, 0),
                "cm-0",
                Box::new(move |old| {
                    let old = old.unwrap();
                    record.lock().unwrap().push(label_of(old));
                    Ok(UpdateStep::Write(object(9999, 0, 0, label_of(old) + 1)))
                }),
            )
            .await
            .unwrap();
        // First run saw 0; the other writer stored 1; the second run saw
        // 1 and stored 2.
        assert_eq!(*seen.lock().unwrap(), vec![0, 1]);
        assert_eq!(label_of(out.object()), 2);
        assert_eq!(s.update_calls.get(), 2);
        assert_eq!(out.object().revision, 3);
    });
}
