//! kube's Node authorizer: what a kubelet (`system:node:<name>` in
//! `system:nodes`) may do. Reads of Secrets, ConfigMaps, claims, volumes,
//! service accounts and the like are allowed only for objects a pod bound
//! to that node uses ([`graph`]); the node's own Node, Lease and CSINode
//! by name; pods only through a `spec.nodeName` selector; everything else
//! by the static `system:node` rules. Writes the authorizer cannot judge
//! from the request alone (a node creating a Node or a mirror pod) are
//! allowed here and narrowed by the NodeRestriction admission plugin.

pub mod graph;
pub mod refs;

use crate::authn::{Attributes, UserInfo};
use crate::rbac::{rule_allows, PolicyRule};
use crate::selector::fields::FieldSelector;
use graph::{NodeGraph, Vertex};

/// The group every kubelet's identity is in.
pub const NODES_GROUP: &str = "system:nodes";
const NODE_USER_PREFIX: &str = "system:node:";
/// Where node heartbeat Leases live.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The static part of what nodes may do: the rules of the bootstrap
/// `system:node` ClusterRole (which, with this authorizer on, is bound to
/// nobody).
pub fn node_rules() -> &'static [PolicyRule] {
    static RULES: std::sync::LazyLock<Vec<PolicyRule>> = std::sync::LazyLock::new(|| {
        crate::rbac::bootstrap::cluster_roles()
            .iter()
            .find(|r| crate::meta::name(r) == "system:node")
            .map(crate::rbac::types::rules_of)
            .unwrap_or_default()
    });
    &RULES
}

/// Whether `user` is a node, and which: None for anyone else, Some("")
/// for a member of `system:nodes` whose name names no node.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    if !user.in_group(NODES_GROUP) {
        return None;
    }
    Some(user.name.strip_prefix(NODE_USER_PREFIX).unwrap_or(""))
}

/// The Node authorizer's answer: Ok to allow, Err(reason) for no opinion
/// (the next authorizer decides; the reason ends up in a 403).
pub type Verdict = Result<(), String>;

fn no(reason: impl Into<String>) -> Verdict {
    Err(reason.into())
}

/// Decides a request: None when `user` is not a node (no opinion, no
/// reason).
pub fn authorize(
    user: &UserInfo,
    attrs: &Attributes,
    graph: &NodeGraph,
    node_rules: &[PolicyRule],
) -> Option<Verdict> {
    let node = node_identity(user)?;
    if node.is_empty() {
        return Some(no(format!("unknown node for user {:?}", user.name)));
    }
    Some(decide(node, attrs, graph, node_rules))
}

fn decide(node: &str, attrs: &Attributes, graph: &NodeGraph, node_rules: &[PolicyRule]) -> Verdict {
    if attrs.resource_request {
        let by_graph = Request { node, attrs, graph };
        match (attrs.api_group.as_str(), attrs.resource.as_str()) {
            ("", "secrets") => return by_graph.read_namespaced(Vertex::Secret),
            ("", "configmaps") => return by_graph.read_namespaced(Vertex::ConfigMap),
            ("", "persistentvolumeclaims") if attrs.subresource == "status" => {
                return by_graph.status_update(Vertex::Claim)
            }
            ("", "persistentvolumeclaims") => return by_graph.get(Vertex::Claim),
            ("", "persistentvolumes") => return by_graph.get(Vertex::Volume),
            ("resource.k8s.io", "resourceclaims") => return by_graph.get(Vertex::ResourceClaim),
            ("storage.k8s.io", "volumeattachments") => {
                return by_graph.get(Vertex::VolumeAttachment)
            }
            ("", "serviceaccounts") => return by_graph.service_account(),
            ("coordination.k8s.io", "leases") => return by_graph.lease(),
            ("storage.k8s.io", "csinodes") => return by_graph.csi_node(),
            ("resource.k8s.io", "resourceslices") => return by_graph.resource_slice(),
            ("", "nodes") => return by_graph.node_object(),
            ("", "pods") => return by_graph.pod(),
            _ => {}
        }
    }
    if node_rules.iter().any(|r| rule_allows(attrs, r)) {
        Ok(())
    } else {
        no("")
    }
}

struct Request<'a> {
    node: &'a str,
    attrs: &'a Attributes,
    graph: &'a NodeGraph,
}

impl Request<'_> {
    fn verb(&self) -> &str {
        &self.attrs.verb
    }

    /// A path from the node to the named object.
    fn related(&self, kind: Vertex) -> Verdict {
        if self.attrs.name.is_empty() {
            return no("No Object name found");
        }
        if self
            .graph
            .reaches(self.node, kind, &self.attrs.namespace, &self.attrs.name)
        {
            Ok(())
        } else {
            no(format!(
                "no relationship found between node '{}' and this object",
                self.node
            ))
        }
    }

    /// True when a list or watch is narrowed to this node's objects with
    /// `field=<node>`.
    fn selects_own(&self, field: &str) -> bool {
        FieldSelector::parse(&self.attrs.field_selector)
            .is_ok_and(|s| s.requires_equal(field, self.node))
    }

    fn read_namespaced(&self, kind: Vertex) -> Verdict {
        if !matches!(self.verb(), "get" | "list" | "watch") {
            return no("can only read resources of this type");
        }
        if !self.attrs.subresource.is_empty() {
            return no("cannot read subresource");
        }
        if self.attrs.namespace.is_empty() {
            return no("can only read namespaced object of this type");
        }
        self.related(kind)
    }

    fn get(&self, kind: Vertex) -> Verdict {
        if self.verb() != "get" {
            return no("can only get individual resources of this type");
        }
        if !self.attrs.subresource.is_empty() {
            return no("cannot get subresource");
        }
        self.related(kind)
    }

    fn status_update(&self, kind: Vertex) -> Verdict {
        if !matches!(self.verb(), "update" | "patch") {
            return no("can only get/update/patch this type");
        }
        self.related(kind)
    }

    /// A kubelet reads the service accounts of its pods (for credential
    /// providers) and mints their tokens.
    fn service_account(&self) -> Verdict {
        if self.verb() == "get" && self.attrs.subresource.is_empty() {
            return self.read_namespaced(Vertex::ServiceAccount);
        }
        if self.verb() != "create" || self.attrs.name.is_empty() {
            return no("can only create tokens for individual service accounts");
        }
        if self.attrs.subresource != "token" {
            return no("can only create token subresource of serviceaccount");
        }
        self.related(Vertex::ServiceAccount)
    }

    fn lease(&self) -> Verdict {
        if !matches!(
            self.verb(),
            "get" | "create" | "update" | "patch" | "delete"
        ) {
            return no("can only get, create, update, patch, or delete a node lease");
        }
        if self.attrs.namespace != NODE_LEASE_NAMESPACE {
            return no(format!(
                "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
            ));
        }
        if self.verb() != "create" && self.attrs.name != self.node {
            return no("can only access node lease with the same name as the requesting node");
        }
        Ok(())
    }

    fn csi_node(&self) -> Verdict {
        if !matches!(
            self.verb(),
            "get" | "create" | "update" | "patch" | "delete"
        ) {
            return no("can only get, create, update, patch, or delete a CSINode");
        }
        if !self.attrs.subresource.is_empty() {
            return no("cannot authorize CSINode subresources");
        }
        if self.verb() != "create" && self.attrs.name != self.node {
            return no("can only access CSINode with the same name as the requesting node");
        }
        Ok(())
    }

    fn resource_slice(&self) -> Verdict {
        if !self.attrs.subresource.is_empty() {
            return no("cannot authorize ResourceSlice subresources");
        }
        match self.verb() {
            // NodeRestriction checks the new slice names this node.
            "create" => Ok(()),
            "get" | "update" | "patch" | "delete" => self.related(Vertex::ResourceSlice),
            "watch" | "list" | "deletecollection" => {
                if self.selects_own("spec.nodeName") {
                    Ok(())
                } else {
                    no("can only list/watch/deletecollection resourceslices with nodeName field selector")
                }
            }
            _ => no("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection"),
        }
    }

    /// A node reads only its own Node (by name, so a kubelet can look
    /// before it registers); creating and updating are narrowed by
    /// NodeRestriction.
    fn node_object(&self) -> Verdict {
        match (self.attrs.subresource.as_str(), self.verb()) {
            ("", "create" | "update" | "patch") => Ok(()),
            ("", "get" | "list" | "watch") => {
                if self.attrs.name == self.node {
                    Ok(())
                } else if self.attrs.name.is_empty() {
                    no(format!(
                        "node '{}' cannot read all nodes, only its own Node object",
                        self.node
                    ))
                } else {
                    no(format!(
                        "node '{}' cannot read '{}', only its own Node object",
                        self.node, self.attrs.name
                    ))
                }
            }
            ("status", "update" | "patch") => Ok(()),
            _ => no(""),
        }
    }

    fn pod(&self) -> Verdict {
        match (self.attrs.subresource.as_str(), self.verb()) {
            ("", "get") => self.get(Vertex::Pod),
            ("", "list" | "watch") => {
                if self.selects_own("spec.nodeName") {
                    Ok(())
                } else if !self.attrs.name.is_empty() {
                    self.related(Vertex::Pod)
                } else {
                    no("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // Mirror pods; NodeRestriction keeps them to this node.
            ("", "create" | "delete") => Ok(()),
            ("status", "update" | "patch") => Ok(()),
            ("eviction", "create") => Ok(()),
            _ => no(""),
        }
    }
}

#[cfg(test)]
mod tests;
