//! Connections to extension API servers: TLS verified with the
//! APIService's `caBundle` against the Service's DNS name (or not
//! verified with `insecureSkipTLSVerify`), presenting the proxy client
//! certificate; kept per executor for the next request.

use super::Remote;
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
pub fn endpoint(remote: &Remote) -> Option<Endpoint> {
    if remote.endpoints.is_empty() {
        return None;
    }
    let (host, port) = &remote.endpoints[rand::random::<usize>() % remote.endpoints.len()];
    Some(Endpoint {
        scheme: Scheme::Https,
        host: host.clone(),
        port: *port,
        kubelet: false,
        // Extension servers run anywhere, loopback included (the dialer
        // still refuses the privileged port).
        routable_only: false,
    })
}

/// A new TLS connection to `ep` for `remote`.
pub async fn connect(api: &Api, remote: &Remote, ep: &Endpoint) -> io::Result<Stream> {
    let identity = api.security.config.front_proxy.client.as_ref();
    let tls = crate::webhook::tls::client_config_with(&remote.ca_bundle, remote.insecure, identity)
        .map_err(io::Error::other)?;
    let name = rustls::pki_types::ServerName::try_from(remote.server_name())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    api.config
        .backends
        .dialer
        .connect(ep, Some((tls, name)))
        .await
}

/// What tells this remote's kept connections apart from others to the
/// same address.
pub fn key(remote: &Remote, ep: &Endpoint) -> Key {
    let mut trust = remote.ca_bundle.clone();
    trust.push(u8::from(remote.insecure));
    Key::new(ep, &remote.server_name(), &trust)
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
    pool::handshake(BackendIo(stream))
        .await
        .map_err(io::Error::other)
}

/// Keeps a connection whose exchange completed.
pub fn give_back(key: Key, sender: SendRequest<Incoming>) {
    IDLE.with(|i| i.give_back(key, sender));
}
