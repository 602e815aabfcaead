//! Connections to extension API servers: TLS verified with the
//! APIService's `caBundle` against the Service's DNS name (or not
//! verified with `insecureSkipTLSVerify`), presenting the proxy client
//! certificate; kept per executor for the next request.

use crate::aggregated::{Remote, Target};
use crate::context::Api;
use crate::proxy::dial::{BackendIo, Endpoint, Scheme, Stream};
use crate::proxy::pool::{self, Idle, Key};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use std::io;

thread_local! {
    static IDLE: Idle<Incoming> = Idle::default();
}

/// An endpoint of `remote`, picked at random among the ready ones.
pub fn pick(remote: &Remote) -> Option<&Target> {
    if remote.targets.is_empty() {
        return None;
    }
    Some(&remote.targets[rand::random::<usize>() % remote.targets.len()])
}

/// The targets of a remote named `server_name`, trusted as `trust_hash`
/// says, at `endpoints`.
pub fn targets(endpoints: &[(String, u16)], server_name: &str, trust_hash: u64) -> Vec<Target> {
    endpoints
        .iter()
        .map(|(host, port)| {
            let endpoint = Endpoint {
                scheme: Scheme::Https,
                host: host.clone(),
                port: *port,
                kubelet: false,
                // Extension servers run anywhere, loopback included (the
                // dialer still refuses the privileged port).
                routable_only: false,
            };
            let key = Key::hashed(&endpoint, server_name, trust_hash);
            Target { endpoint, key }
        })
        .collect()
}

/// A new TLS connection to `ep` for `remote`.
pub async fn connect(api: &Api, remote: &Remote, ep: &Endpoint) -> io::Result<Stream> {
    let identity = api.security.config.front_proxy.client.as_ref();
    let tls = crate::webhook::tls::client_config_with(&remote.ca_bundle, remote.insecure, identity)
        .map_err(io::Error::other)?;
    let name = rustls::pki_types::ServerName::try_from(remote.service.server_name())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    api.config
        .backends
        .dialer
        .connect(ep, Some((tls, name)))
        .await
}

/// A kept connection, or a new one.
pub async fn sender(
    api: &Api,
    remote: &Remote,
    ep: &Endpoint,
    key: &Key,
    fresh: bool,
) -> io::Result<SendRequest<Incoming>> {
    if let Some(s) = IDLE.with(|i| i.take(key, fresh)) {
        return Ok(s);
    }
    let stream = connect(api, remote, ep).await?;
    pool::handshake(BackendIo::new(stream))
        .await
        .map_err(io::Error::other)
}

/// Keeps a connection whose exchange completed.
pub fn give_back(key: Key, sender: SendRequest<Incoming>) {
    IDLE.with(|i| i.give_back(key, sender));
}
