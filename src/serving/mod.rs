//! Serving: listeners, connections and the HTTP protocol layer.

pub mod abort;
pub mod body;
pub mod combine;
pub mod conn;
pub mod connections;
pub mod cut;
pub mod frames;
pub mod io;
pub mod joined;
pub mod lane;
pub mod timer;
pub mod tls;
pub mod turn;
pub mod unread;
pub mod upgrade;
