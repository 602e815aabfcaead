//! Serving: listeners, connections and the HTTP protocol layer.

pub mod body;
pub mod io;
pub mod listener;
