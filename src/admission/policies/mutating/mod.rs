//! MutatingAdmissionPolicy (kube 1.34's beta plugin, behind its feature
//! gate): CEL policies that change the objects of the creates and updates
//! they are bound to. Each binding that matches runs its policy's
//! mutations in order, once per parameter object, each seeing the object
//! as the one before left it: an apply configuration (`Object{…}`) merged
//! in, or a JSON patch (`[JSONPatch{…}]`) applied. A policy that cannot
//! be evaluated meets its `failurePolicy`; one that changed the object
//! makes the chain run again, where `reinvocationPolicy: IfNeeded`
//! policies see what later plugins did.

mod patch;

use super::params;
use super::source::{compile_variables, param_kind, Binding, ParamKind, Source, VARIABLES};
use crate::admission::authorizer;
use crate::admission::matching::{self, compile_conditions, conditions_read, Conditions, Matcher};
use crate::admission::namespace_labels::NamespaceLabels;
use crate::admission::plugins::PluginInit;
use crate::admission::webhooks::{exempt, review};
use crate::admission::{Attributes, Mutating, Operation, Outcome};
use crate::security::Security;
use kubeshard_core::crd::expression::{Expression, Variables};
use kubeshard_core::meta;
use kubeshard_core::status::{ApiError, StatusCause};
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

pub const NAME: &str = "MutatingAdmissionPolicy";

enum Mutation {
    ApplyConfiguration(Expression),
    JsonPatch(Expression),
}

struct Compiled {
    mutations: Vec<Mutation>,
    reads_namespace: bool,
    reads_authorizer: bool,
}

pub struct Policy {
    name: String,
    param_kind: Option<ParamKind>,
    matcher: Matcher,
    ignore_failures: bool,
    conditions: Conditions,
    reinvoke_if_needed: bool,
    compiled: Result<Compiled, String>,
}

impl Policy {
    fn parse(v: &Value) -> Policy {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let conditions = compile_conditions(meta::array_at(spec, "/matchConditions"), VARIABLES);
        Policy {
            name: meta::name(v).to_string(),
            param_kind: param_kind(spec),
            matcher: Matcher::resources(spec.get("matchConstraints").unwrap_or(&Value::Null)),
            ignore_failures: meta::str_at(spec, "/failurePolicy") == "Ignore",
            reinvoke_if_needed: meta::str_at(spec, "/reinvocationPolicy") == "IfNeeded",
            compiled: compile(spec, &conditions),
            conditions,
        }
    }
}

fn compile(spec: &Value, conditions: &Conditions) -> Result<Compiled, String> {
    let defined = compile_variables(spec)?;
    let mut mutations = Vec::new();
    for (i, m) in meta::array_at(spec, "/mutations").iter().enumerate() {
        let (field, make): (&str, fn(Expression) -> Mutation) = match meta::str_at(m, "/patchType")
        {
            "JSONPatch" => ("jsonPatch", Mutation::JsonPatch),
            _ => ("applyConfiguration", Mutation::ApplyConfiguration),
        };
        let source = m
            .get(field)
            .and_then(|f| f.get("expression"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let e = Expression::compile_with(source, VARIABLES, &defined)
            .map_err(|e| format!("spec.mutations[{i}].{field}.expression: {e}"))?;
        mutations.push(make(e));
    }
    let reads = |v: &str| {
        mutations.iter().any(|m| match m {
            Mutation::ApplyConfiguration(e) | Mutation::JsonPatch(e) => e.reads(v),
        })
    };
    let conditions_read_authorizer = conditions_read(conditions, "authorizer");
    Ok(Compiled {
        reads_namespace: reads("namespaceObject"),
        reads_authorizer: reads("authorizer") || conditions_read_authorizer,
        mutations,
    })
}

pub struct MutatingPolicies {
    source: Source<Policy>,
    namespaces: NamespaceLabels,
    namespace_key: Arc<str>,
    /// Who answers `authorizer` checks.
    security: Rc<Security>,
}

/// A policy that could not be applied, as kube reports it.
struct Failure {
    message: String,
}

impl MutatingPolicies {
    pub fn start(init: &PluginInit<'_>, namespaces: NamespaceLabels) -> Self {
        Self {
            source: Source::start(
                init,
                (
                    "mutatingadmissionpolicies",
                    "mutatingadmissionpolicybindings",
                ),
                Policy::parse,
            ),
            namespaces,
            namespace_key: init.keys.builtin("", "namespaces"),
            security: init.security.clone(),
        }
    }

    async fn mutate(&self, a: &Attributes<'_>, object: &mut Value) -> Result<(), ApiError> {
        let reinvoking = a.reinvocation.is_reinvoke();
        if reinvoking {
            a.reinvocation
                .policies
                .borrow_mut()
                .start_reinvoking(Some(object));
        }
        let mut failures: Vec<Failure> = Vec::new();
        let mut fail = |policy: &Policy, binding: &Binding, message: String| {
            if !policy.ignore_failures {
                failures.push(Failure {
                    message: format!(
                        "policy '{}' with binding '{}' denied request: {message}",
                        policy.name, binding.name
                    ),
                });
            }
        };
        let mut namespace_object: Option<Option<Value>> = None;
        for (policy, bindings) in self.source.bound() {
            for binding in bindings {
                let invocation = match matching::should_call(
                    &policy.matcher,
                    a,
                    Some(&*object),
                    &self.namespaces,
                )
                .await
                {
                    Ok(Some(i)) => i,
                    Ok(None) => break,
                    Err(e) => {
                        fail(&policy, &binding, e.message);
                        break;
                    }
                };
                let compiled = match &policy.compiled {
                    Ok(c) => c,
                    Err(e) => {
                        fail(&policy, &binding, e.clone());
                        break;
                    }
                };
                if let Some(m) = &binding.matcher {
                    match matching::should_call(m, a, Some(&*object), &self.namespaces).await {
                        Ok(Some(_)) => {}
                        Ok(None) => continue,
                        Err(e) => {
                            fail(&policy, &binding, e.message);
                            continue;
                        }
                    }
                }
                let params = match params::params(a, policy.param_kind.as_ref(), &binding).await {
                    Ok(p) => p,
                    Err(e) => {
                        fail(&policy, &binding, e);
                        continue;
                    }
                };
                if compiled.reads_namespace && namespace_object.is_none() {
                    namespace_object =
                        Some(params::namespace_object(a, &self.namespace_key).await?);
                }
                let namespace = namespace_object.as_ref().and_then(Option::as_ref);
                for param in &params {
                    let key = format!(
                        "{}/{}/{}/{}",
                        policy.name,
                        binding.name,
                        param.as_ref().map_or("", |p| meta::namespace(p)),
                        param.as_ref().map_or("", |p| meta::name(p)),
                    );
                    if reinvoking && !a.reinvocation.policies.borrow().reinvoke.contains(&key) {
                        continue;
                    }
                    let before = object.clone();
                    let request = review::request(a, invocation.resource(a), Some(&before));
                    let reads = compiled.reads_authorizer;
                    let vars = Variables::default()
                        .bind("object", Some(&before))
                        .bind("oldObject", a.old_object)
                        .bind("request", Some(&request))
                        .bind("params", param.as_ref())
                        .bind("namespaceObject", namespace);
                    let vars = authorizer::bind(a, reads, vars);
                    let outcome = authorizer::scope(&self.security, a, reads, || {
                        let conditions = &policy.conditions;
                        match matching::conditions_hold(
                            conditions,
                            policy.ignore_failures,
                            a,
                            &vars,
                        ) {
                            Ok(true) => {}
                            Ok(false) => return Ok(None),
                            Err(e) => return Err(e.message),
                        }
                        let bound = Bound {
                            request: &request,
                            param: param.as_ref(),
                            namespace,
                        };
                        Ok(Some(run(a, compiled, object, &bound)))
                    });
                    match outcome {
                        Ok(Some(Ok(()))) => {}
                        Ok(Some(Err(e))) => fail(&policy, &binding, e),
                        Ok(None) => continue,
                        Err(e) => {
                            fail(&policy, &binding, e);
                            continue;
                        }
                    }
                    let mut round = a.reinvocation.policies.borrow_mut();
                    if *object != before {
                        round.require_reinvoking_invoked();
                        a.reinvocation.request();
                    }
                    if policy.reinvoke_if_needed {
                        round.invoked.insert(key);
                    }
                }
            }
        }
        a.reinvocation.policies.borrow_mut().last_output = Some(object.clone());
        match failures.into_iter().next() {
            None => Ok(()),
            Some(f) => Err(refusal(f)),
        }
    }
}

/// What a policy's mutations read besides the object.
struct Bound<'a> {
    request: &'a Value,
    param: Option<&'a Value>,
    namespace: Option<&'a Value>,
}

/// Runs a policy's mutations in order on `object`, each evaluated against
/// the object as the previous one left it.
fn run(
    a: &Attributes<'_>,
    compiled: &Compiled,
    object: &mut Value,
    bound: &Bound<'_>,
) -> Result<(), String> {
    let mut budget = super::BUDGET;
    for m in &compiled.mutations {
        let current = object.clone();
        let vars = Variables::default()
            .bind("object", Some(&current))
            .bind("oldObject", a.old_object)
            .bind("request", Some(bound.request))
            .bind("params", bound.param)
            .bind("namespaceObject", bound.namespace);
        let vars = authorizer::bind(a, compiled.reads_authorizer, vars);
        match m {
            Mutation::ApplyConfiguration(e) => {
                let patch = e.evaluate_json(&vars, &mut budget)?;
                patch::apply_configuration(object, &patch, a.resource.schema())?;
            }
            Mutation::JsonPatch(e) => {
                let ops = e.evaluate_json(&vars, &mut budget)?;
                patch::json_patch(object, &ops)?;
            }
        }
        // kube defaults the patched object.
        kubeshard_core::registry::default(a.resource, object);
    }
    Ok(())
}

/// kube's refusal by a policy: Forbidden, the first failure's message as
/// the message and as a cause.
fn refusal(f: Failure) -> ApiError {
    let mut e = ApiError::new(403, "Invalid", f.message.clone());
    e.details = Some(Box::new(kubeshard_core::status::StatusDetails {
        causes: vec![StatusCause {
            message: f.message,
            ..StatusCause::default()
        }],
        ..Default::default()
    }));
    e
}

impl Mutating for MutatingPolicies {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        matches!(a.operation, Operation::Create | Operation::Update)
            && !exempt(a)
            && !self.source.is_empty()
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        Outcome::later(async move {
            match object {
                Some(o) => self.mutate(a, o).await,
                None => Ok(()),
            }
        })
    }
}
