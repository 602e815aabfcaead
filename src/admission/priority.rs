//! Priority (kube's plugin): a new pod's priority comes from its
//! PriorityClass (or the global default class, or zero), with the class's
//! preemption policy; a pod may not claim another value itself. Only one
//! PriorityClass may be the global default.

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::rc::Rc;

pub const NAME: &str = "Priority";

pub struct Priority {
    classes: Lister,
}

impl Priority {
    pub fn start(init: &PluginInit<'_>) -> Self {
        Self {
            classes: Lister::start(init, "scheduling.k8s.io", "priorityclasses"),
        }
    }

    /// The global default class (the lowest-valued, should there be
    /// several).
    fn default_class(&self) -> Option<Rc<Value>> {
        self.classes
            .list("")
            .into_iter()
            .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0))
    }

    async fn admit_pod(&self, a: &Attributes<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if a.operation == Operation::Update {
            // Kept from the stored pod when the update leaves them out.
            for key in ["priority", "preemptionPolicy"] {
                if spec.get(key).is_none_or(Value::is_null) {
                    if let Some(v) = a
                        .old_object
                        .and_then(|o| o.pointer(&format!("/spec/{key}")))
                    {
                        spec.insert(key.into(), v.clone());
                    }
                }
            }
            return Ok(());
        }
        let named = spec
            .get("priorityClassName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (class_name, value, policy) = if named.is_empty() {
            match self.default_class() {
                Some(c) => (
                    meta::name(&c).to_string(),
                    c.get("value").and_then(Value::as_i64).unwrap_or(0),
                    c.get("preemptionPolicy")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                ),
                None => (String::new(), 0, Some("PreemptLowerPriority".to_string())),
            }
        } else {
            let c = self.classes.get(a.api, "", &named).await?.ok_or_else(|| {
                forbidden(a, &format!("no PriorityClass with name {named} was found"))
            })?;
            (
                named,
                c.get("value").and_then(Value::as_i64).unwrap_or(0),
                c.get("preemptionPolicy")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )
        };
        if !class_name.is_empty() {
            spec.insert("priorityClassName".into(), json!(class_name));
        }
        if let Some(given) = spec.get("priority").and_then(Value::as_i64) {
            if given != value {
                return Err(forbidden(a, &format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name")));
            }
        }
        spec.insert("priority".into(), json!(value));
        if let Some(policy) = policy {
            if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str) {
                if given != policy {
                    return Err(forbidden(a, &format!("the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name")));
                }
            }
            spec.insert("preemptionPolicy".into(), json!(policy));
        }
        Ok(())
    }
}

fn forbidden(a: &Attributes<'_>, why: &str) -> ApiError {
    ApiError::forbidden(&a.resource.group, &a.resource.plural, a.name, why)
}

impl Mutating for Priority {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        matches!(a.operation, Operation::Create | Operation::Update) && a.addresses("", "pods")
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        match object {
            Some(pod) => Outcome::later(self.admit_pod(a, pod)),
            None => Outcome::Ready(Ok(())),
        }
    }
}

impl Validating for Priority {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        matches!(a.operation, Operation::Create | Operation::Update)
            && a.addresses("scheduling.k8s.io", "priorityclasses")
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let global = object
            .and_then(|o| o.get("globalDefault"))
            .and_then(Value::as_bool)
            == Some(true);
        if !global {
            return Outcome::Ready(Ok(()));
        }
        let answer = match self.default_class() {
            Some(d) if a.operation == Operation::Create || meta::name(&d) != a.name => {
                Err(forbidden(
                    a,
                    &format!(
                        "PriorityClass {} is already marked as default. Only one default can exist",
                        meta::name(&d)
                    ),
                ))
            }
            _ => Ok(()),
        };
        Outcome::Ready(answer)
    }
}
