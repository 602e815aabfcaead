//! How the server reaches kubelets: kube-apiserver's `--kubelet-*` flags.

use super::dial::{unverified_builder, Dialer};
use crate::pki;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct KubeletFlags {
    /// Client certificate (PEM) presented to kubelets.
    #[arg(long)]
    pub kubelet_client_certificate: Option<PathBuf>,

    /// Key (PEM) of --kubelet-client-certificate.
    #[arg(long)]
    pub kubelet_client_key: Option<PathBuf>,

    /// CA bundle kubelets' serving certificates are checked against; none
    /// given, they are not checked (as kube-apiserver).
    #[arg(long)]
    pub kubelet_certificate_authority: Option<PathBuf>,

    /// Which of a Node's addresses to reach its kubelet at, in order of
    /// preference.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP"
    )]
    pub kubelet_preferred_address_types: Vec<String>,

    /// How long connecting to a kubelet (or any other backend) may take.
    #[arg(long, default_value = "5s", value_parser = kubeshard_core::units::parse_duration)]
    pub kubelet_timeout: Duration,
}

/// How handlers reach kubelets and other backends.
#[derive(Debug)]
pub struct Backends {
    pub dialer: Dialer,
    pub preferred_address_types: Vec<String>,
}

impl KubeletFlags {
    /// `privileged_port`: the plain-HTTP port, which no backend may be.
    pub fn backends(&self, privileged_port: Option<u16>) -> Result<Arc<Backends>, String> {
        let builder = match &self.kubelet_certificate_authority {
            None => unverified_builder(),
            Some(path) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in pki::parse_certs(&pki::read(path)?, path)? {
                    roots
                        .add(c)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
                rustls::ClientConfig::builder().with_root_certificates(roots)
            }
        };
        let config = match (&self.kubelet_client_certificate, &self.kubelet_client_key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                use rustls_pki_types::pem::PemObject;
                let chain = pki::parse_certs(&pki::read(cert)?, cert)?;
                let key_der =
                    rustls_pki_types::PrivateKeyDer::from_pem_slice(pki::read(key)?.as_bytes())
                        .map_err(|e| format!("{}: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(chain, key_der)
                    .map_err(|e| format!("--kubelet-client-certificate: {e}"))?
            }
            _ => {
                return Err(
                    "--kubelet-client-certificate and --kubelet-client-key go together".into(),
                )
            }
        };
        Ok(Arc::new(Backends {
            dialer: Dialer::new(config, self.kubelet_timeout, privileged_port),
            preferred_address_types: self.kubelet_preferred_address_types.clone(),
        }))
    }
}
