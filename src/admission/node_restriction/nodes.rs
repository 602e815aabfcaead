//! What a node may write about its Node: only its own, never its taints
//! or owners after creation, and none of the labels kube reserves for
//! administrators (a node that could label itself `node-restriction…`
//! could attract workloads meant for other nodes).

use super::Check;
use crate::admission::Operation;
use kubeshard_core::status::ApiError;
use serde_json::{Map, Value};

/// Labels in kube's namespaces a kubelet sets on its own Node.
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
];

/// Label prefixes (and their subdomains) kubelets may set freely.
const KUBELET_LABEL_DOMAINS: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

fn in_domain(prefix: &str, domain: &str) -> bool {
    prefix == domain || prefix.ends_with(&format!(".{domain}"))
}

/// Whether a node may set or change this label on itself.
pub fn label_allowed(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return true;
    };
    if in_domain(prefix, "node-restriction.kubernetes.io") {
        return false;
    }
    let reserved = in_domain(prefix, "kubernetes.io") || in_domain(prefix, "k8s.io");
    !reserved
        || KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_DOMAINS.iter().any(|d| in_domain(prefix, d))
}

fn labels(o: &Value) -> Map<String, Value> {
    o.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The labels added, removed or changed that the node may not touch,
/// sorted.
fn forbidden_changes(old: &Map<String, Value>, new: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k) && !label_allowed(k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn non_empty(v: Option<&Value>) -> Option<&Value> {
    v.filter(|x| !x.is_null())
}

impl Check<'_> {
    pub(super) fn node_object(&self) -> Result<(), ApiError> {
        let node = self.node;
        let requested = self.target_name();
        if requested != node {
            return self.refuse(format!(
                "node {node:?} is not allowed to modify node {requested:?}"
            ));
        }
        let (old, new) = (self.old(), self.new_object());
        match self.a.operation {
            Operation::Delete => Ok(()),
            Operation::Create => {
                if non_empty(new.pointer("/spec/configSource")).is_some() {
                    // "pods" is kube's wording.
                    return self.refuse(format!(
                        "node {node:?} is not allowed to create pods with a non-nil configSource"
                    ));
                }
                let bad = forbidden_changes(&Map::new(), &labels(new));
                if !bad.is_empty() {
                    return self.refuse(format!(
                        "node {node:?} is not allowed to set the following labels: {}",
                        bad.join(", ")
                    ));
                }
                Ok(())
            }
            Operation::Update => {
                let source = non_empty(new.pointer("/spec/configSource"));
                if source.is_some() && source != non_empty(old.pointer("/spec/configSource")) {
                    return self.refuse(format!(
                        "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                    ));
                }
                let list = |o: &Value, p: &str| {
                    o.pointer(p)
                        .and_then(Value::as_array)
                        .filter(|a| !a.is_empty())
                        .cloned()
                };
                if list(old, "/spec/taints") != list(new, "/spec/taints") {
                    return self.refuse(format!("node {node:?} is not allowed to modify taints"));
                }
                if list(old, "/metadata/ownerReferences") != list(new, "/metadata/ownerReferences")
                {
                    return self.refuse(format!(
                        "node {node:?} is not allowed to modify ownerReferences"
                    ));
                }
                let bad = forbidden_changes(&labels(old), &labels(new));
                if !bad.is_empty() {
                    return self.refuse(format!(
                        "is not allowed to modify labels: {}",
                        bad.join(", ")
                    ));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_labels_are_the_administrators() {
        for ok in [
            "example.com/x",
            "plain",
            "kubernetes.io/hostname",
            "node.kubernetes.io/instance-type",
            "foo.node.kubernetes.io/x",
            "kubelet.kubernetes.io/x",
        ] {
            assert!(label_allowed(ok), "{ok}");
        }
        for no in [
            "node-restriction.kubernetes.io/x",
            "foo.node-restriction.kubernetes.io/x",
            "node-role.kubernetes.io/worker",
            "other.k8s.io/x",
            "kubernetes.io/other",
        ] {
            assert!(!label_allowed(no), "{no}");
        }
    }
}
