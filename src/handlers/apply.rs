//! PATCH with `application/apply-patch+yaml`: server-side apply. The
//! configuration is merged into the live object on its shard (or creates
//! it), with ownership and conflicts decided by `kubeshard_core::apply`.

use super::create::bind_namespace;
use super::decode::{check_result_size, check_type};
use super::managers::Tracking;
use super::patch::{options_invalid, precondition};
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::{Creates, Old, Ownership, Requested};
use crate::render::warnings::Warnings;
use kubeshard_core::apply;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::fieldvalidation::{self, Directive, Issue};
use kubeshard_core::meta;
use kubeshard_core::status::{field_required, ApiError};
use serde_json::Value;
use std::rc::Rc;

pub async fn apply(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    body: &[u8],
    directive: Directive,
    tracking: Tracking,
) -> HandlerResult {
    if rr.query.get("fieldManager").is_none_or(str::is_empty) {
        return Err(options_invalid(vec![field_required(
            "fieldManager",
            "is required for apply patch",
        )]));
    }
    let force = rr.query.flag("force");
    let info = rr.resource.clone();
    let warnings = Warnings::default();
    let mut config = decode(body, directive, &warnings)?;
    let url_name = rr.info.name.clone();
    require_type_meta(&info, &config, &rr.info.namespace, &url_name)?;
    check_type(&info, &mut config)?;
    match meta::name(&config) {
        "" => meta::set_meta(&mut config, "name", Value::String(url_name.clone())),
        n if n == url_name => {}
        n => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({url_name})"
            )))
        }
    }
    let ns = if info.namespaced {
        rr.info.namespace.clone()
    } else {
        String::new()
    };
    bind_namespace(&info, &ns, &mut config)?;
    let status_only = rr.info.subresource == "status";
    let describe = format!(
        "{ns}/{url_name}; {}/{}, Kind={}",
        info.group, info.version, info.kind
    );
    if let Some(schema) = info.schema() {
        // kube's typed conversion of the configuration refuses values of
        // the wrong type before anything merges (a 500 with kube's plain
        // error, no reason, as kube answers).
        fieldvalidation::check_types(&mut config, schema).map_err(|m| {
            ApiError::new(
                500,
                "",
                format!(
                    "failed to create typed patch object ({describe}): {}",
                    m.apply_message()
                ),
            )
        })?;
    }
    let manager = tracking.manager.clone();
    let requested: Requested = Box::new(move |old: Option<Old<'_>>| {
        if old.is_none() && status_only {
            return Err(ApiError::not_found(&info.group, &info.plural, &url_name));
        }
        if let Some(old) = old {
            precondition(&info, &config, old.stored)?;
        }
        let api_version = info.api_version();
        let writer = tracking.writer(&info, &api_version);
        let merged = apply::apply(&writer, old.map(|o| o.value), &config, force, &describe)?;
        check_result_size(&merged, old.map_or(0, |o| o.stored.json_slice().len()))?;
        Ok(merged)
    });
    // Only apply creates among the patches, and it is authorized as a
    // create when it does.
    let written = super::update::write(
        api,
        rr,
        requested,
        Ownership::Applied(manager),
        Creates::Allowed,
        Some(&warnings),
    )
    .await;
    let written = match written {
        Ok(w) => w,
        Err(e) => return warnings.refused(e, rr.render),
    };
    Ok(warnings.apply(super::update::written_response(api, rr, &written).await?))
}

/// The configuration (YAML, of which JSON is a subset), with duplicate
/// keys reported per `fieldValidation` in the words kube's YAML decoder
/// uses for apply bodies.
fn decode(body: &[u8], directive: Directive, warnings: &Warnings) -> Result<Value, ApiError> {
    if directive.reports() {
        let dups: Vec<Issue> = fieldvalidation::duplicate_keys(&String::from_utf8_lossy(body));
        if !dups.is_empty() {
            let lines: Vec<String> = dups.iter().map(Issue::to_string).collect();
            if directive == Directive::Strict {
                return Err(ApiError::bad_request(format!(
                    "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
                    lines.join("\n  ")
                )));
            }
            warnings.extend(lines);
        }
    }
    let config: Value = serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a YAML or JSON object",
        ));
    }
    Ok(config)
}

/// An applied configuration names its own apiVersion and kind: kube
/// refuses one for another version (400) and cannot type one without a
/// kind (its typed conversion's error).
fn require_type_meta(
    info: &ResourceInfo,
    config: &Value,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let expected = info.api_version();
    let given = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if given != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {given}, expected: {expected}"
        )));
    }
    if config
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let gvk = format!("{}/{}, Kind=", info.group, info.version);
        return Err(ApiError::new(
            500,
            "",
            format!("failed to create typed patch object ({ns}/{name}; {gvk}): no corresponding type for {gvk}"),
        ));
    }
    Ok(())
}
