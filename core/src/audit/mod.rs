//! Audit policy (audit.k8s.io/v1 `Policy`): which requests are recorded
//! and at what level. The server's audit filter asks [`Policy::evaluate`]
//! once per request and writes events accordingly.

mod policy;

pub use policy::{Level, Policy, PolicyRule, Stage};
