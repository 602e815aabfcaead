//! kube-apiserver's bookkeeping keys (the node-port bitmap, the API
//! servers' address leases), reachable when the store is one other
//! servers share — with `--storage etcd`. Without an etcd backend in the
//! build the type has no values, so code above asks for it, finds none,
//! and keeps its bookkeeping in memory, with no `cfg` of its own.

#[cfg(feature = "etcd")]
pub use crate::etcd::raw::RawValue;
#[cfg(feature = "etcd")]
pub use crate::etcd::Writer as SharedKeys;

#[cfg(not(feature = "etcd"))]
mod absent {
    use crate::backend::StorageError;
    use std::time::Duration;

    #[derive(Debug, Clone)]
    pub struct RawValue {
        pub value: Vec<u8>,
        pub revision: i64,
    }

    /// No shared store in this build: never constructed.
    pub enum SharedKeys {}

    impl SharedKeys {
        pub async fn raw_get(&self, _: &str) -> Result<Option<RawValue>, StorageError> {
            match *self {}
        }
        pub async fn raw_list(&self, _: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
            match *self {}
        }
        pub async fn raw_swap(
            &self,
            _: &str,
            _: Option<i64>,
            _: Vec<u8>,
        ) -> Result<bool, StorageError> {
            match *self {}
        }
        pub async fn raw_put_for(
            &self,
            _: &str,
            _: Vec<u8>,
            _: Duration,
        ) -> Result<(), StorageError> {
            match *self {}
        }
        pub async fn raw_delete(&self, _: &str) -> Result<(), StorageError> {
            match *self {}
        }
    }
}
#[cfg(not(feature = "etcd"))]
pub use absent::{RawValue, SharedKeys};
