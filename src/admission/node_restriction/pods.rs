//! What a node may write about pods: create and delete its mirror pods,
//! report the status of pods bound to it, and evict them.

use super::{Check, NodeRestriction};
use crate::admission::Operation;
use kubeshard_core::meta;
use kubeshard_core::nodeauthz::refs::{is_mirror_pod, mirror_pod_reference, MIRROR_ANNOTATION};
use kubeshard_core::status::ApiError;
use serde_json::Value;

fn node_name_of(pod: &Value) -> &str {
    meta::str_at(pod, "/spec/nodeName")
}

/// kube's informer-style 404 (singular resource).
fn pod_not_found(name: &str) -> ApiError {
    ApiError::not_found("", "pod", name)
}

impl NodeRestriction {
    pub(super) async fn pod(&self, c: &Check<'_>) -> Result<(), ApiError> {
        match (c.a.subresource, c.a.operation) {
            ("", Operation::Create) => self.mirror_pod(c).await,
            ("", Operation::Delete) => {
                let Some(old) = c.a.old_object else {
                    return Err(pod_not_found(c.a.name));
                };
                if node_name_of(old) != c.node {
                    return c.refuse(format!(
                        "node {:?} can only delete pods with spec.nodeName set to itself",
                        c.node
                    ));
                }
                Ok(())
            }
            ("", op) => c.refuse(format!(
                "unexpected operation {:?}, node {:?} can only create and delete mirror pods",
                op.as_str(),
                c.node
            )),
            ("status", Operation::Update) => status_update(c),
            ("status", _) => Err(c.unexpected_operation()),
            ("eviction", Operation::Create) => self.eviction(c).await,
            ("eviction", op) => c.refuse(format!("unexpected operation {}", op.as_str())),
            (sub, _) => c.refuse(format!(
                "unexpected pod subresource {sub:?}, only 'status' and 'eviction' are allowed"
            )),
        }
    }

    /// A mirror pod: annotated, bound to this node, owned (as controller)
    /// by this node's Node object, and referencing no API object the node
    /// could not otherwise read.
    async fn mirror_pod(&self, c: &Check<'_>) -> Result<(), ApiError> {
        let pod = c.new_object();
        let node = c.node;
        if !is_mirror_pod(pod) {
            return c.refuse(format!(
                "pod does not have {MIRROR_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
            ));
        }
        if node_name_of(pod) != node {
            return c.refuse(format!(
                "node {node:?} can only create pods with spec.nodeName set to itself"
            ));
        }
        let owners = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if owners.len() > 1 {
            return c.refuse(format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ));
        }
        let owner = owners
            .first()
            .filter(|o| o["apiVersion"] == "v1" && o["kind"] == "Node" && o["name"] == node);
        let Some(owner) = owner else {
            return c.refuse(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ));
        };
        if owner["controller"] != Value::Bool(true) {
            return c.refuse(format!(
                "node {node:?} can only create pods with a controller owner reference set to itself"
            ));
        }
        if owner["blockOwnerDeletion"] == Value::Bool(true) {
            return c.refuse(format!(
                "node {node:?} must not set blockOwnerDeletion on an owner reference"
            ));
        }
        let stored = self
            .fetch("", "nodes", "", node)
            .await?
            .ok_or_else(|| ApiError::not_found("", "node", node))?;
        let want = owner["uid"].as_str().unwrap_or("");
        let got = meta::meta_str(&stored, "uid").unwrap_or("");
        if want != got {
            return c.refuse(format!(
                "node {node} UID mismatch: expected {want} got {got}"
            ));
        }
        match mirror_pod_reference(pod) {
            None => Ok(()),
            Some(Ok(what)) => c.refuse(format!(
                "node {node:?} can not create pods that reference {what}"
            )),
            Some(Err(why)) => c.refuse(format!(
                "error checking mirror pod for API references: {why}"
            )),
        }
    }

    async fn eviction(&self, c: &Check<'_>) -> Result<(), ApiError> {
        let name = if c.a.name.is_empty() {
            meta::name(c.new_object())
        } else {
            c.a.name
        };
        if name.is_empty() {
            return c.refuse("could not determine pod from request data");
        }
        let pod = self
            .fetch("", "pods", c.a.namespace, name)
            .await?
            .ok_or_else(|| pod_not_found(name))?;
        if node_name_of(&pod) != c.node {
            return c.refuse(format!(
                "node {} can only evict pods with spec.nodeName set to itself",
                c.node
            ));
        }
        Ok(())
    }
}

/// A status update of a pod bound to this node that leaves the pod's
/// labels and claim assignments alone.
fn status_update(c: &Check<'_>) -> Result<(), ApiError> {
    let (old, new) = (c.old(), c.new_object());
    let node = c.node;
    if node_name_of(old) != node {
        return c.refuse(format!(
            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
        ));
    }
    let labels = |o: &Value| {
        o.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
            .cloned()
    };
    if labels(old) != labels(new) {
        return c.refuse(format!(
            "node {node:?} cannot update labels through pod status"
        ));
    }
    if old.pointer("/status/resourceClaimStatuses") != new.pointer("/status/resourceClaimStatuses")
    {
        // The misspelling is kube's.
        return c.refuse(format!(
            "node {node:?} cannot update resource claim statues"
        ));
    }
    if old.pointer("/status/extendedResourceClaimStatus")
        != new.pointer("/status/extendedResourceClaimStatus")
    {
        return c.refuse(format!(
            "node {node:?} cannot update extended resource claim status"
        ));
    }
    Ok(())
}
