//! The server as a client: requests forwarded to kubelets (`pods/log`,
//! `exec`, `attach`, `portforward`, `nodes/proxy`), to pods and service
//! endpoints (`pods/proxy`, `services/proxy`), and health probes of the
//! control-plane components (`componentstatuses`).

pub mod dial;
pub mod endpoints;
pub mod flags;
pub mod forward;
pub mod pool;
mod tunnel;

pub use dial::{Endpoint, Scheme};
pub use forward::{forward, KUBELET, PROXIED};
