//! Request bodies decoded the way kube's typed decoder sees them: unknown
//! fields dropped against the kind's schema, duplicate fields noticed, and
//! both reported per `?fieldValidation=`.

use crate::render::negotiation::Input;
use crate::render::warnings::Warnings;
use crate::request::Query;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::fieldvalidation::{self, Directive, Issue};
use kubeshard_core::status::ApiError;
use serde_json::Value;

/// The `fieldValidation` directive; `options` names the options kind for
/// the error (CreateOptions, UpdateOptions, PatchOptions).
pub fn directive(q: &Query, options: &str) -> Result<Directive, ApiError> {
    Directive::parse(q.get("fieldValidation"), options)
}

/// Decodes a create or update body: the object with unknown fields
/// removed; findings become warnings or, with Strict, a 400.
pub fn decode_object(
    info: &ResourceInfo,
    input: Input,
    body: &[u8],
    directive: Directive,
    warnings: &Warnings,
) -> Result<Value, ApiError> {
    let schema = info.schema();
    let (value, issues) = match input {
        // A whole object comes as JSON, YAML or protobuf; a patch type on a
        // create or an update is a 415, never read as JSON.
        Input::JsonPatch | Input::MergePatch | Input::StrategicMergePatch | Input::ApplyPatch => {
            return Err(ApiError::unsupported_media_type(
                crate::render::negotiation::ACCEPTED_INPUT,
            ))
        }
        Input::Yaml => {
            let mut issues = if directive.reports() {
                fieldvalidation::duplicate_keys(&String::from_utf8_lossy(body))
            } else {
                Vec::new()
            };
            let mut v = super::decode::parse_object(input, body)?;
            if let Some(s) = schema {
                issues.extend(fieldvalidation::prune(&mut v, s));
            }
            (v, issues)
        }
        Input::Protobuf => {
            let mut v = super::decode::parse_object(input, body)?;
            if let Some(s) = schema {
                fieldvalidation::prune(&mut v, s);
            }
            (v, Vec::new())
        }
        Input::Json => {
            let (v, issues) = fieldvalidation::decode_json(body, schema).map_err(|e| {
                ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
            })?;
            if !v.is_object() {
                return Err(ApiError::bad_request(
                    "the body of the request must be a JSON object",
                ));
            }
            (v, issues)
        }
    };
    let mut value = value;
    // Custom resources are not decoded into types: a value of the wrong
    // type is their schema validation's to refuse, with its own message.
    if let Some(s) = schema.filter(|_| info.custom.is_none()) {
        fieldvalidation::check_types(&mut value, s).map_err(|m| {
            ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {}",
                m.decode_message(),
                kind = info.kind,
                version = info.version
            ))
        })?;
    }
    warnings.extend(fieldvalidation::judge(
        directive,
        issues,
        &info.kind,
        &info.version,
    )?);
    Ok(value)
}

/// Decodes a patch document (JSON), noting its duplicate fields.
pub fn decode_patch(body: &[u8]) -> Result<(Value, Vec<Issue>), ApiError> {
    fieldvalidation::decode_json(body, None)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// After a patch applied: drops the result's unknown fields and reports
/// them with the patch's own findings. Strict answers as kube does for
/// patches: 422 on the field `patch`.
pub fn judge_patched(
    info: &ResourceInfo,
    patched: &mut Value,
    mut issues: Vec<Issue>,
    directive: Directive,
    warnings: &Warnings,
) -> Result<(), ApiError> {
    if let Some(s) = info.schema().filter(|_| info.custom.is_none()) {
        // kube decodes the patched object into its Go type: what does not
        // fit is a 422 on the patch, whatever the directive.
        if let Err(m) = fieldvalidation::check_types(patched, s) {
            return Err(invalid_patch(patched, &m.decode_message()));
        }
    }
    let before = (directive == Directive::Strict).then(|| patched.to_string());
    if let Some(s) = info.schema() {
        issues.extend(fieldvalidation::prune(patched, s));
    }
    match directive {
        _ if issues.is_empty() => Ok(()),
        Directive::Ignore => Ok(()),
        Directive::Warn => {
            warnings.extend(issues.iter().map(Issue::to_string));
            Ok(())
        }
        Directive::Strict => Err(invalid_patch(
            before.unwrap_or_default(),
            &fieldvalidation::strict_message(&issues),
        )),
    }
}

/// kube's 422 for a patched object it cannot take: the field `patch`,
/// with the patched object as the value.
fn invalid_patch(patched: impl ToString, detail: &str) -> ApiError {
    ApiError::invalid(
        "",
        "",
        "",
        vec![kubeshard_core::status::field_invalid(
            "patch",
            &patched.to_string(),
            detail,
        )],
    )
}
