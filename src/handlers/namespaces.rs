//! Namespaces at the API: the system namespaces created at start, and the
//! `finalize` subresource, how the namespace controller (built in, or
//! kube-controller-manager's) releases a terminating namespace. What may
//! be created in a namespace, and which may be deleted, is the
//! NamespaceLifecycle admission plugin's; deletion itself is the
//! registry's: DELETE marks the namespace Terminating and the namespace
//! controller empties it.

use super::decode::{check_type, parse_object, read_body};
use super::managers;
use super::update::written_response;
use super::{Api, HandlerResult, ResourceRequest};
use crate::registry::{create_as, spec_finalizers, APISERVER};
use crate::storage::{Storage, StorageResult};
use http::Request;
use hyper::body::Incoming;
use kubeshard_core::meta;
use kubeshard_core::registry::lifecycle::STANDARD_FINALIZERS;
use kubeshard_core::status::{field_invalid, ApiError, StatusCause};
use kubeshard_core::validation::is_qualified_name;
use serde_json::{json, Value};
use std::rc::Rc;

/// Namespaces the server creates at start; all but kube-node-lease are
/// protected from deletion by the NamespaceLifecycle admission plugin.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// PUT `namespaces/{name}/finalize`: replaces `spec.finalizers` and nothing
/// else. Once both finalizer lists of a terminating namespace are empty
/// the namespace is deleted.
pub async fn finalize(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> HandlerResult {
    let tracking = managers::tracking(&rr.query, req.headers(), "finalize", "UpdateOptions")?;
    let (input, body) = read_body(req).await?;
    let mut obj = parse_object(input, &body)?;
    let info = rr.resource.clone();
    check_type(&info, &mut obj)?;
    let name = rr.info.name.clone();
    match meta::name(&obj) {
        "" => {}
        n if n == name => {}
        n => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )))
        }
    }
    let wanted = obj
        .pointer("/spec/finalizers")
        .cloned()
        .filter(|f| !f.is_null())
        .unwrap_or_else(|| json!([]));
    let causes = validate_spec_finalizers(&wanted);
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Namespace", &name, causes));
    }
    let rv = meta::resource_version(&obj).to_string();
    let written =
        super::update::change(api, rr, spec_finalizers(name, rv, wanted), tracking, None).await?;
    written_response(api, rr, &written).await
}

/// Each `spec.finalizers` entry is a qualified name, and one without a
/// domain must be a standard one.
fn validate_spec_finalizers(list: &Value) -> Vec<StatusCause> {
    let Some(items) = list.as_array() else {
        return vec![field_invalid(
            "spec.finalizers",
            &list.to_string(),
            "must be a list",
        )];
    };
    let mut causes = Vec::new();
    for (i, f) in items.iter().enumerate() {
        let path = format!("spec.finalizers[{i}]");
        let name = f.as_str().unwrap_or_default();
        causes.extend(
            is_qualified_name(name)
                .into_iter()
                .map(|m| field_invalid(&path, name, &m)),
        );
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
            causes.push(field_invalid(
                &path,
                name,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    causes
}

/// Creates the system namespaces at start (idempotent).
pub async fn bootstrap(api: &Api) -> Result<(), ApiError> {
    let info = api.builtin("", "namespaces")?;
    for ns in SYSTEM_NAMESPACES {
        if api
            .storage()
            .get(&info.storage_key, "", ns)
            .await
            .or_status()?
            .is_some()
        {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match create_as(api, &APISERVER, &info, obj).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
