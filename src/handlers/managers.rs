//! Who a request writes as, as a field manager: `?fieldManager=` or the
//! User-Agent's product, as kube derives it. The ownership record itself
//! is the registry's ([`crate::registry::ownership`]).

pub use crate::registry::ownership::Tracking;
use crate::request::Query;
use http::{header, HeaderMap};
use kubeshard_core::apply;
use kubeshard_core::status::{field_too_long, ApiError};

/// kube's limit on a field manager's name.
const MAX_MANAGER: usize = 128;

/// The ownership record of a request's write. `options` names the
/// options kind for errors (CreateOptions…).
pub fn tracking(
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
    Ok(Tracking::new(manager, subresource))
}
