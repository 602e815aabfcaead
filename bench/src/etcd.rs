//! etcd target (in progress).
