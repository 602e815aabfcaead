//! `--token-auth-file` tokens, looked up as given.

use crate::security::SecurityConfig;
use kubeshard_core::authn::UserInfo;
use std::sync::Arc;

pub fn authenticate(config: &SecurityConfig, token: &str) -> Option<Arc<UserInfo>> {
    config.static_tokens.get(token).cloned()
}
