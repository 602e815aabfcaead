//! What admission policies (validating and mutating alike) read beside
//! the object: a binding's parameter objects (`paramKind` with
//! `paramRef`), collected as kube collects them, and the namespace of
//! the write (`namespaceObject`).

use super::source::{Binding, ParamKind};
use crate::admission::namespace_labels;
use crate::admission::Attributes;
use crate::storage::Storage;
use kubeshard_core::meta;
use kubeshard_core::selector::labels::LabelSelector;
use kubeshard_core::status::ApiError;
use serde_json::Value;
use std::sync::Arc;

/// The namespace the write is in, whole; None for cluster-scoped
/// objects and namespaces themselves.
pub async fn namespace_object(
    a: &Attributes<'_>,
    namespaces: &Arc<str>,
) -> Result<Option<Value>, ApiError> {
    let is_namespace = a.resource.group.is_empty() && a.resource.plural == "namespaces";
    if a.namespace.is_empty() || is_namespace {
        return Ok(None);
    }
    Ok(a.api
        .storage()
        .get(namespaces, "", a.namespace)
        .await
        .map_err(crate::storage::status)?
        .map(|o| o.to_value()))
}

/// The binding's parameter objects (one `None` when the policy takes
/// none).
pub async fn params(
    a: &Attributes<'_>,
    param_kind: Option<&ParamKind>,
    binding: &Binding,
) -> Result<Vec<Option<Value>>, String> {
    let (Some((group, version, kind)), Some(param_ref)) = (param_kind, &binding.param_ref) else {
        return Ok(vec![None]);
    };
    let catalog = a.api.catalog();
    let info = catalog.lookup_kind(group, kind).cloned().ok_or_else(|| {
        format!(
            "paramKind kind `{}, Kind={kind}` not known",
            if group.is_empty() {
                version.clone()
            } else {
                format!("{group}/{version}")
            }
        )
    })?;
    let named_ns = meta::str_at(param_ref, "/namespace");
    let namespace = if info.namespaced {
        match (named_ns, a.namespace) {
            ("", "") => return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into()),
            ("", ns) => ns,
            (ns, _) => ns,
        }
    } else if !named_ns.is_empty() {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    } else {
        ""
    };
    let name = meta::str_at(param_ref, "/name");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    let storage = a.api.storage();
    let found: Vec<Option<Value>> = match (name, selector) {
        ("", None) => return Err("one of name or selector must be provided".into()),
        (n, Some(_)) if !n.is_empty() => {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into())
        }
        (n, None) => storage
            .get(&info.storage_key, namespace, n)
            .await
            .map_err(|e| format!("{e:?}"))?
            .map(|o| Some(o.to_value()))
            .into_iter()
            .collect(),
        (_, Some(sel)) => {
            let sel = LabelSelector::from_metav1(sel)?;
            crate::storage::list_in(storage, &info, namespace)
                .await
                .map_err(|e| e.message)?
                .iter()
                .map(|o| o.to_value())
                .filter(|o| sel.matches(&namespace_labels::labels(o)))
                .map(Some)
                .collect()
        }
    };
    if found.is_empty() && meta::str_at(param_ref, "/parameterNotFoundAction") == "Deny" {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found)
}
