//! What a pod or a PersistentVolume lets the node it runs on read: the
//! objects the kubelet must fetch to start the pod (kube's
//! `VisitPodSecretNames`/`VisitPodConfigmapNames` and the PV walk).

use serde_json::Value;

/// Names in the pod's namespace, by the kind of object they name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodRefs {
    pub secrets: Vec<String>,
    pub config_maps: Vec<String>,
    pub claims: Vec<String>,
    pub resource_claims: Vec<String>,
    pub service_account: Option<String>,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str().filter(|s| !s.is_empty())
}

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn push(list: &mut Vec<String>, name: Option<&str>) {
    if let Some(n) = name {
        if !list.iter().any(|x| x == n) {
            list.push(n.to_string());
        }
    }
}

/// Volume sources that name a Secret with `secretRef.name` in the pod's
/// namespace.
const SECRET_REF_SOURCES: &[&str] = &[
    "cephfs",
    "cinder",
    "flexVolume",
    "rbd",
    "scaleIO",
    "iscsi",
    "storageos",
];

/// The annotation that marks a pod as a node's mirror of a static pod.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

pub fn is_mirror_pod(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
}

/// Every object a pod references, for the node it runs on. A mirror pod
/// references nothing: a node creates mirror pods itself, and one must
/// never grant it more reads.
pub fn pod_refs(pod: &Value) -> PodRefs {
    if is_mirror_pod(pod) {
        return PodRefs::default();
    }
    references(pod)
}

/// Volume sources a mirror pod may use: none of them names an API object
/// (their Secret references are caught as Secrets first).
const SELF_CONTAINED_VOLUMES: &[&str] = &[
    "awsElasticBlockStore",
    "azureDisk",
    "cephfs",
    "cinder",
    "downwardAPI",
    "emptyDir",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "hostPath",
    "image",
    "iscsi",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// Why a mirror pod may not be created: the first API object it would
/// reference, in kube's wording (`secrets`, `configmaps (via projected
/// volumes)`, …), or an error for a volume of no known type.
pub fn mirror_pod_reference(pod: &Value) -> Option<Result<String, String>> {
    let r = references(pod);
    if r.service_account.is_some() {
        return Some(Ok("serviceaccounts".into()));
    }
    if !r.secrets.is_empty() {
        return Some(Ok("secrets".into()));
    }
    if !r.config_maps.is_empty() {
        return Some(Ok("configmaps".into()));
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    if items(spec, "resourceClaims").next().is_some() {
        return Some(Ok("resourceclaims".into()));
    }
    for v in items(spec, "volumes") {
        let name = str_at(v, &["name"]).unwrap_or("");
        let source = v
            .as_object()
            .and_then(|m| m.keys().find(|k| *k != "name"))
            .map(String::as_str);
        let what = match source {
            Some(s) if SELF_CONTAINED_VOLUMES.contains(&s) => continue,
            Some("configMap") => "configmaps (via configmap volumes)",
            Some("secret") => "secrets (via secret volumes)",
            Some("csi") => "csidrivers (via CSI volumes)",
            Some("glusterfs") => "endpoints (via glusterFS volumes)",
            Some("persistentVolumeClaim") => "persistentvolumeclaims",
            Some("ephemeral") => "persistentvolumeclaims (via ephemeral volumes)",
            Some("azureFile") => "secrets (via azureFile volumes)",
            Some("projected") => match projected_reference(&v["projected"]) {
                Ok(None) => continue,
                Ok(Some(what)) => what,
                Err(()) => {
                    return Some(Err(format!("unknown source for projected volume {name:?}")))
                }
            },
            _ => return Some(Err(format!("unknown volume type for volume  {name:?}"))),
        };
        return Some(Ok(what.into()));
    }
    None
}

fn projected_reference(projected: &Value) -> Result<Option<&'static str>, ()> {
    for s in items(projected, "sources") {
        let source = s
            .as_object()
            .and_then(|m| m.keys().next())
            .map(String::as_str);
        return Ok(Some(match source {
            Some("downwardAPI") => continue,
            Some("configMap") => "configmaps (via projected volumes)",
            Some("secret") => "secrets (via projected volumes)",
            Some("serviceAccountToken") => "serviceaccounts (via projected volumes)",
            Some("clusterTrustBundle") => "clustertrustbundles",
            Some("podCertificate") => "podcertificates",
            _ => return Err(()),
        }));
    }
    Ok(None)
}

fn references(pod: &Value) -> PodRefs {
    let mut r = PodRefs::default();
    let Some(spec) = pod.get("spec") else {
        return r;
    };
    r.service_account = str_at(spec, &["serviceAccountName"]).map(str::to_string);
    for s in items(spec, "imagePullSecrets") {
        push(&mut r.secrets, str_at(s, &["name"]));
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in items(spec, list) {
            for from in items(c, "envFrom") {
                push(&mut r.secrets, str_at(from, &["secretRef", "name"]));
                push(&mut r.config_maps, str_at(from, &["configMapRef", "name"]));
            }
            for e in items(c, "env") {
                let vf = e.get("valueFrom").unwrap_or(&Value::Null);
                push(&mut r.secrets, str_at(vf, &["secretKeyRef", "name"]));
                push(&mut r.config_maps, str_at(vf, &["configMapKeyRef", "name"]));
            }
        }
    }
    let pod_name = crate::meta::name(pod);
    for v in items(spec, "volumes") {
        push(&mut r.secrets, str_at(v, &["secret", "secretName"]));
        push(&mut r.secrets, str_at(v, &["azureFile", "secretName"]));
        push(
            &mut r.secrets,
            str_at(v, &["csi", "nodePublishSecretRef", "name"]),
        );
        for src in SECRET_REF_SOURCES {
            push(&mut r.secrets, str_at(v, &[src, "secretRef", "name"]));
        }
        push(&mut r.config_maps, str_at(v, &["configMap", "name"]));
        if let Some(projected) = v.get("projected") {
            for s in items(projected, "sources") {
                push(&mut r.secrets, str_at(s, &["secret", "name"]));
                push(&mut r.config_maps, str_at(s, &["configMap", "name"]));
            }
        }
        push(
            &mut r.claims,
            str_at(v, &["persistentVolumeClaim", "claimName"]),
        );
        if v.get("ephemeral").is_some() {
            if let Some(vol) = str_at(v, &["name"]) {
                push(&mut r.claims, Some(&format!("{pod_name}-{vol}")));
            }
        }
    }
    let statuses: Vec<&Value> = pod
        .pointer("/status/resourceClaimStatuses")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    for c in items(spec, "resourceClaims") {
        if let Some(direct) = str_at(c, &["resourceClaimName"]) {
            push(&mut r.resource_claims, Some(direct));
            continue;
        }
        // A claim made from a template is named in the pod's status once
        // the claim exists.
        let entry = str_at(c, &["name"]);
        let generated = statuses
            .iter()
            .find(|s| str_at(s, &["name"]) == entry)
            .and_then(|s| str_at(s, &["resourceClaimName"]));
        push(&mut r.resource_claims, generated);
    }
    push(
        &mut r.resource_claims,
        pod.pointer("/status/extendedResourceClaimStatus/resourceClaimName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty()),
    );
    r
}

/// The claim a PersistentVolume is bound to: (namespace, name).
pub fn pv_claim(pv: &Value) -> Option<(String, String)> {
    let ns = str_at(pv, &["spec", "claimRef", "namespace"])?;
    let name = str_at(pv, &["spec", "claimRef", "name"])?;
    Some((ns.to_string(), name.to_string()))
}

/// The Secrets a PersistentVolume names that the kubelet reads to mount
/// it, as (namespace, name); a reference without a namespace is in the
/// bound claim's. Secrets only the attach/expand controllers use are not
/// the node's business and are left out.
pub fn pv_secrets(pv: &Value, claim_namespace: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(spec) = pv.get("spec") else {
        return out;
    };
    let mut add = |r: Option<&Value>, name_key: &str, ns_key: &str| {
        let Some(r) = r else { return };
        let Some(name) = str_at(r, &[name_key]) else {
            return;
        };
        let ns = str_at(r, &[ns_key]).unwrap_or(claim_namespace);
        let pair = (ns.to_string(), name.to_string());
        if !out.contains(&pair) {
            out.push(pair);
        }
    };
    if let Some(csi) = spec.get("csi") {
        for key in [
            "nodePublishSecretRef",
            "nodeStageSecretRef",
            "nodeExpandSecretRef",
        ] {
            add(csi.get(key), "name", "namespace");
        }
    }
    add(spec.get("azureFile"), "secretName", "secretNamespace");
    for src in SECRET_REF_SOURCES {
        add(
            spec.get(*src).and_then(|s| s.get("secretRef")),
            "name",
            "namespace",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_names_every_source_the_kubelet_reads() {
        let pod = json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "serviceAccountName": "builder",
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{
                    "name": "c",
                    "envFrom": [{"secretRef": {"name": "env-s"}}, {"configMapRef": {"name": "env-c"}}],
                    "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "key-s", "key": "k"}}},
                            {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "key-c", "key": "k"}}}]
                }],
                "volumes": [
                    {"name": "a", "secret": {"secretName": "vol-s"}},
                    {"name": "b", "configMap": {"name": "vol-c"}},
                    {"name": "c", "projected": {"sources": [{"secret": {"name": "proj-s"}}, {"configMap": {"name": "proj-c"}}]}},
                    {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "f", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-s"}}}
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"},
                                   {"name": "tpl", "resourceClaimTemplateName": "t"}]
            },
            "status": {"resourceClaimStatuses": [{"name": "tpl", "resourceClaimName": "web-tpl-x1"}]}
        });
        let r = pod_refs(&pod);
        assert_eq!(r.service_account.as_deref(), Some("builder"));
        assert_eq!(
            r.secrets,
            ["pull", "env-s", "key-s", "vol-s", "proj-s", "csi-s"]
        );
        assert_eq!(r.config_maps, ["env-c", "key-c", "vol-c", "proj-c"]);
        assert_eq!(r.claims, ["data", "web-scratch"]);
        assert_eq!(r.resource_claims, ["gpu-claim", "web-tpl-x1"]);
    }

    #[test]
    fn a_mirror_pod_references_nothing() {
        let pod = json!({
            "metadata": {"name": "m", "annotations": {"kubernetes.io/config.mirror": "x"}},
            "spec": {"serviceAccountName": "sa", "volumes": [{"name": "a", "secret": {"secretName": "s"}}]}
        });
        assert_eq!(pod_refs(&pod), PodRefs::default());
    }

    #[test]
    fn a_mirror_pod_may_reference_no_api_object() {
        let with = |spec: Value| json!({"metadata": {"name": "m"}, "spec": spec});
        let ok = with(json!({"containers": [{"name": "c"}],
                              "volumes": [{"name": "h", "hostPath": {"path": "/x"}},
                                          {"name": "d", "projected": {"sources": [{"downwardAPI": {}}]}}]}));
        assert_eq!(mirror_pod_reference(&ok), None);
        let sa = with(json!({"serviceAccountName": "x"}));
        assert_eq!(
            mirror_pod_reference(&sa),
            Some(Ok("serviceaccounts".into()))
        );
        let env = with(
            json!({"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "x"}}]}]}),
        );
        assert_eq!(mirror_pod_reference(&env), Some(Ok("configmaps".into())));
        let pvc =
            with(json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]}));
        assert_eq!(
            mirror_pod_reference(&pvc),
            Some(Ok("persistentvolumeclaims".into()))
        );
        let token = with(
            json!({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
        );
        assert_eq!(
            mirror_pod_reference(&token),
            Some(Ok("serviceaccounts (via projected volumes)".into()))
        );
        let odd = with(json!({"volumes": [{"name": "q", "mystery": {}}]}));
        assert!(mirror_pod_reference(&odd).unwrap().is_err());
    }

    #[test]
    fn a_pv_names_only_the_secrets_the_kubelet_uses() {
        let pv = json!({"spec": {
            "claimRef": {"namespace": "ns", "name": "data"},
            "csi": {"driver": "d",
                    "nodeStageSecretRef": {"name": "stage", "namespace": "other"},
                    "controllerPublishSecretRef": {"name": "ctrl", "namespace": "other"}},
            "cephfs": {"monitors": ["m"], "secretRef": {"name": "ceph"}}
        }});
        assert_eq!(pv_claim(&pv), Some(("ns".into(), "data".into())));
        assert_eq!(
            pv_secrets(&pv, "ns"),
            [
                ("other".to_string(), "stage".to_string()),
                ("ns".to_string(), "ceph".to_string())
            ]
        );
    }
}
