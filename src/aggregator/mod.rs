//! The aggregation layer (kube-aggregator): APIServices in front of the
//! server's own groups. A group version registered by an APIService with
//! a `spec.service` is served by that extension server — its requests,
//! once authenticated and authorized here, are proxied to an endpoint of
//! the Service over TLS verified with the APIService's `caBundle`, as the
//! front proxy (the proxy client certificate, the user in `X-Remote-*`
//! headers). Local APIServices name the server's own groups and are kept
//! in sync with the catalog.
//!
//! One controller on executor 0 ([`controller`]) owns the picture: it
//! probes each service-backed APIService, writes its `Available`
//! condition, fetches its discovery and OpenAPI documents, and publishes
//! the result as [`crate::aggregated::Routes`]. Executors read the published routes with
//! one atomic load per request on `/apis/<group>/<version>` paths, and
//! none at all while no service-backed APIService exists.

pub mod autoregister;
mod available;
pub mod controller;
pub mod convert;
mod documents;
pub mod metrics;
pub mod priority;
pub mod proxy;
mod transport;

pub use crate::aggregated::{Remote, ServiceRef, AUTOMANAGED};
