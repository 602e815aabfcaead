//! NodeRestriction (kube's plugin of that name): a kubelet, authenticated
//! as `system:node:<name>`, writes only what belongs to its node — its own
//! Node (without changing its taints or the labels kube reserves), its
//! Lease and CSINode, mirror pods bound to it, the status of pods bound to
//! it, evictions of those pods, tokens for their service accounts, the
//! status of their claims, and its ResourceSlices. The Node authorizer
//! lets such writes through by kind; this plugin, which sees the objects,
//! narrows them to the node.

mod nodes;
mod pods;
mod tokens;

use super::plugins::PluginInit;
use super::{Attributes, Mutating, Operation, Outcome};
use crate::security::Security;
use crate::storage::{Storage, StorageResult};
use kubeshard_core::keys::KeyLayout;
use kubeshard_core::meta;
use kubeshard_core::nodeauthz::{node_identity, NODE_LEASE_NAMESPACE};
use kubeshard_core::status::ApiError;
use kubeshard_shards::ExecutorContext;
use serde_json::Value;
use std::rc::Rc;

pub const NAME: &str = "NodeRestriction";

pub struct NodeRestriction {
    ctx: Rc<ExecutorContext>,
    keys: KeyLayout,
    security: Rc<Security>,
}

impl NodeRestriction {
    pub fn new(init: &PluginInit<'_>) -> Self {
        Self {
            ctx: init.ctx.clone(),
            keys: init.keys.clone(),
            security: init.security.clone(),
        }
    }

    /// A stored object as the plugin reads it; None when it does not exist.
    async fn fetch(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ApiError> {
        let key = self.keys.builtin(group, plural);
        let found = self
            .ctx
            .shards
            .get(&key, namespace, name)
            .await
            .or_status()?;
        Ok(found.map(|o| o.to_value()))
    }
}

/// The resources the plugin looks at.
const WATCHED: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "nodes"),
    ("", "persistentvolumeclaims"),
    ("", "serviceaccounts"),
    ("coordination.k8s.io", "leases"),
    ("storage.k8s.io", "csinodes"),
    ("resource.k8s.io", "resourceslices"),
];

/// One write by one node, with kube's way of naming it in a refusal.
pub(super) struct Check<'a> {
    node: &'a str,
    a: &'a Attributes<'a>,
    object: Option<&'a Value>,
}

impl Check<'_> {
    /// kube's 403 for this write: the request's resource (never the
    /// subresource) and the name from the path, else from the object.
    fn forbidden(&self, msg: impl AsRef<str>) -> ApiError {
        let name = if !self.a.name.is_empty() {
            self.a.name
        } else {
            self.object
                .map(|o| {
                    let n = meta::name(o);
                    if n.is_empty() {
                        meta::meta_str(o, "generateName").unwrap_or("")
                    } else {
                        n
                    }
                })
                .filter(|n| !n.is_empty())
                .unwrap_or("Unknown")
        };
        ApiError::forbidden(
            &self.a.resource.group,
            &self.a.resource.plural,
            name,
            msg.as_ref(),
        )
    }

    fn refuse<T>(&self, msg: impl AsRef<str>) -> Result<T, ApiError> {
        Err(self.forbidden(msg))
    }

    /// The name the write is about: the object's on create, the path's
    /// otherwise.
    fn target_name(&self) -> &str {
        match (self.a.operation, self.object) {
            (Operation::Create, Some(o)) => meta::name(o),
            _ => self.a.name,
        }
    }

    fn old(&self) -> &Value {
        self.a.old_object.unwrap_or(&Value::Null)
    }

    fn new_object(&self) -> &Value {
        self.object.unwrap_or(&Value::Null)
    }

    fn unexpected_operation(&self) -> ApiError {
        self.forbidden(format!(
            "unexpected operation {:?}",
            self.a.operation.as_str()
        ))
    }

    fn lease(&self) -> Result<(), ApiError> {
        if self.a.namespace != NODE_LEASE_NAMESPACE {
            return self.refuse(format!(
                "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
            ));
        }
        if self.target_name() != self.node {
            return self
                .refuse("can only access node lease with the same name as the requesting node");
        }
        Ok(())
    }

    fn csi_node(&self) -> Result<(), ApiError> {
        if self.target_name() != self.node {
            return self
                .refuse("can only access CSINode with the same name as the requesting node");
        }
        Ok(())
    }

    fn resource_slice(&self) -> Result<(), ApiError> {
        let slice_node =
            |o: &Value| o.pointer("/spec/nodeName").and_then(Value::as_str) == Some(self.node);
        match self.a.operation {
            Operation::Create if !slice_node(self.new_object()) => self.refuse(
                "can only create ResourceSlice with the same NodeName as the requesting node",
            ),
            Operation::Delete if !slice_node(self.old()) => self.refuse(
                "can only delete ResourceSlice with the same NodeName as the requesting node",
            ),
            // Nothing else keeps a slice's node fixed: a node must not move
            // its slice to another node.
            Operation::Update if !slice_node(self.old()) || !slice_node(self.new_object()) => self
                .refuse(
                    "can only update ResourceSlice with the same NodeName as the requesting node",
                ),
            _ => Ok(()),
        }
    }

    /// A kubelet only writes a claim's status, and there only its size
    /// and conditions (what volume expansion reports).
    fn claim(&self) -> Result<(), ApiError> {
        if self.a.subresource != "status" {
            return self.refuse("may only update PVC status");
        }
        if self.a.operation != Operation::Update {
            return Err(self.unexpected_operation());
        }
        let strip = |o: &Value| {
            let mut o = o.clone();
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
                m.remove("managedFields");
            }
            if let Some(s) = o.get_mut("status").and_then(Value::as_object_mut) {
                for f in [
                    "capacity",
                    "conditions",
                    "allocatedResources",
                    "allocatedResourceStatuses",
                ] {
                    s.remove(f);
                }
            }
            // No status and an emptied one are the same.
            if let Some(m) = o.as_object_mut() {
                if m.get("status")
                    .is_some_and(|s| s.as_object().is_some_and(|s| s.is_empty()))
                {
                    m.remove("status");
                }
            }
            o
        };
        if strip(self.old()) != strip(self.new_object()) {
            return self.refuse(format!(
                "node {:?} is not allowed to update fields other than status.quantity and status.conditions",
                self.node
            ));
        }
        Ok(())
    }
}

impl Mutating for NodeRestriction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        let r = a.resource;
        WATCHED.contains(&(r.group.as_str(), r.plural.as_str())) && node_identity(a.user).is_some()
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        let node = node_identity(a.user).unwrap_or("");
        let object = object.map(|o| &*o);
        let check = Check { node, a, object };
        if node.is_empty() {
            return Outcome::Ready(check.refuse(format!(
                "could not determine node from user {:?}",
                a.user.name
            )));
        }
        match (a.resource.group.as_str(), a.resource.plural.as_str()) {
            ("", "pods") => Outcome::later(async move { self.pod(&check).await }),
            ("", "nodes") => Outcome::Ready(check.node_object()),
            ("", "persistentvolumeclaims") => Outcome::Ready(check.claim()),
            ("", "serviceaccounts")
                if a.subresource == "token" && a.operation == Operation::Create =>
            {
                Outcome::later(async move { self.token(&check).await })
            }
            ("coordination.k8s.io", "leases") => Outcome::Ready(check.lease()),
            ("storage.k8s.io", "csinodes") => Outcome::Ready(check.csi_node()),
            ("resource.k8s.io", "resourceslices") => Outcome::Ready(check.resource_slice()),
            _ => Outcome::Ready(Ok(())),
        }
    }
}
