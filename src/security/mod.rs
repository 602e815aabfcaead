//! The security front end's configuration and per-executor state.
//!
//! [`SecurityConfig`] is built once at start from the flags (certificates,
//! static tokens, token keys, authorizer modes, audit, limits) and shared
//! read-only by every executor. [`Security`] is one executor's own state:
//! its RBAC index and the service-account and bootstrap-token caches, fed
//! by informers from that executor's watch hub, so request-time decisions
//! take no lock.

pub mod audit;
pub mod authn;
pub mod authz;
mod flags;
pub mod front_proxy;
pub mod maxinflight;
mod state;

pub use flags::SecurityFlags;
pub use state::Security;

use crate::pki::{self, ClientIssuer, ServiceAccountKeys, ServingCerts};
use crate::security::audit::Auditor;
use crate::security::authz::Mode;
use crate::security::maxinflight::Inflight;
use kubeshard_core::authn::UserInfo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// kube's default (and minimum) bound-token lifetime rules.
pub const DEFAULT_TOKEN_SECONDS: i64 = 3600;
pub const MIN_TOKEN_SECONDS: i64 = 600;

/// How service-account tokens are issued and checked.
pub struct ServiceAccountConfig {
    pub keys: ServiceAccountKeys,
    pub issuer: String,
    pub audiences: Vec<String>,
    pub max_expiration: Option<Duration>,
    /// Check that the account (and bound object) still exists.
    pub lookup: bool,
}

pub struct SecurityConfig {
    pub tls: Arc<rustls::ServerConfig>,
    /// Issuers trusted for client certificates.
    pub client_cas: Vec<rustls_pki_types::TrustAnchor<'static>>,
    pub static_tokens: HashMap<String, Arc<UserInfo>>,
    pub bootstrap_tokens: bool,
    pub service_accounts: ServiceAccountConfig,
    pub anonymous: bool,
    pub modes: Vec<Mode>,
    pub audit: Option<Arc<Auditor>>,
    pub inflight: Arc<Inflight>,
    /// API Priority and Fairness decides admission (the in-flight limits
    /// only count).
    pub priority_and_fairness: bool,
    pub request_timeout: Duration,
    /// What a client should trust to reach the secure port (kubeconfigs).
    pub trust_pem: String,
    /// The CA the CSR signing controller issues certificates with, and
    /// the longest lifetime it gives them.
    pub csr_signer: Arc<ClientIssuer>,
    pub csr_signing_duration: Duration,
    /// The CAs that sign client certificates, as PEM (published in
    /// kube-system's `extension-apiserver-authentication` ConfigMap).
    pub client_ca_pem: String,
    pub issuer: ClientIssuer,
    /// The proxy client certificate and the request-header authenticator.
    pub front_proxy: front_proxy::FrontProxy,
}

impl SecurityConfig {
    pub fn build(
        flags: &SecurityFlags,
        data_dir: &Path,
        advertise: Option<std::net::IpAddr>,
    ) -> Result<Self, String> {
        let cert_dir = flags
            .cert_dir
            .clone()
            .unwrap_or_else(|| data_dir.join("pki"));
        std::fs::create_dir_all(&cert_dir)
            .map_err(|e| format!("creating --cert-dir {}: {e}", cert_dir.display()))?;
        let issuer = ClientIssuer::load_or_generate(&cert_dir)?;
        let serving = ServingCerts::load_or_generate(
            flags.tls_cert_file.as_deref(),
            flags.tls_private_key_file.as_deref(),
            &cert_dir,
            &issuer,
            advertise,
        )?;
        let mut ca_certs = pki::parse_certs(&issuer.ca_pem, &cert_dir.join("ca.crt"))?;
        let mut client_ca_pem = issuer.ca_pem.clone();
        if let Some(f) = &flags.client_ca_file {
            let pem = pki::read(f)?;
            ca_certs.extend(pki::parse_certs(&pem, f)?);
            client_ca_pem.push_str(&pem);
        }
        let client_cas = pki::anchors(&ca_certs, "client CA")?;
        let csr_signer =
            Arc::new(
                match (
                    &flags.cluster_signing_cert_file,
                    &flags.cluster_signing_key_file,
                ) {
                    (Some(cert), Some(key)) => ClientIssuer::from_files(cert, key)?,
                    (None, None) => ClientIssuer::load_or_generate(&cert_dir)?,
                    _ => return Err(
                        "--cluster-signing-cert-file and --cluster-signing-key-file go together"
                            .into(),
                    ),
                },
            );
        let front_proxy = front_proxy::FrontProxy::build(flags, &cert_dir)?;
        // Clients are asked for a certificate of either kind of CA.
        let mut hinted = ca_certs.clone();
        if let Some(rh) = &front_proxy.request_header {
            hinted.extend(rh.certs.iter().cloned());
        }
        let tls = crate::serving::tls::server_config(serving.chain, serving.key, &hinted)?;
        let static_tokens = match &flags.token_auth_file {
            Some(f) => kubeshard_core::authn::token_file::parse(&pki::read(f)?)?
                .into_iter()
                .map(|(t, u)| (t, Arc::new(u)))
                .collect(),
            None => HashMap::new(),
        };
        let keys = ServiceAccountKeys::load_or_generate(
            flags.service_account_signing_key_file.as_deref(),
            &flags.service_account_key_file,
            &cert_dir,
        )?;
        let audiences = if flags.api_audiences.is_empty() {
            vec![flags.service_account_issuer.clone()]
        } else {
            flags.api_audiences.clone()
        };
        let modes = flags
            .authorization_mode
            .iter()
            .map(|m| Mode::parse(m))
            .collect::<Result<Vec<_>, _>>()?;
        if modes.is_empty() {
            return Err("--authorization-mode needs at least one mode".into());
        }
        let audit = match (&flags.audit_policy_file, &flags.audit_log_path) {
            (Some(policy), Some(log)) => Some(Arc::new(Auditor::start(&pki::read(policy)?, log)?)),
            (None, None) => None,
            (Some(_), None) => return Err("--audit-policy-file needs --audit-log-path".into()),
            (None, Some(_)) => return Err("--audit-log-path needs --audit-policy-file".into()),
        };
        Ok(Self {
            tls,
            client_cas,
            static_tokens,
            bootstrap_tokens: flags.enable_bootstrap_token_auth,
            service_accounts: ServiceAccountConfig {
                keys,
                issuer: flags.service_account_issuer.clone(),
                audiences,
                max_expiration: flags.service_account_max_token_expiration,
                lookup: flags.service_account_lookup,
            },
            anonymous: flags.anonymous_auth,
            modes,
            audit,
            inflight: Arc::new(Inflight::new(
                flags.max_requests_inflight,
                flags.max_mutating_requests_inflight,
            )),
            priority_and_fairness: flags.enable_priority_and_fairness,
            request_timeout: flags.request_timeout,
            trust_pem: serving.trust_pem,
            client_ca_pem,
            csr_signer,
            csr_signing_duration: flags.cluster_signing_duration,
            issuer,
            front_proxy,
        })
    }

    /// Where the admin kubeconfig goes.
    pub fn kubeconfig_path(flags: &SecurityFlags, data_dir: &Path) -> PathBuf {
        flags
            .write_kubeconfig
            .clone()
            .unwrap_or_else(|| data_dir.join("admin.kubeconfig"))
    }
}
