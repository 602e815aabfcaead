//! kubeshard-cache: what the watch cache is made of.
//!
//! Stored objects (encoded once, shared by reference), events, the bounded
//! event rings that watchers read as cursors, and the filters that decide
//! which watcher sees which event. Nothing here knows about HTTP or about
//! which thread it runs on; the shards crate wires it to executors.

#![forbid(unsafe_code)]

pub mod event;
pub mod filter;
pub mod hub;
pub mod index;
pub mod json;
pub mod object;
pub mod pairs;
pub mod ring;

pub use event::{Event, EventType};
pub use filter::Filter;
pub use hub::Hub;
pub use object::{Protobuf, StoredObject};
pub use ring::{EventRing, RingRead};
