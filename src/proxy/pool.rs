//! Kept client connections, per executor and per (endpoint, certificate
//! name, trust): a webhook is called on most writes of what it covers and
//! an extension server on every request to its group, and a TLS
//! handshake per call would cost more than the call.

use super::dial::{BackendIo, Endpoint};
use hyper::client::conn::http1::SendRequest;
use std::cell::RefCell;
use std::collections::HashMap;

/// Idle connections kept per key and executor: as many as calls in
/// flight at once under load (every write of a covered kind calls a
/// webhook, so its connections number the executor's concurrent writes).
/// Fewer, and each burst past them pays a TLS handshake per call — with
/// 8, 64 clients creating through one admission webhook ran at 0.14× the
/// throughput of no webhook.
const IDLE_PER_KEY: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key(String, u64);

impl Key {
    /// `trust` tells apart connections verified differently (the roots,
    /// and whether the server is verified at all).
    pub fn new(ep: &Endpoint, server_name: &str, trust: &[u8]) -> Self {
        Self::hashed(ep, server_name, xxhash_rust::xxh3::xxh3_64(trust))
    }

    /// With the trust already hashed (once, not per request).
    pub fn hashed(ep: &Endpoint, server_name: &str, trust: u64) -> Self {
        Key(format!("{}|{server_name}", ep.authority()), trust)
    }
}

/// One executor's idle connections whose requests carry bodies of type
/// `B` (kept in a `thread_local!` by their user).
pub struct Idle<B>(RefCell<HashMap<Key, Vec<SendRequest<B>>>>);

impl<B> Default for Idle<B> {
    fn default() -> Self {
        Self(RefCell::default())
    }
}

impl<B> Idle<B> {
    /// A kept connection that is still open (none when `fresh` is asked
    /// for).
    pub fn take(&self, key: &Key, fresh: bool) -> Option<SendRequest<B>> {
        if fresh {
            return None;
        }
        let mut m = self.0.borrow_mut();
        let idle = m.get_mut(key)?;
        // One given back as its answer ended may not have been marked
        // ready by its connection yet: kept for the next call, not closed.
        let mut settling = Vec::new();
        let mut found = None;
        while let Some(s) = idle.pop() {
            if s.is_ready() {
                found = Some(s);
                break;
            }
            if !s.is_closed() {
                settling.push(s);
            }
        }
        idle.extend(settling);
        found
    }

    /// Keeps a connection whose exchange completed (its answer read to
    /// the end).
    pub fn give_back(&self, key: Key, sender: SendRequest<B>) {
        if sender.is_closed() {
            return;
        }
        let mut m = self.0.borrow_mut();
        let idle = m.entry(key).or_default();
        if idle.len() < IDLE_PER_KEY {
            idle.push(sender);
        }
    }
}

/// An HTTP/1.1 client connection over `io`, driven on this executor.
pub async fn handshake<B>(io: BackendIo) -> hyper::Result<SendRequest<B>>
where
    B: hyper::body::Body + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(io).await?;
    glommio::spawn_local(async move {
        let _ = conn.await;
    })
    .detach();
    Ok(sender)
}
