//! The CA and serving certificate: from `--tls-cert-file` and
//! `--tls-private-key-file` when given, else generated once into the cert
//! directory (`ca.crt`/`ca.key`, `apiserver.crt`/`apiserver.key`) and
//! reused on later starts. The generated CA also signs client
//! certificates (the admin kubeconfig's, the tests').

use super::{parse_certs, read, write_private};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

const CA_DAYS: i64 = 3650;
const LEAF_DAYS: i64 = 365;

/// What the TLS listener serves with.
pub struct ServingCerts {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// PEM a client should trust to reach this server (the generated CA,
    /// or the last certificate of a given chain).
    pub trust_pem: String,
}

/// Signs client certificates with the generated CA.
pub struct ClientIssuer {
    pub ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
}

fn rcgen_err(e: rcgen::Error) -> String {
    format!("certificate generation: {e}")
}

impl ClientIssuer {
    /// The CA itself, for signing.
    pub(super) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    /// A CA from its certificate and key files (`--cluster-signing-*`).
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, String> {
        let ca_pem = read(cert)?;
        let key = KeyPair::from_pem(&read(key)?).map_err(rcgen_err)?;
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, key).map_err(rcgen_err)?;
        Ok(Self { ca_pem, issuer })
    }

    /// The CA in `dir`, generated when missing.
    pub fn load_or_generate(dir: &Path) -> Result<Self, String> {
        Self::load_or_generate_named(dir, "ca", "kubeshard-ca")
    }

    /// The CA `<name>.crt`/`<name>.key` in `dir`, generated when missing
    /// with a CommonName of `<common_name>@<time>`.
    pub fn load_or_generate_named(
        dir: &Path,
        name: &str,
        common_name: &str,
    ) -> Result<Self, String> {
        let (crt, key) = (dir.join(format!("{name}.crt")), key_path(dir, name));
        if crt.exists() && key.exists() {
            return Self::from_files(&crt, &key);
        }
        let key = KeyPair::generate().map_err(rcgen_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(rcgen_err)?;
        params.distinguished_name.push(
            DnType::CommonName,
            format!("{common_name}@{}", chrono::Utc::now().timestamp()),
        );
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut params, CA_DAYS);
        let cert = params.self_signed(&key).map_err(rcgen_err)?;
        write_private(&key_path(dir, name), key.serialize_pem().as_bytes())?;
        std::fs::write(&crt, cert.pem()).map_err(|e| format!("writing {}: {e}", crt.display()))?;
        let ca_pem = cert.pem();
        Ok(Self {
            issuer: Issuer::new(params, key),
            ca_pem,
        })
    }

    /// A client certificate for `user` in `groups` (CN and O, which is how
    /// the x509 authenticator reads them): (cert PEM, key PEM).
    pub fn client_cert(
        &self,
        user: &str,
        groups: &[&str],
        days: i64,
    ) -> Result<(String, String), String> {
        // rcgen keeps one value per attribute type; a second Organization
        // goes in under the same OID as a "custom" type.
        if groups.len() > 2 {
            return Err("client certificates carry at most two groups".into());
        }
        self.leaf(days, ExtendedKeyUsagePurpose::ClientAuth, |params| {
            params.distinguished_name.push(DnType::CommonName, user);
            let org_types = [
                DnType::OrganizationName,
                DnType::CustomDnType(vec![2, 5, 4, 10]),
            ];
            for (g, t) in groups.iter().zip(org_types) {
                params.distinguished_name.push(t, *g);
            }
        })
    }

    /// The client certificate `<file>.crt`/`<file>.key` in `dir` for
    /// `user`, issued when missing or about to expire: (cert path, key
    /// path).
    pub fn kept_client_cert(
        &self,
        dir: &Path,
        file: &str,
        user: &str,
    ) -> Result<(PathBuf, PathBuf), String> {
        let (crt, key) = (dir.join(format!("{file}.crt")), key_path(dir, file));
        let usable = crt.exists() && key.exists() && !expired(&read(&crt)?);
        if !usable {
            let (c, k) = self.client_cert(user, &[], LEAF_DAYS)?;
            write_private(&key, k.as_bytes())?;
            std::fs::write(&crt, c).map_err(|e| format!("writing {}: {e}", crt.display()))?;
        }
        Ok((crt, key))
    }

    fn serving_cert(&self, sans: &[SanType]) -> Result<(String, String), String> {
        self.leaf(LEAF_DAYS, ExtendedKeyUsagePurpose::ServerAuth, |params| {
            params
                .distinguished_name
                .push(DnType::CommonName, "kubeshard-apiserver");
            params.subject_alt_names = sans.to_vec();
        })
    }

    /// A fresh key and a certificate for it signed by the CA, for one
    /// use, named by `name`: (cert PEM, key PEM).
    fn leaf(
        &self,
        days: i64,
        usage: ExtendedKeyUsagePurpose,
        name: impl FnOnce(&mut CertificateParams),
    ) -> Result<(String, String), String> {
        let key = KeyPair::generate().map_err(rcgen_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(rcgen_err)?;
        name(&mut params);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        validity(&mut params, days);
        let cert = params.signed_by(&key, &self.issuer).map_err(rcgen_err)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

fn key_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.key"))
}

/// The names the generated serving certificate is valid for.
fn serving_sans(advertise: Option<IpAddr>) -> Vec<SanType> {
    let mut dns = vec![
        "localhost".to_string(),
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
        "kubernetes.default.svc.cluster.local".into(),
    ];
    if let Some(h) = hostname().filter(|h| !dns.contains(h)) {
        dns.push(h);
    }
    let mut sans: Vec<SanType> = dns
        .into_iter()
        .filter_map(|d| d.try_into().ok().map(SanType::DnsName))
        .collect();
    let mut ips: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
    if let Some(a) = advertise.filter(|a| !ips.contains(a)) {
        ips.push(a);
    }
    sans.extend(ips.into_iter().map(SanType::IpAddress));
    sans
}

/// This machine's host name, lower-cased (the serving certificate's SAN,
/// a replica's name in its leader-election Lease).
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let h = String::from_utf8_lossy(&buf[..end]).to_lowercase();
    (!h.is_empty()).then_some(h)
}

/// True when the PEM certificate is past (or within a day of) its end.
fn expired(pem: &str) -> bool {
    let Ok(p) = ::pem::parse(pem) else {
        return true;
    };
    match x509_parser::parse_x509_certificate(p.contents()) {
        Ok((_, c)) => {
            let end = c.validity().not_after.timestamp();
            end - 86_400 < chrono::Utc::now().timestamp()
        }
        Err(_) => true,
    }
}

impl ServingCerts {
    /// From the given files, or the generated pair in `dir` (generated,
    /// or regenerated when expired, as needed).
    pub fn load_or_generate(
        cert_file: Option<&Path>,
        key_file: Option<&Path>,
        dir: &Path,
        issuer: &ClientIssuer,
        advertise: Option<IpAddr>,
    ) -> Result<Self, String> {
        let (crt, key) = match (cert_file, key_file) {
            (Some(c), Some(k)) => (c.to_path_buf(), k.to_path_buf()),
            (None, None) => {
                let (crt, key) = (dir.join("apiserver.crt"), key_path(dir, "apiserver"));
                let usable = crt.exists() && key.exists() && !expired(&read(&crt)?);
                if !usable {
                    let (c, k) = issuer.serving_cert(&serving_sans(advertise))?;
                    write_private(&key, k.as_bytes())?;
                    std::fs::write(&crt, c)
                        .map_err(|e| format!("writing {}: {e}", crt.display()))?;
                }
                (crt, key)
            }
            _ => {
                return Err("--tls-cert-file and --tls-private-key-file go together".into());
            }
        };
        let cert_pem = read(&crt)?;
        let chain = parse_certs(&cert_pem, &crt)?;
        let key = {
            use rustls_pki_types::pem::PemObject;
            PrivateKeyDer::from_pem_slice(read(&key)?.as_bytes())
                .map_err(|e| format!("{}: {e}", key.display()))?
        };
        let trust_pem = if cert_file.is_some() {
            let last = chain.last().expect("parse_certs returns at least one");
            ::pem::encode(&::pem::Pem::new("CERTIFICATE", last.to_vec()))
        } else {
            issuer.ca_pem.clone()
        };
        Ok(Self {
            chain,
            key,
            trust_pem,
        })
    }
}
