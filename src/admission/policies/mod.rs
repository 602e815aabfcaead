//! ValidatingAdmissionPolicy (kube's plugin): CEL policies bound to the
//! writes they cover. Each binding that matches evaluates its policy's
//! validations — with the binding's parameters (`paramKind`/`paramRef`),
//! the request, the namespace, and the policy's variables — and what
//! fails is refused (Deny), warned about (Warn) or recorded in the audit
//! event (Audit), as the binding's `validationActions` say. A policy that
//! cannot be evaluated meets its `failurePolicy`.

pub mod mutating;
mod params;
mod source;
pub mod type_check;

use super::authorizer;
use super::matching;
use super::namespace_labels::NamespaceLabels;
use super::plugins::PluginInit;
use super::webhooks::review;
use super::{Attributes, Outcome, Validating};
use crate::security::Security;
use kubeshard_core::crd::expression::Variables;
use kubeshard_core::status::{ApiError, StatusCause};
use serde_json::{json, Value};
use source::{Binding, Policy, Source};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

pub const NAME: &str = "ValidatingAdmissionPolicy";

/// kube's runtime cost budget for one policy evaluation.
pub(super) const BUDGET: u64 = 10_000_000;

/// Longest audit annotation value kept.
const MAX_ANNOTATION: usize = 10 * 1024;

pub struct Policies {
    source: Source<Policy>,
    namespaces: NamespaceLabels,
    /// Where namespaces are stored (`namespaceObject`).
    namespace_key: Arc<str>,
    /// Who answers `authorizer` checks.
    security: Rc<Security>,
}

/// The first refusal, as kube reports it.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

impl Policies {
    pub fn start(init: &PluginInit<'_>, namespaces: NamespaceLabels) -> Self {
        Self {
            source: Source::start(
                init,
                (
                    "validatingadmissionpolicies",
                    "validatingadmissionpolicybindings",
                ),
                Policy::parse,
            ),
            namespaces,
            namespace_key: init.keys.builtin("", "namespaces"),
            security: init.security.clone(),
        }
    }

    async fn validate_write(
        &self,
        a: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let mut denial: Option<Denial> = None;
        let mut deny =
            |policy: &Policy, binding: Option<&Binding>, message: String, reason: &str| {
                denial.get_or_insert_with(|| Denial {
                    policy: policy.name.clone(),
                    binding: binding.map(|b| b.name.clone()),
                    message,
                    reason: reason.to_string(),
                });
            };
        let mut namespace_object: Option<Option<Value>> = None;
        for (policy, bindings) in self.source.bound() {
            let invocation =
                match matching::should_call(&policy.matcher, a, object, &self.namespaces).await {
                    Ok(Some(i)) => i,
                    Ok(None) => continue,
                    Err(e) => {
                        if !policy.ignore_failures {
                            deny(
                                &policy,
                                None,
                                format!("failed to configure policy: {}", e.message),
                                "Invalid",
                            );
                        }
                        continue;
                    }
                };
            let compiled = match &policy.compiled {
                Ok(c) => c,
                Err(e) => {
                    if !policy.ignore_failures {
                        deny(
                            &policy,
                            None,
                            format!("failed to configure policy: {e}"),
                            "Invalid",
                        );
                    }
                    continue;
                }
            };
            let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for binding in bindings {
                if let Some(m) = &binding.matcher {
                    match matching::should_call(m, a, object, &self.namespaces).await {
                        Ok(Some(_)) => {}
                        Ok(None) => continue,
                        Err(e) => {
                            if !policy.ignore_failures {
                                deny(
                                    &policy,
                                    Some(&binding),
                                    format!("failed to configure binding: {}", e.message),
                                    "Invalid",
                                );
                            }
                            continue;
                        }
                    }
                }
                let params = match params::params(a, policy.param_kind.as_ref(), &binding).await {
                    Ok(p) => p,
                    Err(e) => {
                        if !policy.ignore_failures {
                            deny(
                                &policy,
                                Some(&binding),
                                format!("failed to configure binding: {e}"),
                                "Invalid",
                            );
                        }
                        continue;
                    }
                };
                if compiled.reads_namespace && namespace_object.is_none() {
                    namespace_object =
                        Some(params::namespace_object(a, &self.namespace_key).await?);
                }
                let request = compiled
                    .reads_request
                    .then(|| review::request(a, invocation.resource(a), object));
                for param in &params {
                    let vars = Variables::default()
                        .bind_read("object", object, &compiled.object)
                        .bind_read("oldObject", a.old_object, &compiled.old_object)
                        .bind("request", request.as_ref())
                        .bind_read("params", param.as_ref(), &compiled.params)
                        .bind(
                            "namespaceObject",
                            namespace_object.as_ref().and_then(Option::as_ref),
                        );
                    let vars = authorizer::bind(a, compiled.reads_authorizer, vars);
                    authorizer::scope(&self.security, a, compiled.reads_authorizer, || {
                        match matching::conditions_hold(
                            &policy.conditions,
                            policy.ignore_failures,
                            a,
                            &vars,
                        ) {
                            Ok(true) => {}
                            Ok(false) => return,
                            Err(e) => {
                                deny(&policy, Some(&binding), e.message, "Invalid");
                                return;
                            }
                        }
                        let mut budget = BUDGET;
                        for (index, v) in compiled.validations.iter().enumerate() {
                            let failure = match v.expression.evaluate_bool(&vars, &mut budget) {
                                Ok(true) => continue,
                                Ok(false) => (message(v, &vars, &mut budget), v.reason.as_str()),
                                Err(_) if policy.ignore_failures => continue,
                                Err(e) => (e, "Invalid"),
                            };
                            self.act(a, &policy, &binding, index, failure, &mut deny);
                        }
                        for (key, e) in &compiled.audit_annotations {
                            match e.evaluate_text(&vars, &mut budget) {
                            Ok(Some(s)) => {
                                let mut value = s.trim().to_string();
                                value.truncate(MAX_ANNOTATION);
                                if !value.is_empty() {
                                    let seen = annotations.entry(key.clone()).or_default();
                                    if !seen.contains(&value) {
                                        seen.push(value);
                                    }
                                }
                            }
                            Ok(None) => {}
                            Err(err) if !policy.ignore_failures => deny(
                                &policy,
                                Some(&binding),
                                format!("valueExpression '{}' failed: {err}. Return type must be either string or null.", e.source()),
                                "Invalid",
                            ),
                            Err(_) => {}
                        }
                        }
                    });
                }
            }
            for (key, values) in annotations {
                a.annotate(format!("{}/{key}", policy.name), values.join(", "));
            }
        }
        match denial {
            None => Ok(()),
            Some(d) => Err(refusal(a, d)),
        }
    }

    /// A failed validation, handled as the binding's actions say.
    fn act(
        &self,
        a: &Attributes<'_>,
        policy: &Policy,
        binding: &Binding,
        index: usize,
        (message, reason): (String, &str),
        deny: &mut impl FnMut(&Policy, Option<&Binding>, String, &str),
    ) {
        for action in &binding.actions {
            match action.as_str() {
                "Deny" => deny(policy, Some(binding), message.clone(), reason),
                "Warn" => a.warn(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                    policy.name, binding.name
                )),
                "Audit" => a.annotate(
                    "validation.policy.admission.k8s.io/validation_failure".into(),
                    json!([{"message": message, "policy": policy.name, "binding": binding.name,
                        "expressionIndex": index, "validationActions": binding.actions}])
                    .to_string(),
                ),
                _ => {}
            }
        }
    }
}

/// A failed validation's message: its messageExpression's, its
/// message, or kube's default.
fn message(v: &source::Validation, vars: &Variables<'_>, budget: &mut u64) -> String {
    if let Some(e) = &v.message_expression {
        if let Ok(Some(s)) = e.evaluate_text(vars, budget) {
            let s = s.trim();
            if !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024 {
                return s.to_string();
            }
        }
    }
    match v.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed expression: {}", v.expression.source().trim()),
    }
}

/// kube's refusal: Forbidden's message, with the status reason (and its
/// code) the validation asked for, the message again as a cause.
fn refusal(a: &Attributes<'_>, d: Denial) -> ApiError {
    let text = match &d.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
            d.policy, d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            d.policy, d.message
        ),
    };
    let mut e = ApiError::forbidden(&a.resource.group, &a.resource.plural, a.name, &text);
    e.code = match d.reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    e.reason = d.reason;
    if let Some(details) = e.details.as_mut() {
        details.causes.push(StatusCause {
            message: text,
            ..StatusCause::default()
        });
    }
    e
}

impl Validating for Policies {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        !super::webhooks::exempt(a) && !self.source.is_empty()
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        Outcome::later(self.validate_write(a, object))
    }
}
