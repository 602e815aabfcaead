//! Where the load goes and how to authenticate there.
//!
//! This workplace forbids traffic to anything but loopback, so a target is
//! refused unless its host is a loopback name or address (or
//! `--allow-remote` says otherwise), and the dialer checks every resolved
//! address again.

use crate::cli::TargetArgs;
use crate::kubeconfig;
use crate::tls::TlsSettings;
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Clone)]
pub struct Target {
    /// As given (for reports).
    pub url: String,
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Path prefix of the URL without the trailing slash ("" for none).
    pub base_path: String,
    /// The `Authorization` header value, if any.
    pub authorization: Option<String>,
    /// The user requests act as (`Impersonate-User`), if any.
    pub impersonate: Option<String>,
    pub tls_settings: TlsSettings,
    pub http2: bool,
    /// Reads ask for protobuf (`--protobuf`).
    pub protobuf: bool,
    pub allow_remote: bool,
}

impl Target {
    /// Resolves flags and kubeconfig into a target; `url` overrides both.
    pub fn from_args(args: &TargetArgs, url: Option<&str>) -> Result<Target> {
        let kc = match &args.kubeconfig {
            Some(p) => kubeconfig::load(p, args.context.as_deref())?,
            None => kubeconfig::KubeContext::default(),
        };
        let url = url
            .map(str::to_string)
            .or_else(|| args.url.clone())
            .or_else(|| kc.server.clone())
            .ok_or_else(|| anyhow!("no target: pass --url or --kubeconfig"))?;
        let mut t = Target::parse(&url, args.allow_remote)?;
        t.http2 = args.http2;
        t.protobuf = args.protobuf;
        t.impersonate = args.impersonate.clone();
        t.authorization = match (&args.token, &kc.token, &kc.basic) {
            (Some(tok), _, _) | (None, Some(tok), _) => Some(format!("Bearer {tok}")),
            (None, None, Some((u, p))) => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )),
            _ => None,
        };
        let ca_pem = match &args.ca_file {
            Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
            None => kc.ca_pem,
        };
        t.tls_settings = TlsSettings {
            ca_pem,
            insecure_skip_verify: args.insecure_skip_tls_verify || kc.insecure_skip_tls_verify,
            client_cert_pem: kc.client_cert_pem,
            client_key_pem: kc.client_key_pem,
        };
        Ok(t)
    }

    /// Parses `http[s]://host[:port][/prefix]` and applies the loopback rule.
    pub fn parse(url: &str, allow_remote: bool) -> Result<Target> {
        let uri: http::Uri = url.parse().with_context(|| format!("bad URL {url:?}"))?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => bail!("URL {url:?} must start with http:// or https://"),
        };
        let host = uri
            .host()
            .ok_or_else(|| anyhow!("URL {url:?} has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        if !allow_remote && !is_loopback_host(&host) {
            bail!(
                "refusing target {url:?}: {host} is not a loopback address \
                 (load must stay on this machine; pass --allow-remote to override)"
            );
        }
        Ok(Target {
            url: url.to_string(),
            tls,
            host,
            port,
            base_path: uri.path().trim_end_matches('/').to_string(),
            authorization: None,
            impersonate: None,
            tls_settings: TlsSettings::default(),
            http2: false,
            protobuf: false,
            allow_remote,
        })
    }

    /// `host:port` as the Host header and h2 `:authority` carry it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Resolves the host, keeping only loopback addresses unless remote
    /// targets are allowed.
    pub async fn resolve(&self) -> Result<Vec<SocketAddr>> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .with_context(|| format!("resolving {}", self.host))?
            .filter(|a| self.allow_remote || a.ip().is_loopback())
            .collect();
        if addrs.is_empty() {
            bail!("{} resolves to no loopback address", self.host);
        }
        Ok(addrs)
    }
}

/// `localhost`, 127.0.0.0/8 and ::1.
pub fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_only_by_default() {
        assert!(Target::parse("http://127.0.0.1:8080", false).is_ok());
        assert!(Target::parse("http://127.9.9.9:8080", false).is_ok());
        assert!(Target::parse("https://localhost:6443", false).is_ok());
        assert!(Target::parse("http://[::1]:8080", false).is_ok());
        for bad in [
            "http://10.0.0.1:8080",
            "http://192.168.1.2",
            "https://example.com",
            "http://0.0.0.0:80",
        ] {
            let e = Target::parse(bad, false).unwrap_err().to_string();
            assert!(e.contains("not a loopback"), "{bad}: {e}");
            assert!(Target::parse(bad, true).is_ok());
        }
        assert!(Target::parse("ftp://127.0.0.1", false).is_err());
    }

    #[test]
    fn parts() {
        let t = Target::parse("https://[::1]:6443/prefix/", false).unwrap();
        assert!(t.tls);
        assert_eq!(t.host, "::1");
        assert_eq!(t.port, 6443);
        assert_eq!(t.base_path, "/prefix");
        assert_eq!(t.authority(), "[::1]:6443");
        let t = Target::parse("http://127.0.0.1", false).unwrap();
        assert_eq!((t.port, t.base_path.as_str()), (80, ""));
    }

    #[test]
    fn token_beats_kubeconfig() {
        let args = TargetArgs {
            url: Some("http://127.0.0.1:1".into()),
            kubeconfig: None,
            context: None,
            token: Some("t0k".into()),
            impersonate: None,
            insecure_skip_tls_verify: false,
            ca_file: None,
            http2: true,
            protobuf: false,
            allow_remote: false,
        };
        let t = Target::from_args(&args, None).unwrap();
        assert_eq!(t.authorization.as_deref(), Some("Bearer t0k"));
        assert!(t.http2);
    }
}
