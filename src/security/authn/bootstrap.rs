//! Bootstrap tokens (`--enable-bootstrap-token-auth`), checked against
//! this executor's cache of bootstrap Secrets.

use crate::security::Security;
use kubeshard_core::authn::bootstrap_token::{self, Rejection};
use kubeshard_core::authn::UserInfo;
use std::sync::Arc;

/// Ok(None) when the token does not have the bootstrap shape; Err when it
/// does but no Secret backs it.
pub fn authenticate(sec: &Security, token: &str) -> Result<Option<Arc<UserInfo>>, String> {
    let Some((id, secret)) = bootstrap_token::parse_token(token) else {
        return Ok(None);
    };
    let secrets = sec.bootstrap_secrets.borrow();
    let Some(obj) = secrets.get(id) else {
        return Err(format!("bootstrap token {id}: no such secret"));
    };
    match bootstrap_token::authenticate(obj, id, secret, chrono::Utc::now()) {
        Ok(u) => Ok(Some(Arc::new(u))),
        Err(Rejection::Expired) => Err(format!("bootstrap token {id} has expired")),
        Err(r) => Err(format!("bootstrap token {id} rejected: {r:?}")),
    }
}
