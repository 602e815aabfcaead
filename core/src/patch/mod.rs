//! Patch engines. Strategic merge patch needs the kind's schema; JSON
//! patch ([`json`]) is schema-free and bounds what a patch may cost; JSON
//! merge patch comes from the `json-patch` crate in the server.

pub mod json;
mod key;
mod order;
pub mod strategic;

#[cfg(test)]
mod strategic_equivalence;
#[cfg(test)]
mod strategic_reference;
#[cfg(test)]
mod strategic_tests;
