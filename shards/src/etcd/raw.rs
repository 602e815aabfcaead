//! Keys under the prefix that hold no served object: kube-apiserver's own
//! bookkeeping, which kubeshard keeps in the same places so that servers
//! of both kinds on one etcd agree — the node-port bitmap
//! (`ranges/servicenodeports`) and the API servers' address leases
//! (`masterleases/<ip>`). The mirror skips these keys
//! ([`super::keys::object_of`]); the registry reads and writes them here,
//! by their path under the prefix.

use super::writes::{unavailable, unchanged_since, Writer};
use crate::backend::StorageError;
use etcd_client::{GetOptions, Txn, TxnOp};
use std::time::Duration;

/// A key's value and its mod revision (what a swap compares).
#[derive(Debug, Clone)]
pub struct RawValue {
    pub value: Vec<u8>,
    pub revision: i64,
}

impl Writer {
    fn raw_key(&self, path: &str) -> Vec<u8> {
        format!("{}/{path}", self.bridge.prefix).into_bytes()
    }

    /// The value at `path` now (a quorum read).
    pub async fn raw_get(&self, path: &str) -> Result<Option<RawValue>, StorageError> {
        let resp = self
            .bridge
            .range(self.raw_key(path), GetOptions::new())
            .await
            .map_err(unavailable)?;
        Ok(resp.kvs().first().map(|kv| RawValue {
            value: kv.value().to_vec(),
            revision: kv.mod_revision(),
        }))
    }

    /// Every key under `path/`, with its value.
    pub async fn raw_list(&self, path: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let resp = self
            .bridge
            .range(
                self.raw_key(&format!("{path}/")),
                GetOptions::new().with_prefix(),
            )
            .await
            .map_err(unavailable)?;
        Ok(resp
            .kvs()
            .iter()
            .map(|kv| {
                let key = String::from_utf8_lossy(kv.key());
                (
                    key.rsplit('/').next().unwrap_or_default().to_string(),
                    kv.value().to_vec(),
                )
            })
            .collect())
    }

    /// Writes `value` at `path` if the key is still at revision `expected`
    /// (None: absent). False when another writer got there first.
    pub async fn raw_swap(
        &self,
        path: &str,
        expected: Option<i64>,
        value: Vec<u8>,
    ) -> Result<bool, StorageError> {
        let key = self.raw_key(path);
        let txn = Txn::new()
            .when([unchanged_since(key.clone(), expected)])
            .and_then([TxnOp::put(key, value, None)]);
        let resp = self.bridge.txn(txn).await.map_err(unavailable)?;
        Ok(resp.succeeded())
    }

    /// Writes `value` at `path` for `ttl`: the key goes away unless written
    /// again before then.
    pub async fn raw_put_for(
        &self,
        path: &str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> Result<(), StorageError> {
        let put = TxnOp::put(self.raw_key(path), value, Some(self.leased(ttl).await?));
        self.bridge
            .txn(Txn::new().and_then([put]))
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    pub async fn raw_delete(&self, path: &str) -> Result<(), StorageError> {
        let txn = Txn::new().and_then([TxnOp::delete(self.raw_key(path), None)]);
        self.bridge.txn(txn).await.map_err(unavailable)?;
        Ok(())
    }
}
