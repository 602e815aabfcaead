//! The apiextensions server's controllers, for CustomResourceDefinitions:
//! naming (are the CRD's names free?), establishing (serve the kind:
//! catalog entries built from the CRD, so custom resources go through the
//! same registry, store and watch cache as built-in kinds), and the
//! cleanup finalizer (a deleted CRD's instances go first, then the CRD,
//! then the kind).
//!
//! One task on executor 0 follows the CRDs through an executor-local
//! informer; the catalog is shared, so a kind registered here is served
//! by every executor from its next request. At start, every established
//! CRD is served again before the server reports ready.

mod cleanup;
mod controller;
pub mod conversion;

pub use controller::{restore, start};
