//! kubeshard-core: the pure API machinery of kubeshard.
//!
//! Everything here is deterministic data manipulation — metadata, the
//! resource catalog, selectors, validation, Status errors, per-kind
//! strategies. Nothing in this crate does IO or knows about threads, so it is
//! equally usable from a shard, a handler, a test or a fuzzer.

#![forbid(unsafe_code)]

pub mod apply;
pub mod audit;
pub mod authn;
pub mod catalog;
pub mod cidr;
pub mod conversion;
pub mod crd;
pub mod defaults;
pub mod fieldvalidation;
pub mod keys;
pub mod meta;
pub mod nodeauthz;
pub mod patch;
pub mod podsecurity;
pub mod portpool;
pub mod protobuf;
pub mod quantity;
pub mod quota;
pub mod rbac;
pub mod registry;
pub mod schema;
pub mod selector;
pub mod status;
pub mod table;
pub mod tolerations;
pub mod units;
pub mod validation;
