//! The ownership record every write leaves in `metadata.managedFields`:
//! which manager changed which fields, by whom and through which
//! subresource. The registry records it while it shapes the object; who
//! the manager is comes from the request (`handlers::managers`) or from
//! the server's own writers ([`super::Component`]).

use kubeshard_core::apply::{self, Writer};
use kubeshard_core::catalog::ResourceInfo;
use serde_json::Value;

/// What a write needs to record ownership; owned so it can travel to the
/// shard that runs the write.
#[derive(Clone)]
pub struct Tracking {
    pub manager: String,
    subresource: String,
    now: String,
}

impl Tracking {
    /// A write by `manager` through `subresource` ("" for the object).
    pub fn new(manager: String, subresource: &str) -> Tracking {
        Tracking {
            manager,
            subresource: subresource.to_string(),
            now: super::strategy::now_rfc3339(),
        }
    }

    /// The server's own writers (built-in controllers, bootstrap), under
    /// the manager name kube's component doing that job uses.
    pub fn server(manager: &str, subresource: &str) -> Tracking {
        Tracking::new(manager.to_string(), subresource)
    }

    pub fn writer<'a>(&'a self, info: &'a ResourceInfo, api_version: &'a str) -> Writer<'a> {
        Writer {
            schema: info.schema(),
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
