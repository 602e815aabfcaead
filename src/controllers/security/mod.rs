//! The security front end's own controllers (on executor 0): the bootstrap
//! RBAC policy, ClusterRole aggregation and the legacy service-account
//! token filler. They read the executor's security state (fed by
//! `crate::informer`) and write through `ShardClient` like any writer.

pub mod aggregation;
pub mod bootstrap_policy;
pub mod legacy_tokens;
