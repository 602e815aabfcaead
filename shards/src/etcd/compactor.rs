//! Compaction of etcd's history, as kube-apiserver does it with
//! `--etcd-compaction-interval`: every interval, the revision seen one
//! interval earlier is compacted, so history reaches back one to two
//! intervals. Every replica runs this; a counter key in etcd (its version
//! is the number of rounds so far) lets one of them act per round, so
//! replicas — and kube-apiservers on the same etcd — do not compact
//! twice. A round a replica loses resets its clock to the winner's.

use super::bridge::{with_failover, Pool};
use etcd_client::{Compare, CompareOp, TxnOp, TxnOpResponse};
use std::sync::Arc;
use std::time::Duration;

/// The key kube-apiserver keeps the last compaction in (outside the
/// prefix, shared by every server of the cluster).
const COMPACT_KEY: &str = "compact_rev_key";

pub async fn run(pool: Arc<Pool>, interval: Duration) {
    let mut rounds = 0i64;
    let mut seen = 0i64;
    loop {
        tokio::time::sleep(interval).await;
        let txn = etcd_client::Txn::new()
            .when([Compare::version(COMPACT_KEY, CompareOp::Equal, rounds)])
            .and_then([TxnOp::put(COMPACT_KEY, seen.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_KEY, None)]);
        let resp = match with_failover(&pool, false, |c| {
            let txn = txn.clone();
            async move { c.kv_client().txn(txn).await }
        })
        .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "etcd compaction round failed");
                continue;
            }
        };
        let now = resp.header().map_or(0, |h| h.revision());
        if !resp.succeeded() {
            // Another server took this round: follow its count.
            rounds = resp
                .op_responses()
                .into_iter()
                .find_map(|r| match r {
                    TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.version()),
                    _ => None,
                })
                .unwrap_or(rounds);
            seen = now;
            continue;
        }
        rounds += 1;
        if seen > 0 {
            let compacted = with_failover(&pool, true, |c| async move {
                c.kv_client().compact(seen, None).await
            })
            .await;
            match compacted {
                Ok(_) => tracing::info!(revision = seen, "compacted etcd"),
                Err(e) => tracing::warn!(error = %e, revision = seen, "etcd compaction failed"),
            }
        }
        seen = now;
    }
}
