//! The security flags, named as kube-apiserver names them.

use clap::{ArgAction, Args};
use kubeshard_core::units::parse_duration;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct SecurityFlags {
    /// HTTPS port; 0 picks a free one (see --secure-port-file).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,

    /// Address the HTTPS port listens on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,

    /// Write the HTTPS port actually bound to this file once serving.
    #[arg(long)]
    pub secure_port_file: Option<PathBuf>,

    /// Where generated certificates and keys live (default: <data-dir>/pki).
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,

    /// Serving certificate (PEM, with its chain); generated when absent.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,

    /// Private key of --tls-cert-file.
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,

    /// CA bundle that signs client certificates (CN is the user, O the
    /// groups). The generated CA, which signs the admin kubeconfig's
    /// certificate, is always trusted as well.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// Where to write the admin kubeconfig (default:
    /// <data-dir>/admin.kubeconfig).
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,

    /// Static bearer tokens: CSV lines `token,user,uid,"group1,group2"`.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,

    /// Accept bootstrap tokens (Secrets of type bootstrap.kubernetes.io/token
    /// in kube-system).
    #[arg(long)]
    pub enable_bootstrap_token_auth: bool,

    /// Public (or private) keys that verify service-account tokens, in
    /// addition to the signing key's own. Repeatable.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,

    /// Private key that signs service-account tokens (RSA or ECDSA P-256);
    /// generated into the cert dir when absent.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// The `iss` of issued service-account tokens, and the issuer accepted.
    #[arg(long, default_value = "https://kubernetes.default.svc.cluster.local")]
    pub service_account_issuer: String,

    /// Audiences a token must be for (default: the issuer).
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// CA certificate the built-in CSR signing controller signs with
    /// (default: the generated CA).
    #[arg(long)]
    pub cluster_signing_cert_file: Option<PathBuf>,

    /// Private key of --cluster-signing-cert-file.
    #[arg(long)]
    pub cluster_signing_key_file: Option<PathBuf>,

    /// Longest lifetime of a certificate the CSR signing controller
    /// issues (a request may ask for less with spec.expirationSeconds).
    #[arg(long, default_value = "8760h", value_parser = parse_duration)]
    pub cluster_signing_duration: Duration,

    /// Longest lifetime of a requested service-account token.
    #[arg(long, value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,

    /// Check that a token's service account (and secret or pod) still
    /// exists.
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    pub service_account_lookup: bool,

    /// Requests without credentials act as system:anonymous.
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    pub anonymous_auth: bool,

    /// Ordered authorizers: AlwaysAllow, AlwaysDeny, RBAC.
    #[arg(long, default_value = "RBAC", value_delimiter = ',')]
    pub authorization_mode: Vec<String>,

    /// audit.k8s.io/v1 Policy file; nothing is audited without one.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,

    /// JSON-lines audit log ("-" for standard output).
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,

    /// Most non-mutating requests in flight (0 = no limit).
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// Most mutating requests in flight (0 = no limit).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// API Priority and Fairness: requests are classified by the
    /// FlowSchemas and queued fairly within their priority levels, whose
    /// seats share out the two in-flight limits above. Off, the two
    /// limits apply as they are.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_priority_and_fairness: bool,

    /// Client certificate presented to extension API servers when
    /// proxying to them (the front proxy's identity). Without it and
    /// --proxy-client-key-file, one is issued by a generated front-proxy
    /// CA (`front-proxy-ca.crt` in the cert dir).
    #[arg(long)]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// Private key of --proxy-client-cert-file.
    #[arg(long)]
    pub proxy_client_key_file: Option<PathBuf>,

    /// CA bundle that signs the client certificates of authenticating
    /// proxies: only a connection with such a certificate may name its
    /// user in request headers. Default: the generated front-proxy CA
    /// when the proxy client certificate is generated.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Common names a proxy's certificate may carry (empty: any the
    /// CA signs). Default with the generated CA: front-proxy-client.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// Request headers naming the user, first non-empty wins.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
    pub requestheader_username_headers: Vec<String>,

    /// Request headers naming the user's uid.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Uid")]
    pub requestheader_uid_headers: Vec<String>,

    /// Request headers naming the user's groups (every value of each).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
    pub requestheader_group_headers: Vec<String>,

    /// Prefixes of request headers carrying the user's extra values
    /// (`<prefix><key>: <value>`, the key URL-escaped).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Longest a non-long-running request may take before 504.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,
}
