//! `metav1.Status` failures as kube-apiserver emits them.
//!
//! Clients (kubectl, client-go, controller-runtime) branch on `reason` and
//! `code`, show `message` verbatim and sometimes parse `details.causes`, so
//! every constructor here reproduces kube's exact wording, including Go's `%q`
//! quoting of names and Go's JSON string escaping.

use std::fmt::{self, Write as _};

mod field;
mod go;
#[cfg(test)]
mod tests;

pub use field::{
    field_duplicate, field_forbidden, field_invalid, field_invalid_raw, field_not_found,
    field_not_supported, field_required, field_too_long,
};
use go::push_json_string;
pub use go::{aggregate_messages, go_print, go_quote};

/// One field-level problem. Serialized in the order and with the omissions
/// of kube's `metav1.StatusCause` (`reason`, `message`, `field`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StatusCause {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl StatusCause {
    /// The `field: body` form kube uses when it folds field errors into a
    /// single message (`field.Error.Error()`).
    pub fn error_string(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

/// kube's `metav1.StatusDetails`; `kind` holds the *resource* for most
/// errors because that is what kube puts there.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StatusDetails {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "retry_is_unset")]
    pub retry_after_seconds: Option<u32>,
}

fn retry_is_unset(v: &Option<u32>) -> bool {
    // Go's `omitempty` drops a zero int32, so Some(0) must vanish too.
    matches!(v, None | Some(0))
}

/// A failed request, ready to be rendered as a `Status` body.
///
/// `details` is `Some` exactly where kube allocates a `StatusDetails`, even an
/// empty one, because kube then emits `"details":{}` and clients may see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// Boxed so `Result<_, ApiError>` stays small on the success path.
    pub details: Option<Box<StatusDetails>>,
    /// The Status's `metadata.continue`: the token that goes on with an
    /// expired list from the latest revision (kube's inconsistent
    /// continue).
    pub list_continue: Option<Box<str>>,
}

/// `schema.GroupResource.String()`: core resources print bare.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// `schema.GroupKind.String()`: same shape as [`qualified_resource`].
pub fn qualified_kind(group: &str, kind: &str) -> String {
    qualified_resource(group, kind)
}

fn details(group: &str, kind: &str, name: &str) -> Option<Box<StatusDetails>> {
    Some(Box::new(StatusDetails {
        name: name.to_string(),
        group: group.to_string(),
        kind: kind.to_string(),
        ..StatusDetails::default()
    }))
}

fn retry_details(retry_after_seconds: u32) -> Option<Box<StatusDetails>> {
    Some(Box::new(StatusDetails {
        retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
        ..StatusDetails::default()
    }))
}

/// The message kube's optimistic-concurrency check reports on a stale
/// `resourceVersion`; clients match on it to decide to re-GET and retry.
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
            list_continue: None,
        }
    }

    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", msg)
    }

    pub fn unauthorized(msg: &str) -> Self {
        let msg = if msg.is_empty() {
            "not authorized"
        } else {
            msg
        };
        Self::new(401, "Unauthorized", msg)
    }

    /// `reason` is the authorizer's explanation, e.g. from
    /// [`forbidden_resource_reason`]; kube appends it after `is forbidden: `.
    pub fn forbidden(group: &str, resource: &str, name: &str, reason: &str) -> Self {
        let message = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {reason}")
        } else if name.is_empty() {
            format!(
                "{} is forbidden: {reason}",
                qualified_resource(group, resource)
            )
        } else {
            format!(
                "{} {} is forbidden: {reason}",
                qualified_resource(group, resource),
                go_quote(name)
            )
        };
        ApiError {
            details: details(group, resource, name),
            ..Self::new(403, "Forbidden", message)
        }
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let message = format!(
            "{} {} not found",
            qualified_resource(group, resource),
            go_quote(name)
        );
        ApiError {
            details: details(group, resource, name),
            ..Self::new(404, "NotFound", message)
        }
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let message = format!(
            "{} {} already exists",
            qualified_resource(group, resource),
            go_quote(name)
        );
        ApiError {
            details: details(group, resource, name),
            ..Self::new(409, "AlreadyExists", message)
        }
    }

    /// What kube answers when `generateName` collided with an existing name.
    pub fn generate_name_conflict(
        group: &str,
        resource: &str,
        name: &str,
        retry_after_seconds: u32,
    ) -> Self {
        let message = format!(
            "{} {} already exists, the server was not able to generate a unique name for the object",
            qualified_resource(group, resource),
            go_quote(name)
        );
        let mut d = details(group, resource, name).unwrap_or_default();
        d.retry_after_seconds = (retry_after_seconds > 0).then_some(retry_after_seconds);
        ApiError {
            details: Some(d),
            ..Self::new(409, "AlreadyExists", message)
        }
    }

    pub fn conflict(group: &str, resource: &str, name: &str, err_msg: &str) -> Self {
        let message = format!(
            "Operation cannot be fulfilled on {} {}: {err_msg}",
            qualified_resource(group, resource),
            go_quote(name)
        );
        ApiError {
            details: details(group, resource, name),
            ..Self::new(409, "Conflict", message)
        }
    }

    /// The conflict for a write whose `resourceVersion` is no longer current.
    pub fn conflict_stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(group, resource, name, OPTIMISTIC_LOCK_ERROR_MSG)
    }

    pub fn resource_expired(msg: impl Into<String>) -> Self {
        Self::new(410, "Expired", msg)
    }

    /// The watch-cache wording for a `resourceVersion` older than history.
    pub fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        Self::resource_expired(format!("too old resource version: {requested} ({oldest})"))
    }

    pub fn gone(msg: impl Into<String>) -> Self {
        Self::new(410, "Gone", msg)
    }

    /// 422 with one cause per field error; the message folds the causes the
    /// way kube's `ErrorList.ToAggregate()` does (deduplicated, `[a, b]`).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let qk = qualified_kind(group, kind);
        let msgs: Vec<String> = causes.iter().map(StatusCause::error_string).collect();
        let message = match aggregate_messages(&msgs) {
            None => format!("{qk} {} is invalid", go_quote(name)),
            Some(agg) => format!("{qk} {} is invalid: {agg}", go_quote(name)),
        };
        ApiError {
            details: Some(Box::new(StatusDetails {
                name: name.to_string(),
                group: group.to_string(),
                kind: kind.to_string(),
                causes,
                ..StatusDetails::default()
            })),
            ..Self::new(422, "Invalid", message)
        }
    }

    /// `verb_or_action` is what kube prints first, e.g. `"delete"` or
    /// `"deletecollection"`.
    pub fn method_not_supported(group: &str, resource: &str, verb_or_action: &str) -> Self {
        let message = format!(
            "{verb_or_action} is not supported on resources of kind {}",
            go_quote(&qualified_resource(group, resource))
        );
        ApiError {
            details: details(group, resource, ""),
            ..Self::new(405, "MethodNotAllowed", message)
        }
    }

    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// kube names the media types it would have accepted, not the one it got.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn request_entity_too_large(msg: &str) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {msg}"),
        )
    }

    pub fn timeout(msg: &str, retry_after_seconds: u32) -> Self {
        ApiError {
            details: retry_details(retry_after_seconds),
            ..Self::new(504, "Timeout", format!("Timeout: {msg}"))
        }
    }

    /// The cacher/etcd3 answer to a consistent read ahead of the store; the
    /// cause type is how client-go recognises it and falls back.
    pub fn too_large_resource_version(
        requested: u64,
        current: u64,
        retry_after_seconds: u32,
    ) -> Self {
        let mut e = Self::timeout(
            &format!("Too large resource version: {requested}, current: {current}"),
            retry_after_seconds,
        );
        if let Some(d) = e.details.as_mut() {
            d.causes = vec![StatusCause {
                reason: "ResourceVersionTooLarge".to_string(),
                message: "Too large resource version".to_string(),
                field: String::new(),
            }];
        }
        e
    }

    /// kube's `NewServerTimeout`: a 500 that clients are told to retry.
    pub fn server_timeout(
        group: &str,
        resource: &str,
        operation: &str,
        retry_after_seconds: u32,
    ) -> Self {
        let message = format!(
            "The {operation} operation against {} could not be completed at this time, please try again.",
            qualified_resource(group, resource)
        );
        let mut d = details(group, resource, operation).unwrap_or_default();
        d.retry_after_seconds = (retry_after_seconds > 0).then_some(retry_after_seconds);
        ApiError {
            details: Some(d),
            ..Self::new(500, "ServerTimeout", message)
        }
    }

    pub fn too_many_requests(msg: &str, retry_after_seconds: u32) -> Self {
        ApiError {
            details: retry_details(retry_after_seconds),
            ..Self::new(429, "TooManyRequests", msg)
        }
    }

    pub fn internal(msg: &str) -> Self {
        ApiError {
            details: Some(Box::new(StatusDetails {
                causes: vec![StatusCause {
                    message: msg.to_string(),
                    ..StatusCause::default()
                }],
                ..StatusDetails::default()
            })),
            ..Self::new(
                500,
                "InternalError",
                format!("Internal error occurred: {msg}"),
            )
        }
    }

    pub fn service_unavailable(msg: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", msg)
    }

    /// The `Status` body, byte-compatible with kube's JSON encoder (field
    /// order, omitted empties, HTML-safe escaping). No trailing newline.
    pub fn to_status_json(&self) -> Vec<u8> {
        let mut out = String::with_capacity(128 + self.message.len());
        out.push_str(r#"{"kind":"Status","apiVersion":"v1","metadata":{"#);
        if let Some(token) = &self.list_continue {
            out.push_str(r#""continue":"#);
            push_json_string(&mut out, token);
        }
        out.push_str(r#"},"status":"Failure""#);
        if !self.message.is_empty() {
            out.push_str(r#","message":"#);
            push_json_string(&mut out, &self.message);
        }
        if !self.reason.is_empty() {
            out.push_str(r#","reason":"#);
            push_json_string(&mut out, &self.reason);
        }
        if let Some(d) = &self.details {
            out.push_str(r#","details":"#);
            push_details(&mut out, d);
        }
        if self.code != 0 {
            let _ = write!(out, r#","code":{}"#, self.code);
        }
        out.push('}');
        out.into_bytes()
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// The `{"status":"Success"}` body kube's registry returns from a DELETE
/// that removed the object immediately; `kind_resource` is the plural
/// resource because that is what kube writes into `details.kind`.
pub fn success_status_json(group: &str, kind_resource: &str, name: &str, uid: &str) -> Vec<u8> {
    let d = StatusDetails {
        name: name.to_string(),
        group: group.to_string(),
        kind: kind_resource.to_string(),
        uid: uid.to_string(),
        ..StatusDetails::default()
    };
    let mut out = String::from(
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":"#,
    );
    push_details(&mut out, &d);
    out.push('}');
    out.into_bytes()
}

fn push_details(out: &mut String, d: &StatusDetails) {
    let mut first = true;
    let mut key = |out: &mut String, k: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push('"');
        out.push_str(k);
        out.push_str("\":");
    };
    out.push('{');
    for (k, v) in [
        ("name", &d.name),
        ("group", &d.group),
        ("kind", &d.kind),
        ("uid", &d.uid),
    ] {
        if !v.is_empty() {
            key(out, k);
            push_json_string(out, v);
        }
    }
    if !d.causes.is_empty() {
        key(out, "causes");
        out.push('[');
        for (i, c) in d.causes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_cause(out, c);
        }
        out.push(']');
    }
    if let Some(n) = d.retry_after_seconds.filter(|n| *n > 0) {
        key(out, "retryAfterSeconds");
        let _ = write!(out, "{n}");
    }
    out.push('}');
}

fn push_cause(out: &mut String, c: &StatusCause) {
    out.push('{');
    let mut first = true;
    for (k, v) in [
        ("reason", &c.reason),
        ("message", &c.message),
        ("field", &c.field),
    ] {
        if v.is_empty() {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "\"{k}\":");
        push_json_string(out, v);
    }
    out.push('}');
}

/// The explanation kube's authorization filter puts into a 403 for a
/// resource request; pass it to [`ApiError::forbidden`]. `resource` may
/// carry a `/subresource` suffix; `namespace` empty means cluster scope.
pub fn forbidden_resource_reason(
    user: &str,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
) -> String {
    let msg = if namespace.is_empty() {
        format!(
            "User {} cannot {verb} resource {} in API group {} at the cluster scope",
            go_quote(user),
            go_quote(resource),
            go_quote(group)
        )
    } else {
        format!(
            "User {} cannot {verb} resource {} in API group {} in the namespace {}",
            go_quote(user),
            go_quote(resource),
            go_quote(group),
            go_quote(namespace)
        )
    };
    sanitize_forbidden(&msg)
}

/// Same as [`forbidden_resource_reason`] for non-resource URLs such as
/// `/healthz`; kube reports these with an empty group/resource.
pub fn forbidden_path_reason(user: &str, verb: &str, path: &str) -> String {
    sanitize_forbidden(&format!(
        "User {} cannot {verb} path {}",
        go_quote(user),
        go_quote(path)
    ))
}

/// kube HTML-escapes these messages because they echo request input.
fn sanitize_forbidden(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
