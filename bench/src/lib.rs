//! kubeshard-bench: a load generator for any Kubernetes API server, and the
//! criterion micro-benchmarks of kubeshard's hot paths (in `benches/`).
//!
//! The pieces, from the wire up: [`target`] (where to connect, refusing
//! anything but loopback unless told), [`client`] (hyper 1 over a fixed set
//! of connections, HTTP/1.1 or HTTP/2, plain or rustls), [`scheduler`]
//! (closed and open loop, the latter free of coordinated omission),
//! [`stats`] (hdrhistogram per operation and per second), [`workloads`],
//! and the outputs: [`report`] (JSON and the terminal table), [`charts`]
//! (SVG) and [`procfs`] (server CPU and memory).

pub mod charts;
pub mod cli;
pub mod client;
pub mod compare;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod kubeconfig;
pub mod metrics_server;
pub mod objects;
pub mod procfs;
pub mod progress;
pub mod protowire;
pub mod report;
pub mod runner;
pub mod scheduler;
pub mod stats;
pub mod target;
pub mod tls;
pub mod watcher;
pub mod webhook;
pub mod workloads;
