//! The server half of the generic registry: carries out the pure rules of
//! `kubeshard_core::registry` against the shards (kube's
//! `registry/generic/registry.Store`). Handlers and the built-in
//! controllers both write through here, so a deletion or an update means
//! the same thing whoever asks for it.

mod delete;
mod finalize;
mod update;

pub use delete::delete;
pub use finalize::set_spec_finalizers;
pub use update::{update_with, Mutation};
