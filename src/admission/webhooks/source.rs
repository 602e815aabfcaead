//! The webhooks of every Mutating/ValidatingWebhookConfiguration, as this
//! executor's informer last saw them: each configuration parsed once per
//! change (selectors, rules, match conditions compiled), kept in kube's
//! order — configurations by name, webhooks as listed.

use crate::admission::matching::{compile_conditions, conditions_read, Conditions, Matcher};
use crate::informer::{Change, Informers};
use kubeshard_cache::Filter;
use kubeshard_core::meta;
use kubeshard_shards::ExecutorContext;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// The variables a webhook's match conditions may read (kube also offers
/// `authorizer`, which kubeshard does not yet).
pub const CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request", "authorizer"];

/// One webhook of a configuration, ready to match and call.
pub struct Hook {
    /// `<configuration>/<index>`: tells webhooks apart for reinvocation.
    pub uid: String,
    pub name: String,
    /// The `clientConfig` as written (validated when the configuration
    /// was).
    pub client: Value,
    /// Rules, selectors and match policy.
    pub matcher: Matcher,
    /// `failurePolicy: Ignore`: a webhook that cannot be called (or whose
    /// conditions cannot be evaluated) is passed over.
    pub ignore_failures: bool,
    /// `sideEffects` None or NoneOnDryRun: dry-run requests may be sent.
    /// `None` when the field is missing.
    pub dry_run_safe: Option<bool>,
    pub timeout: Duration,
    /// The AdmissionReview version to speak (the first known one listed).
    pub review_version: Option<&'static str>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke_if_needed: bool,
    pub conditions: Conditions,
    /// Some match condition reads `authorizer` (only then is it bound).
    pub conditions_read_authorizer: bool,
}

impl Hook {
    fn parse(configuration: &str, index: usize, v: &Value) -> Hook {
        let s = |k: &str| meta::str_at(v, k);
        let conditions =
            compile_conditions(meta::array_at(v, "/matchConditions"), CONDITION_VARIABLES);
        let conditions_read_authorizer = conditions_read(&conditions, "authorizer");
        Hook {
            conditions_read_authorizer,
            uid: format!("{configuration}/{index}"),
            name: s("/name").to_string(),
            client: v.get("clientConfig").cloned().unwrap_or(Value::Null),
            matcher: Matcher::parse(v, "/rules", "/excludedRules"),
            ignore_failures: s("/failurePolicy") == "Ignore",
            dry_run_safe: match s("/sideEffects") {
                "" => None,
                e => Some(e == "None" || e == "NoneOnDryRun"),
            },
            timeout: Duration::from_secs(
                v.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
            review_version: meta::array_at(v, "/admissionReviewVersions")
                .iter()
                .filter_map(Value::as_str)
                .find_map(|r| match r {
                    "v1" => Some("v1"),
                    "v1beta1" => Some("v1beta1"),
                    _ => None,
                }),
            reinvoke_if_needed: s("/reinvocationPolicy") == "IfNeeded",
            conditions,
        }
    }
}

/// Configuration name → its webhooks.
type Configurations = Rc<RefCell<BTreeMap<String, Rc<[Rc<Hook>]>>>>;

/// The webhooks of one kind of configuration on this executor.
#[derive(Clone, Default)]
pub struct Source {
    configurations: Configurations,
}

impl Source {
    /// Starts following the configurations stored at `resource`.
    pub fn start(ctx: &Rc<ExecutorContext>, informers: &Informers, resource: Arc<str>) -> Self {
        let source = Source::default();
        let configurations = source.configurations.clone();
        informers.start(
            ctx,
            resource,
            Filter::default(),
            Box::new(move |change| {
                let mut all = configurations.borrow_mut();
                match change {
                    Change::Reset => all.clear(),
                    Change::Upsert(o) => {
                        let v = o.to_value();
                        let name = meta::name(&v).to_string();
                        let hooks: Vec<Rc<Hook>> = meta::array_at(&v, "/webhooks")
                            .iter()
                            .enumerate()
                            .map(|(i, h)| Rc::new(Hook::parse(&name, i, h)))
                            .collect();
                        all.insert(name, hooks.into());
                    }
                    Change::Delete(o) => {
                        all.remove(&*o.name);
                    }
                }
            }),
        );
        source
    }

    /// Every webhook, in kube's order (none: a quick answer for the
    /// common cluster without webhooks).
    pub fn webhooks(&self) -> Vec<Rc<Hook>> {
        self.configurations
            .borrow()
            .values()
            .flat_map(|hooks| hooks.iter().cloned())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.configurations.borrow().values().all(|h| h.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn webhooks_parse_with_kubes_defaults() {
        let h = Hook::parse(
            "cfg",
            1,
            &json!({
                "name": "a.example.com",
                "clientConfig": {"url": "https://127.0.0.1:1/x"},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "sideEffects": "NoneOnDryRun",
                "admissionReviewVersions": ["v2", "v1beta1", "v1"],
                "matchConditions": [{"name": "c", "expression": "object != null"}],
            }),
        );
        assert_eq!(h.uid, "cfg/1");
        assert!(h.client.is_object());
        assert!(!h.ignore_failures);
        assert!(h.matcher.equivalent);
        assert_eq!(h.dry_run_safe, Some(true));
        assert_eq!(h.timeout, Duration::from_secs(10));
        assert_eq!(h.review_version, Some("v1beta1"));
        assert_eq!(h.conditions.as_ref().unwrap().len(), 1);
        assert!(h.matcher.namespace_selector.as_ref().unwrap().is_empty());
        let bad = Hook::parse(
            "cfg",
            0,
            &json!({"matchConditions": [{"name": "c", "expression": "self == 1"}]}),
        );
        assert!(bad.client.is_null());
        assert!(bad.conditions.is_err());
        assert_eq!(bad.dry_run_safe, None);
        assert_eq!(bad.review_version, None);
    }
}
