//! ValidatingAdmissionPolicies and their bindings as this executor's
//! informers last saw them, each compiled once per change: match
//! constraints, match conditions, variables, validations and audit
//! annotations (every expression parsed and loop-counted once, never per
//! request).

use crate::admission::matching::{compile_conditions, Conditions, Matcher};
use crate::admission::plugins::PluginInit;
use crate::informer::{Change, Sink};
use kubeshard_cache::Filter;
use kubeshard_core::crd::access::Access;
use kubeshard_core::crd::expression::Expression;
use kubeshard_core::meta;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// What a policy's expressions may read.
pub use kubeshard_core::registry::admission_policy::VARIABLES;

/// A policy's `spec.paramKind` as (group, version, kind).
pub type ParamKind = (String, String, String);

pub fn param_kind(spec: &Value) -> Option<ParamKind> {
    spec.get("paramKind").filter(|p| p.is_object()).map(|p| {
        let (group, version) = match meta::str_at(p, "/apiVersion").split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), meta::str_at(p, "/apiVersion").to_string()),
        };
        (group, version, meta::str_at(p, "/kind").to_string())
    })
}

pub struct Validation {
    pub expression: Expression,
    pub message: Option<String>,
    pub message_expression: Option<Expression>,
    /// Status reason of a refusal (kube: Invalid unless given).
    pub reason: String,
}

pub struct Policy {
    pub name: String,
    pub param_kind: Option<ParamKind>,
    pub matcher: Matcher,
    pub ignore_failures: bool,
    pub conditions: Conditions,
    /// The validations and audit annotations, or why the policy does not
    /// compile (then every write it matches meets its failure policy).
    pub compiled: Result<Compiled, String>,
}

pub struct Compiled {
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<(String, Expression)>,
    /// Which of the costlier variables some expression reads (only those
    /// are made per request).
    pub reads_request: bool,
    pub reads_namespace: bool,
    pub reads_authorizer: bool,
    /// What the expressions read of the objects and params (only that is
    /// made a CEL value per write).
    pub object: Access,
    pub old_object: Access,
    pub params: Access,
}

impl Policy {
    pub fn parse(v: &Value) -> Policy {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let param_kind = param_kind(spec);
        let matcher = Matcher::resources(spec.get("matchConstraints").unwrap_or(&Value::Null));
        Policy {
            name: meta::name(v).to_string(),
            param_kind,
            matcher,
            ignore_failures: meta::str_at(spec, "/failurePolicy") == "Ignore",
            conditions: compile_conditions(meta::array_at(spec, "/matchConditions"), VARIABLES),
            compiled: compile(spec),
        }
    }
}

/// A policy's `spec.variables`, each compiled with those before it.
pub fn compile_variables(spec: &Value) -> Result<Vec<(String, Expression)>, String> {
    let mut defined: Vec<(String, Expression)> = Vec::new();
    for (i, var) in meta::array_at(spec, "/variables").iter().enumerate() {
        let e = Expression::compile_with(meta::str_at(var, "/expression"), VARIABLES, &defined)
            .map_err(|e| format!("spec.variables[{i}].expression: {e}"))?;
        defined.push((meta::str_at(var, "/name").to_string(), e));
    }
    Ok(defined)
}

fn compile(spec: &Value) -> Result<Compiled, String> {
    let defined = compile_variables(spec)?;
    let mut validations = Vec::new();
    for (i, v) in meta::array_at(spec, "/validations").iter().enumerate() {
        let expression =
            Expression::compile_with(meta::str_at(v, "/expression"), VARIABLES, &defined)
                .map_err(|e| format!("spec.validations[{i}].expression: {e}"))?;
        let message_expression = match v.get("messageExpression").and_then(Value::as_str) {
            Some(m) => Some(
                Expression::compile_with(m, VARIABLES, &defined)
                    .map_err(|e| format!("spec.validations[{i}].messageExpression: {e}"))?,
            ),
            None => None,
        };
        validations.push(Validation {
            expression,
            message: v.get("message").and_then(Value::as_str).map(str::to_string),
            message_expression,
            reason: match meta::str_at(v, "/reason") {
                "" => "Invalid".to_string(),
                r => r.to_string(),
            },
        });
    }
    let mut audit_annotations = Vec::new();
    for (i, a) in meta::array_at(spec, "/auditAnnotations").iter().enumerate() {
        let e = Expression::compile_with(meta::str_at(a, "/valueExpression"), VARIABLES, &defined)
            .map_err(|e| format!("spec.auditAnnotations[{i}].valueExpression: {e}"))?;
        audit_annotations.push((meta::str_at(a, "/key").to_string(), e));
    }
    let conditions = compile_conditions(meta::array_at(spec, "/matchConditions"), VARIABLES);
    let all: Vec<&Expression> = validations
        .iter()
        .flat_map(|v| std::iter::once(&v.expression).chain(&v.message_expression))
        .chain(audit_annotations.iter().map(|(_, e)| e))
        .chain(conditions.iter().flatten().map(|(_, e)| e))
        .collect();
    Ok(Compiled {
        reads_request: all.iter().any(|e| e.reads("request")),
        reads_namespace: all.iter().any(|e| e.reads("namespaceObject")),
        reads_authorizer: all.iter().any(|e| e.reads("authorizer")),
        object: read(&all, "object"),
        old_object: read(&all, "oldObject"),
        params: read(&all, "params"),
        validations,
        audit_annotations,
    })
}

/// What any of `all` reads of the variable `name`.
fn read(all: &[&Expression], name: &str) -> Access {
    all.iter()
        .fold(Access::None, |acc, e| acc.union(e.access(name)))
}

pub struct Binding {
    pub name: String,
    pub policy: String,
    pub param_ref: Option<Value>,
    /// `spec.matchResources`; None: whatever the policy matches.
    pub matcher: Option<Matcher>,
    pub actions: Vec<String>,
}

impl Binding {
    fn parse(v: &Value) -> Binding {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        Binding {
            name: meta::name(v).to_string(),
            policy: meta::str_at(spec, "/policyName").to_string(),
            param_ref: spec.get("paramRef").filter(|p| p.is_object()).cloned(),
            matcher: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(Matcher::resources),
            actions: meta::array_at(spec, "/validationActions")
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        }
    }
}

type Cache<T> = Rc<RefCell<BTreeMap<String, Rc<T>>>>;

/// A sink keeping `cache` the parsed objects by name.
fn sink<T: 'static>(cache: Cache<T>, parse: fn(&Value) -> T) -> Sink {
    Box::new(move |change| {
        let mut all = cache.borrow_mut();
        match change {
            Change::Reset => all.clear(),
            Change::Upsert(o) => {
                all.insert(o.name.to_string(), Rc::new(parse(&o.to_value())));
            }
            Change::Delete(o) => {
                all.remove(&*o.name);
            }
        }
    })
}

/// Policies of one kind (validating or mutating) and their bindings.
pub struct Source<P> {
    policies: Cache<P>,
    bindings: Cache<Binding>,
}

impl<P> Clone for Source<P> {
    fn clone(&self) -> Self {
        Self {
            policies: self.policies.clone(),
            bindings: self.bindings.clone(),
        }
    }
}

impl<P: 'static> Source<P> {
    /// Follows `policies` and `bindings` (resources of
    /// admissionregistration.k8s.io), each policy parsed with `parse`.
    pub fn start(
        init: &PluginInit<'_>,
        (policies_plural, bindings_plural): (&str, &str),
        parse: fn(&Value) -> P,
    ) -> Self {
        let policies: Cache<P> = Rc::default();
        let bindings: Cache<Binding> = Rc::default();
        let group = "admissionregistration.k8s.io";
        init.informers.start(
            init.ctx,
            init.keys.builtin(group, policies_plural),
            Filter::default(),
            sink(policies.clone(), parse),
        );
        init.informers.start(
            init.ctx,
            init.keys.builtin(group, bindings_plural),
            Filter::default(),
            sink(bindings.clone(), Binding::parse),
        );
        Self { policies, bindings }
    }

    /// Whether any policy is bound (the common cluster has none).
    pub fn is_empty(&self) -> bool {
        self.policies.borrow().is_empty() || self.bindings.borrow().is_empty()
    }

    /// Every bound policy (by name) with its bindings (by name).
    pub fn bound(&self) -> Vec<(Rc<P>, Vec<Rc<Binding>>)> {
        let bindings = self.bindings.borrow();
        self.policies
            .borrow()
            .iter()
            .filter_map(|(name, p)| {
                let mine: Vec<Rc<Binding>> = bindings
                    .values()
                    .filter(|b| b.policy == *name)
                    .cloned()
                    .collect();
                (!mine.is_empty()).then(|| (p.clone(), mine))
            })
            .collect()
    }
}
