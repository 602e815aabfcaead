//! Which objects each node may reach: kube's node-authorizer graph, kept
//! as reference counts per (object, node) instead of a general graph,
//! because every path in kube's graph is one of a few fixed shapes
//! (object → pod → node, PV → claim → pod → node, Secret → PV → …,
//! attachment or slice → node).

use super::refs::{pod_refs, pv_claim, pv_secrets, PodRefs};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The kinds of object the graph answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vertex {
    Pod,
    Secret,
    ConfigMap,
    Claim,
    Volume,
    ServiceAccount,
    ResourceClaim,
    VolumeAttachment,
    ResourceSlice,
}

type Named = (String, String);

#[derive(Debug)]
struct PodEntry {
    node: String,
    refs: PodRefs,
}

#[derive(Debug)]
struct VolumeEntry {
    claim: Named,
    secrets: Vec<Named>,
}

/// The graph one executor keeps from its informers.
#[derive(Debug, Default)]
pub struct NodeGraph {
    pods: HashMap<Named, PodEntry>,
    /// (kind, namespace, name) → node → how many of the node's pods use it.
    used: HashMap<(Vertex, String, String), HashMap<String, u32>>,
    volumes: HashMap<String, VolumeEntry>,
    /// A Secret's (namespace, name) → the PVs that name it.
    volume_secrets: HashMap<Named, HashSet<String>>,
    attachments: HashMap<String, String>,
    slices: HashMap<String, String>,
}

fn each_ref(refs: &PodRefs, mut f: impl FnMut(Vertex, &str)) {
    for s in &refs.secrets {
        f(Vertex::Secret, s);
    }
    for c in &refs.config_maps {
        f(Vertex::ConfigMap, c);
    }
    for c in &refs.claims {
        f(Vertex::Claim, c);
    }
    for c in &refs.resource_claims {
        f(Vertex::ResourceClaim, c);
    }
    if let Some(sa) = &refs.service_account {
        f(Vertex::ServiceAccount, sa);
    }
}

impl NodeGraph {
    /// Records a pod as it is now. A pod not yet bound to a node grants
    /// nothing.
    pub fn upsert_pod(&mut self, pod: &Value) {
        let key = (
            crate::meta::namespace(pod).to_string(),
            crate::meta::name(pod).to_string(),
        );
        self.remove_pod(&key.0, &key.1);
        let node = crate::meta::str_at(pod, "/spec/nodeName");
        if node.is_empty() {
            return;
        }
        let refs = pod_refs(pod);
        each_ref(&refs, |kind, name| {
            *self
                .used
                .entry((kind, key.0.clone(), name.to_string()))
                .or_default()
                .entry(node.to_string())
                .or_default() += 1;
        });
        let node = node.to_string();
        self.pods.insert(key, PodEntry { node, refs });
    }

    pub fn remove_pod(&mut self, namespace: &str, name: &str) {
        let Some(old) = self.pods.remove(&(namespace.to_string(), name.to_string())) else {
            return;
        };
        each_ref(&old.refs, |kind, n| {
            let key = (kind, namespace.to_string(), n.to_string());
            let Some(nodes) = self.used.get_mut(&key) else {
                return;
            };
            if let Some(count) = nodes.get_mut(&old.node) {
                *count -= 1;
                if *count == 0 {
                    nodes.remove(&old.node);
                }
            }
            if nodes.is_empty() {
                self.used.remove(&key);
            }
        });
    }

    /// Records a PersistentVolume: bound to a claim, it leads from the
    /// claim's nodes to itself and to the Secrets it mounts with.
    pub fn upsert_volume(&mut self, pv: &Value) {
        let name = crate::meta::name(pv).to_string();
        self.remove_volume(&name);
        let Some(claim) = pv_claim(pv) else {
            return;
        };
        let secrets = pv_secrets(pv, &claim.0);
        for s in &secrets {
            self.volume_secrets
                .entry(s.clone())
                .or_default()
                .insert(name.clone());
        }
        self.volumes.insert(name, VolumeEntry { claim, secrets });
    }

    pub fn remove_volume(&mut self, name: &str) {
        let Some(old) = self.volumes.remove(name) else {
            return;
        };
        for s in old.secrets {
            if let Some(pvs) = self.volume_secrets.get_mut(&s) {
                pvs.remove(name);
                if pvs.is_empty() {
                    self.volume_secrets.remove(&s);
                }
            }
        }
    }

    /// Records an object that names its node directly (a VolumeAttachment
    /// or a ResourceSlice); an empty node removes it.
    pub fn set_node_of(&mut self, kind: Vertex, name: &str, node: &str) {
        let map = match kind {
            Vertex::VolumeAttachment => &mut self.attachments,
            Vertex::ResourceSlice => &mut self.slices,
            _ => return,
        };
        if node.is_empty() {
            map.remove(name);
        } else {
            map.insert(name.to_string(), node.to_string());
        }
    }

    /// Forgets every object of one kind (before an informer relists).
    pub fn clear(&mut self, kind: Vertex) {
        match kind {
            Vertex::Pod => {
                self.pods.clear();
                self.used.clear();
            }
            Vertex::Volume => {
                self.volumes.clear();
                self.volume_secrets.clear();
            }
            Vertex::VolumeAttachment => self.attachments.clear(),
            Vertex::ResourceSlice => self.slices.clear(),
            _ => {}
        }
    }

    fn used_on(&self, kind: Vertex, namespace: &str, name: &str, node: &str) -> bool {
        self.used
            .get(&(kind, namespace.to_string(), name.to_string()))
            .is_some_and(|nodes| nodes.contains_key(node))
    }

    fn volume_on(&self, name: &str, node: &str) -> bool {
        self.volumes
            .get(name)
            .is_some_and(|v| self.used_on(Vertex::Claim, &v.claim.0, &v.claim.1, node))
    }

    /// True when `node` has a path to the object: it runs a pod that uses
    /// it, or (for PVs and their Secrets) a pod that uses the bound claim.
    pub fn reaches(&self, node: &str, kind: Vertex, namespace: &str, name: &str) -> bool {
        match kind {
            Vertex::Pod => self
                .pods
                .get(&(namespace.to_string(), name.to_string()))
                .is_some_and(|p| p.node == node),
            Vertex::Volume => self.volume_on(name, node),
            Vertex::VolumeAttachment => self.attachments.get(name).is_some_and(|n| n == node),
            Vertex::ResourceSlice => self.slices.get(name).is_some_and(|n| n == node),
            Vertex::Secret => {
                self.used_on(kind, namespace, name, node)
                    || self
                        .volume_secrets
                        .get(&(namespace.to_string(), name.to_string()))
                        .is_some_and(|pvs| pvs.iter().any(|pv| self.volume_on(pv, node)))
            }
            _ => self.used_on(kind, namespace, name, node),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, secret: &str, claim: &str) -> Value {
        json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"nodeName": node, "serviceAccountName": "sa", "volumes": [
                {"name": "s", "secret": {"secretName": secret}},
                {"name": "c", "persistentVolumeClaim": {"claimName": claim}}
            ]}
        })
    }

    #[test]
    fn a_node_reaches_what_its_pods_use_and_no_more() {
        let mut g = NodeGraph::default();
        g.upsert_pod(&pod("a", "n1", "s1", "data"));
        g.upsert_pod(&pod("b", "n2", "s2", "other"));
        g.upsert_pod(&json!({"metadata": {"name": "pending", "namespace": "ns"},
                             "spec": {"volumes": [{"name": "s", "secret": {"secretName": "s3"}}]}}));
        assert!(g.reaches("n1", Vertex::Pod, "ns", "a"));
        assert!(!g.reaches("n1", Vertex::Pod, "ns", "b"));
        assert!(g.reaches("n1", Vertex::Secret, "ns", "s1"));
        assert!(!g.reaches("n1", Vertex::Secret, "ns", "s2"));
        assert!(!g.reaches("n1", Vertex::Secret, "other", "s1"));
        assert!(!g.reaches("n1", Vertex::Secret, "ns", "s3"));
        assert!(g.reaches("n2", Vertex::ServiceAccount, "ns", "sa"));

        g.upsert_volume(&json!({"metadata": {"name": "pv1"}, "spec": {
            "claimRef": {"namespace": "ns", "name": "data"},
            "csi": {"driver": "d", "nodePublishSecretRef": {"name": "pv-s", "namespace": "vault"}}}}));
        assert!(g.reaches("n1", Vertex::Volume, "", "pv1"));
        assert!(!g.reaches("n2", Vertex::Volume, "", "pv1"));
        assert!(g.reaches("n1", Vertex::Secret, "vault", "pv-s"));
        assert!(!g.reaches("n2", Vertex::Secret, "vault", "pv-s"));

        // The pod moves away (deleted and recreated elsewhere): the node
        // loses everything that came through it.
        g.remove_pod("ns", "a");
        assert!(!g.reaches("n1", Vertex::Secret, "ns", "s1"));
        assert!(!g.reaches("n1", Vertex::Volume, "", "pv1"));
        assert!(!g.reaches("n1", Vertex::Secret, "vault", "pv-s"));

        g.set_node_of(Vertex::VolumeAttachment, "va", "n2");
        assert!(g.reaches("n2", Vertex::VolumeAttachment, "", "va"));
        assert!(!g.reaches("n1", Vertex::VolumeAttachment, "", "va"));
        g.set_node_of(Vertex::VolumeAttachment, "va", "");
        assert!(!g.reaches("n2", Vertex::VolumeAttachment, "", "va"));
    }

    /// Random pod histories: after any sequence of upserts and deletes the
    /// counted graph answers as a scan over the pods that exist now.
    #[derive(Debug, Clone)]
    enum Op {
        Put { pod: u8, node: u8, secrets: Vec<u8> },
        Delete { pod: u8 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..6, 0u8..3, proptest::collection::vec(0u8..4, 0..3))
                .prop_map(|(pod, node, secrets)| Op::Put { pod, node, secrets }),
            (0u8..6).prop_map(|pod| Op::Delete { pod }),
        ]
    }

    proptest! {
        #[test]
        fn counted_reach_matches_a_scan(ops in proptest::collection::vec(op(), 0..40)) {
            let mut g = NodeGraph::default();
            let mut model: HashMap<u8, (u8, Vec<u8>)> = HashMap::new();
            for op in ops {
                match op {
                    Op::Put { pod, node, secrets } => {
                        let vols: Vec<Value> = secrets.iter().enumerate()
                            .map(|(i, s)| json!({"name": format!("v{i}"), "secret": {"secretName": format!("s{s}")}}))
                            .collect();
                        g.upsert_pod(&json!({"metadata": {"name": format!("p{pod}"), "namespace": "ns"},
                                             "spec": {"nodeName": format!("n{node}"), "volumes": vols}}));
                        model.insert(pod, (node, secrets));
                    }
                    Op::Delete { pod } => {
                        g.remove_pod("ns", &format!("p{pod}"));
                        model.remove(&pod);
                    }
                }
            }
            for node in 0u8..3 {
                for secret in 0u8..4 {
                    let want = model.values().any(|(n, s)| *n == node && s.contains(&secret));
                    prop_assert_eq!(g.reaches(&format!("n{node}"), Vertex::Secret, "ns", &format!("s{secret}")), want);
                }
            }
        }
    }
}
