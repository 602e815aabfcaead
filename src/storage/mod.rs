//! The storage the registry writes through, and what its errors mean to a
//! client: the layer under everything that reads or writes objects.
//! Storage answers about keys ([`StorageError`]); here they become the
//! Status errors kube answers, naming the resource and object.

use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
pub use kubeshard_shards::backend::{Storage, StorageError, UpdateFn, UpdateStep};

#[cfg(feature = "etcd")]
pub mod etcd;

/// What a server starts its shards with: the storage mode, the state to
/// start from, the sequencer its revisions come from, and the lock that
/// keeps other servers off its data directory (the log's).
pub type StoreStart = (
    kubeshard_shards::storage::StorageMode,
    kubeshard_shards::StartState,
    std::sync::Arc<kubeshard_shards::Sequencer>,
    Option<kubeshard_shards::storage::layout::DirLock>,
);

/// The backend this server stores in: the sharded engine (in memory or on
/// its write-ahead log). Code above names only this and the [`Storage`]
/// trait, so another backend plugs in here.
pub type Backend = kubeshard_shards::ShardClient;

/// The Status error a storage error answers for object `name` of `info`.
pub fn status_error(e: StorageError, info: &ResourceInfo, name: &str) -> ApiError {
    match e {
        StorageError::NotFound => ApiError::not_found(&info.group, &info.plural, name),
        StorageError::AlreadyExists => ApiError::already_exists(&info.group, &info.plural, name),
        other => status(other),
    }
}

/// The Status error of a storage error that names no object (reads,
/// lists; a missing object is not an error there).
pub fn status(e: StorageError) -> ApiError {
    match e {
        StorageError::NotFound => ApiError::new(404, "NotFound", "the object was not found"),
        StorageError::AlreadyExists => {
            ApiError::new(409, "AlreadyExists", "the object already exists")
        }
        StorageError::KeyChanged => {
            ApiError::bad_request("an update may not change the object's name or namespace")
        }
        StorageError::TooOld {
            requested,
            compacted,
        } => ApiError::resource_expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        StorageError::Unavailable(why) => ApiError::service_unavailable(why),
        StorageError::Internal(why) => ApiError::internal(&why),
        StorageError::Refused(e) => e,
    }
}

/// Mapping a storage result to the API's.
pub trait StorageResult<T> {
    /// For a request that names object `name` of `info`.
    fn for_object(self, info: &ResourceInfo, name: &str) -> Result<T, ApiError>;
    /// For a read or list, where no object is named.
    fn or_status(self) -> Result<T, ApiError>;
}

impl<T> StorageResult<T> for Result<T, StorageError> {
    fn for_object(self, info: &ResourceInfo, name: &str) -> Result<T, ApiError> {
        self.map_err(|e| status_error(e, info, name))
    }

    fn or_status(self) -> Result<T, ApiError> {
        self.map_err(status)
    }
}

/// Every current object of a resource in one namespace, at the storage's
/// progress (what a controller or a subresource handler reads before it
/// acts: the lifecycle's namespace sweep, an eviction's budgets).
pub async fn list_in(
    storage: &Backend,
    info: &ResourceInfo,
    namespace: &str,
) -> Result<Vec<std::sync::Arc<kubeshard_cache::StoredObject>>, ApiError> {
    list_where(storage, info, Some(namespace)).await
}

/// Every current object of a resource, in all namespaces.
pub async fn list_all(
    storage: &Backend,
    info: &ResourceInfo,
) -> Result<Vec<std::sync::Arc<kubeshard_cache::StoredObject>>, ApiError> {
    list_where(storage, info, None).await
}

async fn list_where(
    storage: &Backend,
    info: &ResourceInfo,
    namespace: Option<&str>,
) -> Result<Vec<std::sync::Arc<kubeshard_cache::StoredObject>>, ApiError> {
    let req = kubeshard_shards::store::ListRequest {
        resource: info.storage_key.clone(),
        filter: std::sync::Arc::new(kubeshard_cache::Filter {
            namespace: namespace.map(str::to_string),
            ..kubeshard_cache::Filter::default()
        }),
        revision: storage.progress(),
        start_after: None,
        limit: 0,
        count_remaining: false,
    };
    Ok(storage
        .list(&req)
        .await
        .or_status()?
        .into_iter()
        .flat_map(|c| c.items)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::Catalog;

    #[test]
    fn key_errors_name_the_object_and_refusals_pass_through() {
        let catalog = Catalog::with_builtins();
        let snap = catalog.snapshot();
        let info = snap.lookup("apps", "v1", "deployments").unwrap();
        let e = status_error(StorageError::NotFound, info, "web");
        assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
        assert!(
            e.message.contains("deployments.apps \"web\""),
            "{}",
            e.message
        );
        let e = status_error(StorageError::AlreadyExists, info, "web");
        assert_eq!(e.code, 409);
        let e = status(StorageError::TooOld {
            requested: 5,
            compacted: 9,
        });
        assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
        let refusal = ApiError::bad_request("no");
        let e = status(StorageError::Refused(refusal.clone()));
        assert_eq!((e.code, e.message), (refusal.code, refusal.message));
        assert_eq!(status(StorageError::Unavailable("x".into())).code, 503);
        assert_eq!(status(StorageError::Internal("x".into())).code, 500);
    }
}
