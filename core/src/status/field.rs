//! Field-level causes worded like kube's `field.Error` bodies.

use super::{go_quote, StatusCause};

fn cause(reason: &str, field: &str, message: String) -> StatusCause {
    StatusCause {
        reason: reason.to_string(),
        message,
        field: field.to_string(),
    }
}

fn with_detail(mut body: String, detail: &str) -> String {
    if !detail.is_empty() {
        body.push_str(": ");
        body.push_str(detail);
    }
    body
}

/// `field.Invalid` for a string value (quoted as kube quotes it).
pub fn field_invalid(path: &str, value: &str, detail: &str) -> StatusCause {
    field_invalid_raw(path, &go_quote(value), detail)
}

/// `field.Invalid` for a value already rendered the way Go would print it
/// (numbers bare, `null`, `[]string{...}`).
pub fn field_invalid_raw(path: &str, rendered_value: &str, detail: &str) -> StatusCause {
    let body = with_detail(format!("Invalid value: {rendered_value}"), detail);
    cause("FieldValueInvalid", path, body)
}

pub fn field_required(path: &str, detail: &str) -> StatusCause {
    cause(
        "FieldValueRequired",
        path,
        with_detail("Required value".to_string(), detail),
    )
}

pub fn field_forbidden(path: &str, detail: &str) -> StatusCause {
    cause(
        "FieldValueForbidden",
        path,
        with_detail("Forbidden".to_string(), detail),
    )
}

pub fn field_not_supported(path: &str, value: &str, valid: &[&str]) -> StatusCause {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    cause(
        "FieldValueNotSupported",
        path,
        with_detail(format!("Unsupported value: {}", go_quote(value)), &detail),
    )
}

/// `field.TooLong`: kube leaves the offending value out of the message.
pub fn field_too_long(path: &str, max: usize) -> StatusCause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    cause(
        "FieldValueTooLong",
        path,
        format!("Too long: may not be more than {max} {unit}"),
    )
}

pub fn field_duplicate(path: &str, value: &str) -> StatusCause {
    cause(
        "FieldValueDuplicate",
        path,
        format!("Duplicate value: {}", go_quote(value)),
    )
}

pub fn field_not_found(path: &str, value: &str) -> StatusCause {
    cause(
        "FieldValueNotFound",
        path,
        format!("Not found: {}", go_quote(value)),
    )
}
