//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook: the writes a
//! Mutating/ValidatingWebhookConfiguration covers are sent to its
//! webhooks as AdmissionReviews, over HTTPS on the executor (connections
//! kept, through the server's [`super::Host`]). Mutating webhooks run one after another
//! and may patch the object (JSONPatch); validating webhooks run all at
//! once and may only refuse. A webhook that cannot be called fails the
//! write unless its `failurePolicy` is Ignore; dry-run writes only reach
//! webhooks without side effects. Every call is counted in kube's metrics
//! ([`metrics`]), and a webhook that keeps failing is not called for a
//! while ([`circuit`]).

mod circuit;
pub mod metrics;
pub(super) mod review;
mod source;

use super::authorizer;
use super::matching::{self, Invocation};
use super::namespace_labels::NamespaceLabels;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Outcome, Validating};
use crate::security::Security;
use circuit::{Circuits, Transition};
use kubeshard_core::crd::expression::Variables;
use kubeshard_core::status::{ApiError, StatusDetails};
use metrics::{Called, WebhookMetrics};
use serde_json::{json, Value};
use source::{Hook, Source};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

pub const MUTATING: &str = "MutatingAdmissionWebhook";
pub const VALIDATING: &str = "ValidatingAdmissionWebhook";

/// The admission configuration kinds webhooks never see (so a broken
/// webhook can always be removed).
pub(super) fn exempt(a: &Attributes<'_>) -> bool {
    a.resource.group == "admissionregistration.k8s.io"
        && matches!(
            a.resource.plural.as_str(),
            "mutatingwebhookconfigurations"
                | "validatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// Why a call did not admit the write.
enum CallError {
    /// The webhook could not be called or answered nonsense: subject to
    /// the failure policy.
    Calling(String),
    /// A refusal, answered as is.
    Refused(ApiError),
}

pub struct MutatingWebhooks {
    source: Source,
    namespaces: NamespaceLabels,
    health: Health,
    /// Who answers match conditions' `authorizer` checks.
    security: Rc<Security>,
}

pub struct ValidatingWebhooks {
    source: Source,
    namespaces: NamespaceLabels,
    health: Health,
    security: Rc<Security>,
}

/// How this executor's calls to the plugin's webhooks go: the metrics
/// (shared by all executors) and the circuits (this executor's).
struct Health {
    metrics: Arc<WebhookMetrics>,
    circuits: RefCell<Circuits>,
    /// kube's `type` label.
    kind: &'static str,
}

impl Health {
    fn new(metrics: Arc<WebhookMetrics>, mutating: bool) -> Self {
        Self {
            metrics,
            circuits: RefCell::default(),
            kind: metrics::type_label(mutating),
        }
    }

    /// Whether the webhook may be called now (its circuit closed, or
    /// this is the probe).
    fn may_call(&self, hook: &Hook) -> Result<(), CallError> {
        let now = Instant::now();
        self.circuits
            .borrow_mut()
            .before(&hook.uid, now, hook.timeout)
            .map_err(|e| {
                self.metrics.short_circuited(&hook.name, self.kind);
                CallError::Calling(e)
            })
    }

    /// Records a call that went out at `started`, and what it came to.
    fn called(
        &self,
        a: &Attributes<'_>,
        hook: &Hook,
        started: Instant,
        result: &Result<review::Answer, String>,
    ) {
        let now = Instant::now();
        let outcome = result.as_ref().map(drop).map_err(String::as_str);
        match self.circuits.borrow_mut().after(&hook.uid, now, outcome) {
            Transition::Opened => self.metrics.circuit(&hook.name, self.kind, true),
            Transition::Closed => self.metrics.circuit(&hook.name, self.kind, false),
            Transition::None => {}
        }
        let called = match result {
            Ok(answer) if answer.allowed => Called::Allowed,
            Ok(answer) => Called::Denied(refusal_code(answer.result.as_ref())),
            Err(_) => Called::Failed,
        };
        let secs = (now - started).as_secs_f64();
        let operation = a.operation.as_str();
        self.metrics
            .call(&hook.name, self.kind, operation, called, secs);
    }
}

impl MutatingWebhooks {
    pub fn start(
        init: &PluginInit<'_>,
        namespaces: NamespaceLabels,
        metrics: Arc<WebhookMetrics>,
    ) -> Self {
        let resource = init.keys.builtin(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        );
        Self {
            source: Source::start(init.ctx, init.informers, resource),
            namespaces,
            health: Health::new(metrics, true),
            security: init.security.clone(),
        }
    }
}

impl ValidatingWebhooks {
    pub fn start(
        init: &PluginInit<'_>,
        namespaces: NamespaceLabels,
        metrics: Arc<WebhookMetrics>,
    ) -> Self {
        let resource = init.keys.builtin(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
        );
        Self {
            source: Source::start(init.ctx, init.informers, resource),
            namespaces,
            health: Health::new(metrics, false),
            security: init.security.clone(),
        }
    }
}

impl Mutating for MutatingWebhooks {
    fn name(&self) -> &'static str {
        MUTATING
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        !exempt(a) && !self.source.is_empty()
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        Outcome::later(self.dispatch(a, object))
    }
}

impl Validating for ValidatingWebhooks {
    fn name(&self) -> &'static str {
        VALIDATING
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        !exempt(a) && !self.source.is_empty()
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        Outcome::later(self.dispatch(a, object))
    }
}

/// A matched webhook, with the request it is sent.
struct Call {
    hook: Rc<Hook>,
    index: usize,
    invocation: Invocation,
    request: Value,
}

/// The webhooks among `hooks` that `a` reaches, in order, each with its
/// AdmissionReview request.
async fn matched(
    hooks: Vec<Rc<Hook>>,
    a: &Attributes<'_>,
    object: Option<&Value>,
    namespaces: &NamespaceLabels,
    security: &Rc<Security>,
) -> Result<Vec<Call>, ApiError> {
    let mut calls = Vec::new();
    for (index, hook) in hooks.into_iter().enumerate() {
        if let Some(call) = match_one(hook, index, a, object, namespaces, security).await? {
            calls.push(call);
        }
    }
    Ok(calls)
}

async fn match_one(
    hook: Rc<Hook>,
    index: usize,
    a: &Attributes<'_>,
    object: Option<&Value>,
    namespaces: &NamespaceLabels,
    security: &Rc<Security>,
) -> Result<Option<Call>, ApiError> {
    let Some(invocation) = matching::should_call(&hook.matcher, a, object, namespaces).await?
    else {
        return Ok(None);
    };
    let request = review::request(a, invocation.resource(a), object);
    let holds = {
        let reads = hook.conditions_read_authorizer;
        let vars = Variables::default()
            .bind("object", object)
            .bind("oldObject", a.old_object)
            .bind("request", Some(&request));
        let vars = authorizer::bind(a, reads, vars);
        authorizer::scope(security, a, reads, || {
            matching::conditions_hold(&hook.conditions, hook.ignore_failures, a, &vars)
        })?
    };
    if !holds {
        return Ok(None);
    }
    Ok(Some(Call {
        hook,
        index,
        invocation,
        request,
    }))
}

impl MutatingWebhooks {
    async fn dispatch(
        &self,
        a: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<(), ApiError> {
        let reinvoking = a.reinvocation.is_reinvoke();
        if reinvoking {
            // Another plugin changed the object since the webhooks saw
            // it: every IfNeeded webhook sees it again.
            a.reinvocation
                .webhooks
                .borrow_mut()
                .start_reinvoking(object.as_deref());
        }
        let hooks = self.source.webhooks();
        let mut defaulted = false;
        for (index, hook) in hooks.into_iter().enumerate() {
            let current = object.as_deref();
            let Some(call) =
                match_one(hook, index, a, current, &self.namespaces, &self.security).await?
            else {
                continue;
            };
            if reinvoking
                && !a
                    .reinvocation
                    .webhooks
                    .borrow()
                    .reinvoke
                    .contains(&call.hook.uid)
            {
                continue;
            }
            // Webhooks see the object defaulted, as kube decoded it.
            if !defaulted {
                if let Some(o) = object.as_deref_mut() {
                    kubeshard_core::registry::default(a.resource, o);
                }
                defaulted = true;
            }
            let round_no = usize::from(reinvoking);
            let outcome =
                call_mutating(a, &self.health, &call, object.as_deref_mut(), round_no).await;
            let changed = matches!(outcome, Ok(true));
            {
                let mut round = a.reinvocation.webhooks.borrow_mut();
                if changed {
                    round.require_reinvoking_invoked();
                    a.reinvocation.request();
                }
                if call.hook.reinvoke_if_needed {
                    round.invoked.insert(call.hook.uid.clone());
                }
            }
            if let Err(e) = outcome {
                failed(a, &self.health, &call, e, FAILED_OPEN_MUTATION, round_no)?;
            }
        }
        let mut round = a.reinvocation.webhooks.borrow_mut();
        if !reinvoking && !round.invoked.is_empty() {
            round.last_output = object.as_deref().cloned();
        }
        Ok(())
    }
}

impl ValidatingWebhooks {
    async fn dispatch(&self, a: &Attributes<'_>, object: Option<&Value>) -> Result<(), ApiError> {
        let calls = matched(
            self.source.webhooks(),
            a,
            object,
            &self.namespaces,
            &self.security,
        )
        .await?;
        if calls.is_empty() {
            return Ok(());
        }
        // All at once; the first refusal in webhook order is the answer.
        let outcomes = futures_util::future::join_all(
            calls
                .iter()
                .map(|c| call_validating(a, &self.health, c, object)),
        )
        .await;
        let mut first = None;
        for (call, outcome) in calls.iter().zip(outcomes) {
            if let Err(e) = outcome {
                if let Err(refusal) = failed(a, &self.health, call, e, FAILED_OPEN_VALIDATING, 0) {
                    first.get_or_insert(refusal);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// Audit annotation prefixes of a webhook passed over under
/// `failurePolicy: Ignore`.
const FAILED_OPEN_MUTATION: &str = "failed-open.mutation.webhook.admission.k8s.io";
const FAILED_OPEN_VALIDATING: &str = "failed-open.validating.webhook.admission.k8s.io";

/// What a failed call means for the write: a refusal, or (a webhook that
/// could not be called under `failurePolicy: Ignore`) nothing but an
/// audit annotation.
fn failed(
    a: &Attributes<'_>,
    health: &Health,
    call: &Call,
    e: CallError,
    failed_open: &str,
    round: usize,
) -> Result<(), ApiError> {
    match e {
        CallError::Refused(e) => Err(e),
        CallError::Calling(reason) => {
            let message = format!("failed calling webhook {:?}: {reason}", call.hook.name);
            if call.hook.ignore_failures {
                health.metrics.failed_open(&call.hook.name, health.kind);
                tracing::warn!(webhook = %call.hook.name, %message, "webhook failed open");
                a.annotate(
                    format!("{failed_open}/round_{round}_index_{}", call.index),
                    call.hook.name.clone(),
                );
                Ok(())
            } else {
                let operation = a.operation.as_str();
                health.metrics.rejection(
                    &call.hook.name,
                    health.kind,
                    operation,
                    "calling_webhook_error",
                    0,
                );
                tracing::warn!(webhook = %call.hook.name, %message, "webhook failed closed");
                Err(ApiError::internal(&message))
            }
        }
    }
}

/// kube's refusal by a webhook: its Status, with a message saying who
/// refused, and never a success code.
fn refusal(name: &str, result: Option<&Value>) -> ApiError {
    let result = result.unwrap_or(&Value::Null);
    let denied = format!("admission webhook {name:?} denied the request");
    let message = kubeshard_core::meta::str_at(result, "/message");
    let reason = kubeshard_core::meta::str_at(result, "/reason");
    let text = match (message, reason) {
        (m, _) if !m.is_empty() => format!("{denied}: {m}"),
        (_, r) if !r.is_empty() => format!("{denied}: {r}"),
        _ => format!("{denied} without explanation"),
    };
    let mut e = ApiError::new(refusal_code(Some(result)), reason, text);
    e.details = result
        .get("details")
        .and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok())
        .map(Box::new);
    e
}

/// The code of a webhook's refusal: its Status's, when an error code.
fn refusal_code(result: Option<&Value>) -> u16 {
    result
        .and_then(|r| r.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400 && *c < 600)
        .unwrap_or(400)
}

/// The objects as the webhook's version has them (an equivalent version
/// of a custom resource is converted to).
async fn versioned(
    a: &Attributes<'_>,
    call: &Call,
    object: Option<&Value>,
) -> Result<(Option<Value>, Option<Value>), CallError> {
    let (mut object, mut old) = (object.cloned(), a.old_object.cloned());
    if let Some(info) = &call.invocation.equivalent {
        for v in [&mut object, &mut old].into_iter().flatten() {
            a.api
                .convert(info, std::slice::from_mut(v))
                .await
                .map_err(CallError::Refused)?;
        }
    }
    Ok((object, old))
}

/// Sends the review and reads the answer; the warnings and audit
/// annotations it carries are recorded whatever it says.
async fn send(
    a: &Attributes<'_>,
    health: &Health,
    call: &Call,
    object: Option<&Value>,
    old: Option<&Value>,
    mutating: bool,
) -> Result<review::Answer, CallError> {
    let hook = &call.hook;
    if a.dry_run {
        match hook.dry_run_safe {
            None => return Err(CallError::Calling("Webhook SideEffects is nil".into())),
            Some(false) => {
                return Err(CallError::Refused(ApiError::bad_request(format!(
                    "admission webhook {:?} does not support dry run",
                    hook.name
                ))))
            }
            Some(true) => {}
        }
    }
    let Some(version) = hook.review_version else {
        return Err(CallError::Calling(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".into(),
        ));
    };
    let body = review::review(version, &call.request, object, old);
    let uid = kubeshard_core::meta::str_at(&call.request, "/uid").to_string();
    let bytes = serde_json::to_vec(&body).expect("JSON values serialize");
    let query = format!("timeout={}s", hook.timeout.as_secs());
    health.may_call(hook)?;
    let started = Instant::now();
    let answer = a
        .api
        .call_webhook(&hook.client, &query, bytes, hook.timeout)
        .await
        .and_then(|answer| {
            review::answer(&answer, version, &uid, mutating)
                .map_err(|e| format!("received invalid webhook response: {e}"))
        });
    health.called(a, hook, started, &answer);
    a.webhook_took(mutating, started.elapsed());
    let answer = answer.map_err(CallError::Calling)?;
    for (k, v) in &answer.audit_annotations {
        a.annotate(format!("{}/{k}", hook.name), v.clone());
    }
    for w in &answer.warnings {
        a.warn(w.clone());
    }
    if !answer.allowed {
        return Err(CallError::Refused(refusal(
            &hook.name,
            answer.result.as_ref(),
        )));
    }
    Ok(answer)
}

async fn call_validating(
    a: &Attributes<'_>,
    health: &Health,
    call: &Call,
    object: Option<&Value>,
) -> Result<(), CallError> {
    let (object, old) = versioned(a, call, object).await?;
    send(a, health, call, object.as_ref(), old.as_ref(), false)
        .await
        .map(drop)
}

/// Calls a mutating webhook and applies its patch; true when the object
/// changed.
async fn call_mutating(
    a: &Attributes<'_>,
    health: &Health,
    call: &Call,
    object: Option<&mut Value>,
    round: usize,
) -> Result<bool, CallError> {
    let hook = &call.hook;
    let (versioned_object, old) = versioned(a, call, object.as_deref()).await?;
    let answer = send(
        a,
        health,
        call,
        versioned_object.as_ref(),
        old.as_ref(),
        true,
    )
    .await?;
    let mutated =
        |changed: bool| {
            a.annotate(
            format!("mutation.webhook.admission.k8s.io/round_{round}_index_{}", call.index),
            json!({"configuration": configuration(hook), "webhook": hook.name, "mutated": changed})
                .to_string(),
        );
            changed
        };
    let Some(patch) = answer.patch else {
        return Ok(mutated(false));
    };
    let patch: json_patch::Patch = serde_json::from_slice(&patch).map_err(|e| {
        CallError::Calling(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    })?;
    if patch.0.is_empty() {
        return Ok(mutated(false));
    }
    let (Some(object), Some(mut patched)) = (object, versioned_object) else {
        return Err(CallError::Refused(ApiError::internal(&format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        ))));
    };
    json_patch::patch(&mut patched, &patch)
        .map_err(|e| CallError::Refused(ApiError::internal(&e.to_string())))?;
    if !patched.is_object() {
        return Err(CallError::Refused(ApiError::internal(
            "the patched object is not a JSON object",
        )));
    }
    a.annotate(
        format!(
            "patch.webhook.admission.k8s.io/round_{round}_index_{}",
            call.index
        ),
        json!({"configuration": configuration(hook), "webhook": hook.name,
            "patch": patch, "patchType": "JSONPatch"})
        .to_string(),
    );
    if call.invocation.equivalent.is_some() {
        a.api
            .convert(a.resource, std::slice::from_mut(&mut patched))
            .await
            .map_err(CallError::Refused)?;
    }
    // kube defaults the patched object again.
    kubeshard_core::registry::default(a.resource, &mut patched);
    let changed = *object != patched;
    *object = patched;
    Ok(mutated(changed))
}

/// The configuration a webhook belongs to (its uid is `<name>/<index>`).
fn configuration(hook: &Hook) -> &str {
    hook.uid.rsplit_once('/').map_or("", |(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_kubes() {
        let e = refusal(
            "deny.example.com",
            Some(&json!({"message": "no pods today", "code": 403, "reason": "Forbidden"})),
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no pods today"
        );
        let e = refusal("d", Some(&json!({"code": 200, "reason": "Because"})));
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"d\" denied the request: Because"
        );
        let e = refusal("d", None);
        assert_eq!(
            e.message,
            "admission webhook \"d\" denied the request without explanation"
        );
    }
}
