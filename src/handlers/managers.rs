//! Field managers of a write: who it is (`?fieldManager=` or the
//! User-Agent's product, as kube derives it) and the ownership record
//! every write leaves in `metadata.managedFields`.

use super::fields::schema_of;
use crate::filters::requestinfo::Query;
use http::{header, HeaderMap};
use kubeshard_core::apply::{self, Writer};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::{field_too_long, ApiError};
use serde_json::Value;

/// kube's limit on a field manager's name.
const MAX_MANAGER: usize = 128;

/// What a write needs to record ownership; owned so it can travel to the
/// shard that runs the write.
#[derive(Clone)]
pub struct Tracking {
    pub manager: String,
    subresource: String,
    now: String,
}

impl Tracking {
    /// `options` names the options kind for errors (CreateOptions…).
    pub fn new(
        query: &Query,
        headers: &HeaderMap,
        subresource: &str,
        options: &str,
    ) -> Result<Tracking, ApiError> {
        let manager = match query.get("fieldManager") {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => apply::manager_from_user_agent(
                headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(""),
            ),
        };
        if manager.len() > MAX_MANAGER {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                options,
                "",
                vec![field_too_long("fieldManager", MAX_MANAGER)],
            ));
        }
        Ok(Tracking {
            manager,
            subresource: subresource.to_string(),
            now: crate::registry::strategy::now_rfc3339(),
        })
    }

    /// The server's own writers (built-in controllers, bootstrap), under
    /// the manager name kube's component doing that job uses.
    pub fn server(manager: &str, subresource: &str) -> Tracking {
        Tracking {
            manager: manager.to_string(),
            subresource: subresource.to_string(),
            now: crate::registry::strategy::now_rfc3339(),
        }
    }

    pub fn writer<'a>(&'a self, info: &'a ResourceInfo, api_version: &'a str) -> Writer<'a> {
        Writer {
            schema: schema_of(info),
            manager: &self.manager,
            api_version,
            subresource: &self.subresource,
            status_is_separate: info.has_status(),
            now: &self.now,
        }
    }

    /// Records a create (`old` None), update or non-apply patch.
    pub fn record(&self, info: &ResourceInfo, old: Option<&Value>, new: &mut Value) {
        let api_version = info.api_version();
        apply::update(&self.writer(info, &api_version), old, new);
    }
}
