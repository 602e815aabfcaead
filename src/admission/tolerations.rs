//! DefaultTolerationSeconds and TaintNodesByCondition (kube's plugins of
//! those names): pods tolerate a not-ready or unreachable node for five
//! minutes unless they say otherwise, and a new node starts tainted
//! not-ready until its controller sees it Ready.

use super::{Attributes, Mutating, Operation, Outcome};
use kubeshard_core::meta;
use serde_json::{json, Value};

pub const DEFAULT_TOLERATION_SECONDS: &str = "DefaultTolerationSeconds";
pub const TAINT_NODES_BY_CONDITION: &str = "TaintNodesByCondition";

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const SECONDS: u64 = 300;

pub struct DefaultTolerationSeconds;

impl Mutating for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        DEFAULT_TOLERATION_SECONDS
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        matches!(a.operation, Operation::Create | Operation::Update) && a.addresses("", "pods")
    }

    fn admit<'a>(&'a self, _a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        if let Some(pod) = object {
            add_default_tolerations(pod);
        }
        Outcome::Ready(Ok(()))
    }
}

/// Adds the two NoExecute tolerations the pod lacks (a toleration with no
/// key, or no effect, already covers them).
fn add_default_tolerations(pod: &mut Value) {
    let existing = meta::array_at(pod, "/spec/tolerations");
    let tolerates = |key: &str| {
        existing.iter().any(|t| {
            let k = meta::str_at(t, "/key");
            let effect = meta::str_at(t, "/effect");
            (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<Value> = [NOT_READY, UNREACHABLE]
        .into_iter()
        .filter(|k| !tolerates(k))
        .map(|k| {
            json!({"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": SECONDS})
        })
        .collect();
    if missing.is_empty() {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let list = spec.entry("tolerations").or_insert_with(|| json!([]));
    if list.is_null() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        list.extend(missing);
    }
}

pub struct TaintNodesByCondition;

impl Mutating for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        TAINT_NODES_BY_CONDITION
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.creates("", "nodes")
    }

    fn admit<'a>(&'a self, _a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        if let Some(node) = object.and_then(Value::as_object_mut) {
            let spec = node.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                let taints = spec.entry("taints").or_insert_with(|| json!([]));
                if taints.is_null() {
                    *taints = json!([]);
                }
                if let Some(taints) = taints.as_array_mut() {
                    let present = taints.iter().any(|t| {
                        meta::str_at(t, "/key") == NOT_READY
                            && meta::str_at(t, "/effect") == "NoSchedule"
                    });
                    if !present {
                        taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
                    }
                }
            }
        }
        Outcome::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tolerations_are_added_unless_covered() {
        let mut pod =
            json!({"spec": {"tolerations": [{"key": UNREACHABLE, "operator": "Exists"}]}});
        add_default_tolerations(&mut pod);
        let t = pod["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1]["key"], NOT_READY);
        assert_eq!(t[1]["tolerationSeconds"], 300);
        let mut everything = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        add_default_tolerations(&mut everything);
        assert_eq!(
            everything["spec"]["tolerations"].as_array().unwrap().len(),
            1
        );
    }
}
