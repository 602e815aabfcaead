//! RuntimeClass (kube's plugin): a new pod that names a RuntimeClass must
//! find it, takes its pod overhead (and may not claim another), and gets
//! its scheduling constraints (node selector merged without conflicts,
//! tolerations added).

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Outcome};
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};

pub const NAME: &str = "RuntimeClass";

pub struct RuntimeClass {
    classes: Lister,
}

fn forbidden(a: &Attributes<'_>, why: &str) -> ApiError {
    ApiError::forbidden("", "pods", a.name, why)
}

impl RuntimeClass {
    pub fn start(init: &PluginInit<'_>) -> Self {
        Self {
            classes: Lister::start(init, "node.k8s.io", "runtimeclasses"),
        }
    }

    async fn admit_pod(&self, a: &Attributes<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let named = meta::str_at(pod, "/spec/runtimeClassName").to_string();
        let class = if named.is_empty() {
            None
        } else {
            Some(self.classes.get(a.api, "", &named).await?.ok_or_else(|| {
                forbidden(
                    a,
                    &format!("pod rejected: RuntimeClass {named:?} not found"),
                )
            })?)
        };
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        let overhead = class
            .as_ref()
            .and_then(|c| c.pointer("/overhead/podFixed"))
            .filter(|o| !o.is_null());
        let given = spec.get("overhead").filter(|o| !o.is_null());
        match (overhead, given) {
            (Some(want), Some(given)) if !same_quantities(want, given) => {
                return Err(forbidden(
                    a,
                    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
                ))
            }
            (Some(want), _) => {
                spec.insert("overhead".into(), want.clone());
            }
            (None, Some(_)) => {
                return Err(forbidden(
                    a,
                    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
                ))
            }
            (None, None) => {}
        }
        let Some(scheduling) = class.as_ref().and_then(|c| c.get("scheduling")) else {
            return Ok(());
        };
        if let Some(selector) = scheduling.get("nodeSelector").and_then(Value::as_object) {
            let pod_selector = spec.entry("nodeSelector").or_insert_with(|| json!({}));
            if pod_selector.is_null() {
                *pod_selector = json!({});
            }
            if let Some(pod_selector) = pod_selector.as_object_mut() {
                for (k, v) in selector {
                    match pod_selector.get(k) {
                        Some(existing) if existing != v => {
                            return Err(forbidden(
                                a,
                                &format!(
                                    "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                                    v.as_str().unwrap_or(""),
                                    existing.as_str().unwrap_or("")
                                ),
                            ))
                        }
                        _ => {
                            pod_selector.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
        }
        if let Some(extra) = scheduling.get("tolerations").and_then(Value::as_array) {
            let existing = spec
                .get("tolerations")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            let merged = kubeshard_core::tolerations::merge(existing, extra);
            spec.insert("tolerations".into(), Value::Array(merged));
        }
        Ok(())
    }
}

/// Two resource lists with the same quantities (however written).
fn same_quantities(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k).is_some_and(|w| {
                kubeshard_core::quantity::nanos(v) == kubeshard_core::quantity::nanos(w)
            })
        })
}

impl Mutating for RuntimeClass {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.creates("", "pods")
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        match object {
            Some(pod) => Outcome::later(self.admit_pod(a, pod)),
            None => Outcome::Ready(Ok(())),
        }
    }
}
