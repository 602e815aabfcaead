//! Which service-account tokens a node may mint: only bound to a pod
//! running on it, and only for an audience that pod asks for (a projected
//! token volume, or a CSI driver it mounts that wants tokens), unless the
//! node was granted the audience explicitly.

use super::{Check, NodeRestriction};
use crate::security::authz;
use kubeshard_core::authn::Attributes as AuthzAttributes;
use kubeshard_core::meta::{self, str_at};
use kubeshard_core::status::ApiError;
use serde_json::Value;

/// The verb a node needs for an audience its pods do not ask for.
const AUDIENCE_VERB: &str = "request-serviceaccounts-token-audience";

impl NodeRestriction {
    pub(super) async fn token(&self, c: &Check<'_>) -> Result<(), ApiError> {
        let request = c.new_object();
        let bound = request
            .pointer("/spec/boundObjectRef")
            .unwrap_or(&Value::Null);
        if bound["apiVersion"] != "v1"
            || bound["kind"] != "Pod"
            || str_at(bound, "/name").is_empty()
        {
            return c.refuse("node requested token not bound to a pod");
        }
        let uid = str_at(bound, "/uid");
        if uid.is_empty() {
            return c.refuse("node requested token with a pod binding without a uid");
        }
        let pod_name = str_at(bound, "/name");
        let pod = self
            .fetch("", "pods", c.a.namespace, pod_name)
            .await?
            .ok_or_else(|| ApiError::not_found("", "pod", pod_name))?;
        if meta::meta_str(&pod, "uid").unwrap_or("") != uid {
            return c.refuse(format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ));
        }
        if str_at(&pod, "/spec/nodeName") != c.node {
            return c.refuse("node requested token bound to a pod scheduled on a different node");
        }
        let audiences: Vec<&str> = request
            .pointer("/spec/audiences")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if audiences.len() > 1 {
            return c.refuse("node may only request 0 or 1 audiences");
        }
        let audience = audiences.first().copied().unwrap_or("");
        let mut errors = Vec::new();
        if self.pod_wants(&pod, audience, &mut errors).await? {
            return Ok(());
        }
        if !errors.is_empty() {
            let joined = if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            };
            return c.refuse(format!("error validating audience {audience:?}: {joined}"));
        }
        let attrs = AuthzAttributes {
            verb: AUDIENCE_VERB.into(),
            resource_request: true,
            namespace: c.a.namespace.into(),
            api_version: "v1".into(),
            resource: audience.into(),
            name: c.a.name.into(),
            ..Default::default()
        };
        if authz::decide(&self.security, c.a.user, &attrs).allowed() {
            return Ok(());
        }
        c.refuse(format!(
            "audience {audience:?} not found in pod spec volume, system:node:{} is not authorized to request tokens for this audience",
            c.node
        ))
    }

    /// Whether one of the pod's volumes asks for tokens of `audience`;
    /// lookups that fail are collected in `errors`.
    async fn pod_wants(
        &self,
        pod: &Value,
        audience: &str,
        errors: &mut Vec<String>,
    ) -> Result<bool, ApiError> {
        let ns = meta::namespace(pod);
        let volumes = pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for v in volumes {
            let projected = v
                .pointer("/projected/sources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            for s in projected {
                if let Some(t) = s.get("serviceAccountToken") {
                    if str_at(t, "/audience") == audience {
                        return Ok(true);
                    }
                }
            }
            let driver = match self.csi_driver_of(pod, ns, v).await? {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            match self
                .fetch("storage.k8s.io", "csidrivers", "", &driver)
                .await?
            {
                None => errors.push(format!("csidriver.storage.k8s.io {driver:?} not found")),
                Some(d) => {
                    let wants = d
                        .pointer("/spec/tokenRequests")
                        .and_then(Value::as_array)
                        .is_some_and(|t| t.iter().any(|r| str_at(r, "/audience") == audience));
                    if wants {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// The CSI driver a volume mounts with: inline, or through its claim's
    /// bound PersistentVolume. Err(why) when a lookup on the way fails.
    async fn csi_driver_of(
        &self,
        pod: &Value,
        ns: &str,
        volume: &Value,
    ) -> Result<Result<Option<String>, String>, ApiError> {
        if let Some(d) = volume.pointer("/csi/driver").and_then(Value::as_str) {
            return Ok(Ok(Some(d.to_string())));
        }
        let claim = if let Some(c) = volume.pointer("/persistentVolumeClaim/claimName") {
            c.as_str().unwrap_or("").to_string()
        } else if volume.get("ephemeral").is_some() {
            format!("{}-{}", meta::name(pod), str_at(volume, "/name"))
        } else {
            return Ok(Ok(None));
        };
        let Some(pvc) = self.fetch("", "persistentvolumeclaims", ns, &claim).await? else {
            return Ok(Err(format!("persistentvolumeclaim {claim:?} not found")));
        };
        let pv_name = str_at(&pvc, "/spec/volumeName");
        if pv_name.is_empty() {
            return Ok(Ok(None));
        }
        let Some(pv) = self.fetch("", "persistentvolumes", "", pv_name).await? else {
            return Ok(Err(format!("persistentvolume {pv_name:?} not found")));
        };
        Ok(Ok(pv
            .pointer("/spec/csi/driver")
            .and_then(Value::as_str)
            .map(str::to_string)))
    }
}
