//! PodNodeSelector and PodTolerationRestriction (kube's optional plugins):
//! a namespace's `scheduler.alpha.kubernetes.io/` annotations (or the
//! plugins' configuration) give its pods a node selector they may not
//! contradict, default tolerations, and a whitelist of tolerations.

use super::namespace_labels::{NamespaceLabels, SCHEDULING_PREFIX};
use super::{Attributes, Mutating, Operation, Outcome, Validating};
use kubeshard_core::status::ApiError;
use kubeshard_core::tolerations;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub const NODE_SELECTOR: &str = "PodNodeSelector";
pub const TOLERATIONS: &str = "PodTolerationRestriction";

/// `k1=v1,k2=v2` as labels (kube's ConvertSelectorToLabelsMap).
fn selector_map(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once("==")
            .or_else(|| part.split_once('='))
            .ok_or_else(|| format!("invalid selector: {s:?}"))?;
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

fn annotation<'m>(scheduling: &'m Map<String, Value>, key: &str) -> Option<&'m str> {
    scheduling
        .get(&format!("{SCHEDULING_PREFIX}{key}"))
        .and_then(Value::as_str)
}

/// PodNodeSelector's configuration: `clusterDefaultNodeSelector` and a
/// whitelist per namespace.
pub struct NodeSelector {
    namespaces: NamespaceLabels,
    cluster: BTreeMap<String, String>,
}

impl NodeSelector {
    pub fn parse_config(v: Option<&Value>) -> Result<BTreeMap<String, String>, String> {
        let Some(m) = v
            .and_then(|v| v.get("podNodeSelectorPluginConfig"))
            .and_then(Value::as_object)
        else {
            return Ok(BTreeMap::new());
        };
        m.iter()
            .map(|(k, v)| {
                let s = v.as_str().ok_or_else(|| format!("{k}: must be a string"))?;
                selector_map(s)?;
                Ok((k.clone(), s.to_string()))
            })
            .collect()
    }

    pub fn start(config: Option<&Value>, namespaces: NamespaceLabels) -> Self {
        Self {
            namespaces,
            cluster: Self::parse_config(config).expect("checked when the configuration was read"),
        }
    }

    async fn selectors(&self, a: &Attributes<'_>) -> Result<BTreeMap<String, String>, ApiError> {
        let meta = self.namespaces.meta(a.api, a.namespace).await?;
        let text = annotation(&meta.scheduling, "node-selector")
            .map(str::to_string)
            .or_else(|| self.cluster.get("clusterDefaultNodeSelector").cloned())
            .unwrap_or_default();
        selector_map(&text).map_err(|e| ApiError::internal(&e))
    }

    async fn admit_pod(
        &self,
        a: &Attributes<'_>,
        pod: &mut Value,
        mutate: bool,
    ) -> Result<(), ApiError> {
        let namespace = self.selectors(a).await?;
        let refuse = |why: &str| ApiError::forbidden("", "pods", a.name, why);
        let pod_selector: BTreeMap<String, String> = pod
            .pointer("/spec/nodeSelector")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        if namespace
            .iter()
            .any(|(k, v)| pod_selector.get(k).is_some_and(|p| p != v))
        {
            return Err(refuse(
                "pod node label selector conflicts with its namespace node label selector",
            ));
        }
        let mut merged = namespace.clone();
        merged.extend(pod_selector);
        let whitelist = match self.cluster.get(a.namespace) {
            Some(w) => selector_map(w).map_err(|e| ApiError::internal(&e))?,
            None => BTreeMap::new(),
        };
        if !whitelist.is_empty() && merged.iter().any(|(k, v)| whitelist.get(k) != Some(v)) {
            return Err(refuse(
                "pod node label selector labels conflict with its namespace whitelist",
            ));
        }
        if mutate && !merged.is_empty() {
            if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("nodeSelector".into(), json!(merged));
            }
        }
        Ok(())
    }
}

fn creates_pod(a: &Attributes<'_>) -> bool {
    a.creates("", "pods")
}

impl Mutating for NodeSelector {
    fn name(&self) -> &'static str {
        NODE_SELECTOR
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        creates_pod(a)
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        match object {
            Some(pod) => Outcome::later(self.admit_pod(a, pod, true)),
            None => Outcome::Ready(Ok(())),
        }
    }
}

impl Validating for NodeSelector {
    fn name(&self) -> &'static str {
        NODE_SELECTOR
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        creates_pod(a)
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        match object {
            Some(pod) => Outcome::later(async move {
                let mut copy = pod.clone();
                self.admit_pod(a, &mut copy, false).await
            }),
            None => Outcome::Ready(Ok(())),
        }
    }
}

/// PodTolerationRestriction's configuration (`default` and `whitelist`
/// for namespaces without annotations).
pub struct Tolerations {
    namespaces: NamespaceLabels,
    default: Vec<Value>,
    whitelist: Vec<Value>,
}

fn list(v: Option<&Value>, key: &str) -> Vec<Value> {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A namespace annotation holding a JSON list of tolerations.
fn annotated(meta: &Map<String, Value>, key: &str) -> Result<Option<Vec<Value>>, ApiError> {
    match annotation(meta, key) {
        None => Ok(None),
        Some(text) => serde_json::from_str::<Vec<Value>>(text)
            .map(Some)
            .map_err(|e| ApiError::internal(&format!("{SCHEDULING_PREFIX}{key}: {e}"))),
    }
}

impl Tolerations {
    pub fn start(config: Option<&Value>, namespaces: NamespaceLabels) -> Self {
        Self {
            namespaces,
            default: list(config, "default"),
            whitelist: list(config, "whitelist"),
        }
    }

    async fn check(
        &self,
        a: &Attributes<'_>,
        pod: &mut Value,
        mutate: bool,
    ) -> Result<(), ApiError> {
        let meta = self.namespaces.meta(a.api, a.namespace).await?;
        let existing = pod
            .pointer("/spec/tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut extra = Vec::new();
        if mutate && a.operation == Operation::Create {
            extra = annotated(&meta.scheduling, "defaultTolerations")?
                .unwrap_or_else(|| self.default.clone());
        }
        if mutate && kubeshard_core::registry::qos_class(pod) != "BestEffort" {
            extra.push(json!({"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}));
        }
        let all = if extra.is_empty() {
            existing
        } else {
            let merged = tolerations::merge(&existing, &extra);
            if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("tolerations".into(), Value::Array(merged.clone()));
            }
            merged
        };
        if all.is_empty() {
            return Ok(());
        }
        let (whitelist, scope) = match annotated(&meta.scheduling, "tolerationsWhitelist")? {
            Some(w) => (w, "namespace"),
            None => (self.whitelist.clone(), "cluster"),
        };
        if !tolerations::allowed_by(&all, &whitelist) {
            // kube answers with a plain error: 500 with no reason.
            return Err(ApiError::new(
                500,
                "",
                format!("pod tolerations (possibly merged with namespace default tolerations) conflict with its {scope} whitelist"),
            ));
        }
        Ok(())
    }
}

fn writes_pod(a: &Attributes<'_>) -> bool {
    a.addresses("", "pods") && matches!(a.operation, Operation::Create | Operation::Update)
}

impl Mutating for Tolerations {
    fn name(&self) -> &'static str {
        TOLERATIONS
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        writes_pod(a)
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        match object {
            Some(pod) => Outcome::later(self.check(a, pod, true)),
            None => Outcome::Ready(Ok(())),
        }
    }
}

impl Validating for Tolerations {
    fn name(&self) -> &'static str {
        TOLERATIONS
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        writes_pod(a)
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        match object {
            Some(pod) => Outcome::later(async move {
                let mut copy = pod.clone();
                self.check(a, &mut copy, false).await
            }),
            None => Outcome::Ready(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_as_kube() {
        assert_eq!(
            selector_map("env=prod, zone==a").unwrap(),
            BTreeMap::from([("env".into(), "prod".into()), ("zone".into(), "a".into())])
        );
        assert!(selector_map("env").is_err());
        let cfg = json!({"podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "env=dev", "team-a": "env=prod"}});
        assert_eq!(NodeSelector::parse_config(Some(&cfg)).unwrap().len(), 2);
    }
}
