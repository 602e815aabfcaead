//! Namespace lifecycle at the API: objects may only be created in a
//! namespace that exists and is not terminating, the system namespaces
//! cannot be deleted, and the `finalize` subresource is how the namespace
//! controller (built in, or kube-controller-manager's) releases a
//! terminating namespace. Deletion itself is the registry's: DELETE marks
//! the namespace Terminating and the namespace controller empties it.

use super::decode::{check_type, parse_object, read_body};
use super::update::{dry_run, finish_update, Creates};
use super::{Api, HandlerResult, ResourceRequest};
use http::Request;
use hyper::body::Incoming;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta;
use kubeshard_core::registry::lifecycle::deletion_timestamp;
use kubeshard_core::status::{field_invalid, ApiError, StatusCause};
use kubeshard_core::validation::is_qualified_name;
use serde_json::{json, Value};
use std::rc::Rc;
use std::sync::Arc;

/// Namespaces the server creates at start; all but kube-node-lease are
/// protected from deletion, as kube's NamespaceLifecycle admission does.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
const PROTECTED: &[&str] = &["default", "kube-system", "kube-public"];

/// Finalizer names a namespace's `spec.finalizers` may use without a
/// domain prefix.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

const NAMESPACES_KEY: &str = "/namespaces";

fn namespaces_key() -> Arc<str> {
    Arc::from(NAMESPACES_KEY)
}

/// 404 when the namespace does not exist, 403 when it is terminating.
pub async fn require_active(
    api: &Api,
    info: &ResourceInfo,
    name: &str,
    namespace: &str,
) -> Result<(), ApiError> {
    let ns = api.shards().get(&namespaces_key(), "", namespace).await?;
    let Some(ns) = ns else {
        return Err(ApiError::not_found("", "namespaces", namespace));
    };
    if is_terminating(&ns) {
        return Err(ApiError::forbidden(
            &info.group,
            &info.plural,
            name,
            &format!("unable to create new content in namespace {namespace} because it is being terminated"),
        ));
    }
    Ok(())
}

/// Whether a namespace is being deleted. Every create in a namespace
/// asks; decoding the namespace to find out was 9% of a create's CPU, so
/// only a namespace whose JSON has the key at all is decoded.
fn is_terminating(ns: &kubeshard_cache::StoredObject) -> bool {
    crate::controllers::objmeta::mentions_deletion_timestamp(ns)
        && deletion_timestamp(&ns.to_value()).is_some()
}

/// The system namespaces may not be deleted.
pub fn admit_delete(name: &str) -> Result<(), ApiError> {
    if PROTECTED.contains(&name) {
        return Err(ApiError::forbidden(
            "",
            "namespaces",
            name,
            "this namespace may not be deleted",
        ));
    }
    Ok(())
}

/// PUT `namespaces/{name}/finalize`: replaces `spec.finalizers` and nothing
/// else. Once both finalizer lists of a terminating namespace are empty
/// the namespace is deleted.
pub async fn finalize(
    api: &Rc<Api>,
    rr: &ResourceRequest,
    req: Request<Incoming>,
) -> HandlerResult {
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
    let dry = dry_run(&rr.query)?;
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
    let try_update = crate::registry::set_spec_finalizers(name, rv, wanted);
    finish_update(api, rr, try_update, dry, Creates::Never).await
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
    let catalog = api.catalog.current();
    let info = catalog
        .lookup("", "v1", "namespaces")
        .cloned()
        .ok_or_else(|| ApiError::internal("namespaces missing from the catalog"))?;
    for ns in SYSTEM_NAMESPACES {
        if api.shards().get(&info.storage_key, "", ns).await?.is_some() {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let prepared = super::create::prepare(&info, obj)?;
        match api.shards().create(&info, prepared).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
