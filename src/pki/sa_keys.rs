//! Service-account token keys: the signing key from
//! `--service-account-signing-key-file` and the verification keys from
//! `--service-account-key-file` (repeatable), or a P-256 pair generated
//! into the cert directory on first start (`sa.key`, `sa.pub`).

use super::{read, write_private};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use std::path::{Path, PathBuf};

pub struct ServiceAccountKeys {
    pub signing: EncodingKey,
    pub algorithm: Algorithm,
    /// Key id of the signing key (kube: base64url of the SHA-256 of the
    /// public key's DER).
    pub kid: String,
    /// Every key a token may be signed with, and its algorithm.
    pub verifying: Vec<(Algorithm, DecodingKey)>,
}

impl ServiceAccountKeys {
    pub fn load_or_generate(
        signing_file: Option<&Path>,
        key_files: &[PathBuf],
        dir: &Path,
    ) -> Result<Self, String> {
        let signing_path = match signing_file {
            Some(p) => p.to_path_buf(),
            None => {
                let p = dir.join("sa.key");
                if !p.exists() {
                    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
                    write_private(&p, key.serialize_pem().as_bytes())?;
                    std::fs::write(dir.join("sa.pub"), key.public_key_pem())
                        .map_err(|e| format!("writing sa.pub: {e}"))?;
                }
                p
            }
        };
        let signing_pem = read(&signing_path)?;
        let pair = rcgen::KeyPair::from_pem(&signing_pem)
            .map_err(|e| format!("{}: {e}", signing_path.display()))?;
        let algorithm = if pair.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256) {
            Algorithm::ES256
        } else if pair.is_compatible(&rcgen::PKCS_RSA_SHA256) {
            Algorithm::RS256
        } else {
            return Err(format!(
                "{}: service-account keys must be RSA or ECDSA P-256",
                signing_path.display()
            ));
        };
        let signing = match algorithm {
            Algorithm::ES256 => EncodingKey::from_ec_pem(signing_pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(signing_pem.as_bytes()),
        }
        .map_err(|e| format!("{}: {e}", signing_path.display()))?;
        let kid = key_id(&pair);
        let mut verifying = vec![decoding_key(algorithm, &pair.public_key_pem())?];
        for f in key_files {
            verifying.push(public_key_file(f)?);
        }
        Ok(Self {
            signing,
            algorithm,
            kid,
            verifying,
        })
    }
}

fn key_id(pair: &rcgen::KeyPair) -> String {
    use base64::Engine;
    use rcgen::PublicKeyData;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(pair.subject_public_key_info());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

fn decoding_key(alg: Algorithm, public_pem: &str) -> Result<(Algorithm, DecodingKey), String> {
    let key = match alg {
        Algorithm::ES256 => DecodingKey::from_ec_pem(public_pem.as_bytes()),
        _ => DecodingKey::from_rsa_pem(public_pem.as_bytes()),
    }
    .map_err(|e| format!("service-account public key: {e}"))?;
    Ok((alg, key))
}

/// A verification key file: a public key, or a private key whose public
/// half is used (kube accepts both).
fn public_key_file(path: &Path) -> Result<(Algorithm, DecodingKey), String> {
    let pem = read(path)?;
    let public = match rcgen::KeyPair::from_pem(&pem) {
        Ok(pair) => pair.public_key_pem(),
        Err(_) => pem,
    };
    decoding_key(Algorithm::ES256, &public)
        .or_else(|_| decoding_key(Algorithm::RS256, &public))
        .map_err(|e| format!("{}: {e}", path.display()))
}
