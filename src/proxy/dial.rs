//! Outbound connections: to kubelets (HTTPS, with the client certificate
//! kube-apiserver presents to them), to pods and service endpoints (plain
//! or HTTPS, unauthenticated), and to component health endpoints.

use futures_lite::io::{AsyncRead, AsyncWrite};
use glommio::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// How a backend is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "http" | "" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            _ => None,
        }
    }
}

/// Where a request goes, and with which TLS identity.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// Connect with the kubelet client configuration (else anonymous).
    pub kubelet: bool,
    /// Only globally routable addresses (pods, Service endpoints, other
    /// ports of nodes): checked once the host is resolved, so a name
    /// cannot lead to the server's own loopback.
    pub routable_only: bool,
}

impl Endpoint {
    /// `host:port`, bracketing IPv6 addresses.
    pub fn authority(&self) -> String {
        match self.host.parse::<IpAddr>() {
            Ok(IpAddr::V6(a)) => format!("[{a}]:{}", self.port),
            _ => format!("{}:{}", self.host, self.port),
        }
    }
}

/// A connected backend: plain TCP or TLS over it.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<futures_rustls::client::TlsStream<TcpStream>>),
}

/// The TLS settings outbound connections use.
#[derive(Debug)]
pub struct Dialer {
    /// To kubelets: `--kubelet-client-certificate` and the kubelet CA
    /// (none given: the kubelet's certificate is not verified, as kube).
    kubelet: Arc<rustls::ClientConfig>,
    /// To everything else over HTTPS: not verified, no client identity
    /// (kube's proxy transport).
    anonymous: Arc<rustls::ClientConfig>,
    pub timeout: Duration,
    /// The plain-HTTP port, which acts as system:masters for whoever
    /// reaches it on loopback: never a backend, whatever a Node's status
    /// or a Service's endpoints say.
    privileged_port: Option<u16>,
}

impl Dialer {
    pub fn new(
        kubelet: rustls::ClientConfig,
        timeout: Duration,
        privileged_port: Option<u16>,
    ) -> Self {
        Self {
            kubelet: Arc::new(kubelet),
            anonymous: Arc::new(unverified_config()),
            timeout,
            privileged_port,
        }
    }

    pub async fn dial(&self, ep: &Endpoint) -> io::Result<Stream> {
        let tls = match ep.scheme {
            Scheme::Http => None,
            Scheme::Https => {
                let config = if ep.kubelet {
                    self.kubelet.clone()
                } else {
                    self.anonymous.clone()
                };
                let name = ServerName::try_from(ep.host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                Some((config, name))
            }
        };
        self.connect(ep, tls).await
    }

    /// A connection to `ep`, over TLS with `tls`'s configuration and the
    /// server name it is to be verified against (a webhook's Service is
    /// dialed at an endpoint address but named `<svc>.<ns>.svc`).
    pub async fn connect(
        &self,
        ep: &Endpoint,
        tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    ) -> io::Result<Stream> {
        let addr = resolve(&ep.host, ep.port).await?;
        let ip = addr.ip().to_canonical();
        let local = ip.is_loopback() || ip.is_unspecified();
        let not_routable =
            ep.routable_only && !kubeshard_core::registry::location::is_global_unicast(&ip);
        if not_routable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("address not allowed: {ip}"),
            ));
        }
        if local && self.privileged_port == Some(addr.port()) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("address not allowed: {addr} is this server's privileged port"),
            ));
        }
        let tcp = TcpStream::connect_timeout(addr, self.timeout)
            .await
            .map_err(io::Error::from)?;
        tcp.set_nodelay(true).map_err(io::Error::from)?;
        let Some((config, name)) = tls else {
            return Ok(Stream::Plain(tcp));
        };
        let tls = futures_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await?;
        Ok(Stream::Tls(Box::new(tls)))
    }
}

/// An address for `host`: literal, or looked up off the executor thread
/// (a resolver may block).
async fn resolve(host: &str, port: u16) -> io::Result<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let owned = host.to_string();
    let found = glommio::executor()
        .spawn_blocking(move || {
            (owned.as_str(), port)
                .to_socket_addrs()
                .map(|mut a| a.next())
        })
        .await?;
    found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}")))
}

/// A client configuration that does not verify the server (kube's default
/// towards kubelets without `--kubelet-certificate-authority`, and towards
/// pods and endpoints always).
pub fn unverified_config() -> rustls::ClientConfig {
    unverified_builder().with_no_client_auth()
}

pub fn unverified_builder(
) -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert> {
    rustls::ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerification(
            rustls::crypto::ring::default_provider(),
        )))
}

#[derive(Debug)]
struct NoVerification(rustls::crypto::CryptoProvider);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_close(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}

/// hyper's IO traits over a backend stream.
pub type BackendIo = kubeshard_shards::hyper_io::HyperIo<Stream>;
