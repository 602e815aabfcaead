//! Patch engines that need the kind's schema. JSON patch and JSON merge
//! patch are schema-free and come from the `json-patch` crate in the server.

mod order;
pub mod strategic;

#[cfg(test)]
mod strategic_tests;
