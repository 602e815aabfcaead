//! The shards as a cache of etcd (kube's cacher, fed by one watch on the
//! whole prefix instead of one per resource): the state is read once at
//! start, then every change arrives through the watch, in revision
//! order, and goes to the shard that owns its key, which applies it at
//! etcd's revision and hands it to the watch hubs as its own writes are.
//!
//! Every watch response goes to every shard, with the revision it
//! completes (its last event's): a shard
//! reports that revision once it has applied and published what came
//! before it, and the closed revision is the lowest report
//! ([`crate::sequencer::Sequencer::mirrored`]). One prefix watch gives
//! one total order, so no resource waits for another's stream.

use super::bridge::Bridge;
use super::codec;
use super::keys::{object_of, Resolve};
use crate::messages::ShardMsg;
use crate::sequencer::Sequencer;
use crate::store::{Mirrored, MirroredChange};
use etcd_client::{EventType, GetOptions, KeyValue, WatchOptions, WatchResponse};
use kubeshard_cache::StoredObject;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::keys::shard_for;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Keys read per range while loading.
const PAGE: i64 = 10_000;

/// Objects per shard, with their kinds.
pub type ShardObjects = Vec<Vec<(Arc<ResourceInfo>, Arc<StoredObject>)>>;

/// Reads every object under the prefix at one revision: what the shards
/// start with, and the revision their watch continues after.
pub async fn load(
    bridge: &Bridge,
    resolve: &dyn Resolve,
    shards: usize,
) -> Result<(ShardObjects, u64), String> {
    let prefix = format!("{}/", bridge.prefix);
    let end = prefix_end(prefix.as_bytes());
    let mut objects: ShardObjects = vec![Vec::new(); shards];
    let mut from = prefix.as_bytes().to_vec();
    let mut revision = 0;
    loop {
        let mut opts = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if revision > 0 {
            opts = opts.with_revision(revision as i64);
        }
        let page = bridge.range(from.clone(), opts).await?;
        if revision == 0 {
            revision = page.header().map_or(0, |h| h.revision().max(0) as u64);
        }
        for kv in page.kvs() {
            let Some(at) = located(kv, &bridge.prefix, resolve) else {
                continue;
            };
            if let Some(obj) = at.value(kv) {
                let shard = shard_for(&at.info.storage_key, &at.namespace, &at.name, shards);
                let stored = Arc::new(StoredObject::encode(&at.info, &obj, at.revision));
                objects[shard].push((at.info, stored));
            }
        }
        match page.kvs().last() {
            Some(last) if page.more() => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => break,
        }
    }
    Ok((objects, revision))
}

/// Follows the prefix from `after` on, for as long as the shards run.
/// A broken watch resumes after the last revision it delivered.
pub async fn follow(
    bridge: Bridge,
    resolve: Arc<dyn Resolve>,
    inboxes: Vec<async_channel::Sender<ShardMsg>>,
    seq: Arc<Sequencer>,
    mut after: u64,
    asked: async_channel::Receiver<()>,
) {
    let prefix = format!("{}/", bridge.prefix);
    let mut retry = Duration::from_millis(100);
    loop {
        let opts = WatchOptions::new()
            .with_prefix()
            .with_start_revision(after as i64 + 1);
        let (member, mut client) = bridge.pool.pick();
        let (_watcher, mut stream) = match client.watch(prefix.as_bytes(), Some(opts)).await {
            Ok(w) => w.split(),
            Err(e) => {
                bridge.pool.failed(member);
                tracing::warn!(error = %e, "the etcd watch did not start; retrying");
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        loop {
            tokio::select! {
                msg = stream.message() => match msg {
                    Ok(Some(resp)) => {
                        if resp.canceled() {
                            tracing::warn!(
                                compacted = resp.compact_revision(),
                                after,
                                reason = resp.cancel_reason(),
                                "the etcd watch was cancelled"
                            );
                            if resp.compact_revision() > 0 {
                                match resync(&bridge, &resolve, &inboxes, &seq).await {
                                    Ok(at) => after = at,
                                    Err(e) => tracing::warn!(error = %e, "re-reading etcd failed"),
                                }
                            }
                            break;
                        }
                        retry = Duration::from_millis(100);
                        if let Some(through) = dispatch(&resp, &bridge.prefix, &*resolve, &inboxes, &seq).await {
                            after = after.max(through);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        bridge.pool.failed(member);
                        tracing::warn!(error = %e, after, "the etcd watch broke; resuming");
                        break;
                    }
                },
                Ok(()) = asked.recv() => {
                    tokio::spawn(mark_progress(bridge.clone()));
                }
            }
            if inboxes.iter().all(|i| i.is_closed()) {
                return;
            }
        }
        if inboxes.iter().all(|i| i.is_closed()) {
            return;
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(Duration::from_secs(5));
    }
}

/// Reads the whole state again and hands each shard its part: what the
/// mirror does when etcd compacted history it had not yet seen.
async fn resync(
    bridge: &Bridge,
    resolve: &Arc<dyn Resolve>,
    inboxes: &[async_channel::Sender<ShardMsg>],
    seq: &Sequencer,
) -> Result<u64, String> {
    let (objects, revision) = load(bridge, &**resolve, inboxes.len()).await?;
    tracing::warn!(
        revision,
        "the watch cache fell behind etcd's history; re-read it"
    );
    let kinds: Arc<crate::store::KindOf> = {
        let resolve = resolve.clone();
        Arc::new(move |resource: &str, namespaced| {
            resolve
                .info(resource)
                .unwrap_or_else(|| resolve.unknown(resource, namespaced))
        })
    };
    seq.dispatched(revision);
    for (inbox, objects) in inboxes.iter().zip(objects) {
        let kinds = kinds.clone();
        let _ = inbox
            .send(ShardMsg::Resync {
                objects,
                revision,
                kinds,
            })
            .await;
    }
    Ok(revision)
}

/// The key a replica writes to learn how far its watch has come: its
/// event, in revision order behind everything before it, completes the
/// revision it was written at. (etcd's progress notifications can run
/// ahead of events still to come on a watch that is catching up — etcd
/// before 3.4.31/3.5.13, which kube-apiserver refuses to trust for the
/// same reason — so they are not used.) It names no object: the mirror
/// hands only its revision on.
const PROGRESS_KEY: &str = "kubeshard-progress";

/// Writes the progress key, so that its event comes through the watch.
async fn mark_progress(bridge: Bridge) {
    let key = format!("{}/{PROGRESS_KEY}", bridge.prefix);
    let put = super::bridge::with_failover(&bridge.pool, false, |c| {
        let key = key.clone();
        async move { c.kv_client().put(key, "", None).await }
    })
    .await;
    if let Err(e) = put {
        tracing::warn!(error = %e, "could not mark the watch's progress");
    }
}

/// Hands one watch response to the shards; answers the revision it
/// completes, if any.
async fn dispatch(
    resp: &WatchResponse,
    prefix: &str,
    resolve: &dyn Resolve,
    inboxes: &[async_channel::Sender<ShardMsg>],
    seq: &Sequencer,
) -> Option<u64> {
    let events = resp.events();
    // Only events say how far the watch has come (see `mark_progress`).
    let through = events.last()?.kv()?.mod_revision().max(0) as u64;
    let mut parts: Vec<Vec<Mirrored>> = (0..inboxes.len()).map(|_| Vec::new()).collect();
    for ev in events {
        let Some(kv) = ev.kv() else { continue };
        let Some(at) = located(kv, prefix, resolve) else {
            continue;
        };
        let change = match ev.event_type() {
            EventType::Delete => MirroredChange::Delete,
            EventType::Put => match at.value(kv) {
                Some(obj) => MirroredChange::Put(obj),
                None => continue,
            },
        };
        let shard = shard_for(&at.info.storage_key, &at.namespace, &at.name, inboxes.len());
        parts[shard].push(Mirrored {
            info: at.info,
            namespace: at.namespace,
            name: at.name,
            revision: at.revision,
            change,
        });
    }
    seq.dispatched(through);
    for (inbox, changes) in inboxes.iter().zip(parts) {
        let _ = inbox.send(ShardMsg::Mirror { changes, through }).await;
    }
    Some(through)
}

/// Where a key-value of etcd's belongs: the object its key names, and the
/// revision it was written at.
struct Located {
    info: Arc<ResourceInfo>,
    namespace: String,
    name: String,
    revision: u64,
}

/// None for keys that hold no object this server serves.
fn located(kv: &KeyValue, prefix: &str, resolve: &dyn Resolve) -> Option<Located> {
    let (info, namespace, name) = object_of(kv.key_str().ok()?, prefix, resolve)?;
    Some(Located {
        info,
        namespace,
        name,
        revision: kv.mod_revision().max(0) as u64,
    })
}

impl Located {
    /// The stored object; None (logged) when the value does not decode.
    fn value(&self, kv: &KeyValue) -> Option<Value> {
        codec::decode(kv.value(), self.revision)
            .map_err(|e| {
                let key = String::from_utf8_lossy(kv.key());
                tracing::warn!(%key, error = %e, "skipping a value that does not decode");
            })
            .ok()
    }
}

/// The first key after every key that starts with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}
