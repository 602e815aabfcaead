//! Admission: the ordered chain of named plugins every write passes
//! between its decoding and its storage, as kube-apiserver's admission
//! chain. Mutating plugins run first, in kube's order, and may change the
//! object; validating plugins run after the kind's own defaulting and
//! validation, and may only refuse. The registry Store calls the chain on
//! every write path; which plugins run is `--enable-admission-plugins` /
//! `--disable-admission-plugins` over kube's defaults (see [`plugins`]),
//! configured through `--admission-control-config-file` ([`config`]).
//!
//! A plugin answers at once when it can ([`Outcome::Ready`]: no
//! allocation, the common case for plugins that read executor-local
//! caches) or with a future when it must wait (a cache catching up, a
//! webhook).

mod always;
mod authorizer;
mod certificates;
pub mod config;
mod default_class;
mod event_rate_limit;
mod limit_ranger;
mod lister;
mod matching;
mod namespace_labels;
mod namespace_lifecycle;
mod node_restriction;
mod optional;
pub mod plugins;
mod pod_security;
pub mod policies;
mod priority;
mod recorder;
mod reinvocation;
mod resource_quota;
mod runtime_class;
mod scheduling;
mod service_account;
mod storage_protection;
mod subject_restriction;
mod tolerations;
mod webhooks;

use crate::render::warnings::Warnings;
use bytes::Bytes;
use kubeshard_core::authn::UserInfo;
use kubeshard_core::catalog::CatalogSnapshot;
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub use always::{AlwaysAdmit, AlwaysDeny};
pub use namespace_lifecycle::NamespaceLifecycle;
pub use reinvocation::Reinvocation;

/// What a write does, as admission sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// kube's spelling (`CREATE`, …), for messages and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// Everything a plugin may know about a write (kube's
/// `admission.Attributes`). The object itself is passed beside it:
/// mutable to mutating plugins, shared to validating ones.
pub struct Attributes<'a> {
    pub operation: Operation,
    pub resource: &'a ResourceInfo,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The stored object an update or delete replaces.
    pub old_object: Option<&'a Value>,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    /// The options the write was made with.
    pub options: Options<'a>,
    /// The server the chain runs in (plugins that read or call out).
    pub api: &'a dyn Host,
    /// Where warnings and audit annotations go, when the write has a
    /// client to tell.
    pub notes: Option<&'a Warnings>,
    /// The mutating pass's reinvocation state ([`Admission::admit`]).
    pub reinvocation: Reinvocation,
}

impl Attributes<'_> {
    /// Whether the write is to `group`/`plural` itself (no subresource).
    pub fn addresses(&self, group: &str, plural: &str) -> bool {
        self.subresource.is_empty()
            && self.resource.group == group
            && self.resource.plural == plural
    }

    /// Whether the write creates `group`/`plural` itself.
    pub fn creates(&self, group: &str, plural: &str) -> bool {
        self.operation == Operation::Create && self.addresses(group, plural)
    }

    /// A warning for the client.
    pub fn warn(&self, text: String) {
        if let Some(n) = self.notes {
            n.extend([text]);
        }
    }

    /// An annotation on the request's audit event.
    pub fn annotate(&self, key: String, value: String) {
        if let Some(n) = self.notes {
            n.annotate(key, value);
        }
    }

    /// Time a webhook took, which the request's SLI latency leaves out.
    pub fn webhook_took(&self, mutating: bool, took: std::time::Duration) {
        if let Some(n) = self.notes {
            n.webhook_took(mutating, took);
        }
    }
}

/// What plugins ask of the server they run in. The executor's `Api`
/// implements it from above (the chain is part of that `Api`, so
/// admission may not depend on it directly).
pub trait Host {
    fn storage(&self) -> &crate::storage::Backend;
    fn catalog(&self) -> Arc<CatalogSnapshot>;
    /// POSTs `body` (JSON) to the webhook `client_config` (its API form)
    /// names, with `query` added to its URL; the answer's body, or why
    /// there is none in the words kube's errors use.
    fn call_webhook<'a>(
        &'a self,
        client_config: &'a Value,
        query: &'a str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = Result<Bytes, String>> + 'a>>;
    /// Converts custom resources to `info`'s version.
    fn convert<'a>(
        &'a self,
        info: &'a ResourceInfo,
        objs: &'a mut [Value],
    ) -> Pin<Box<dyn Future<Output = Result<(), ApiError>> + 'a>>;
}

/// The options of a write (kube's `GetOperationOptions`). Patches and
/// applies are admitted with UpdateOptions, or CreateOptions when they
/// create, as kube converts them.
#[derive(Clone, Copy)]
pub enum Options<'a> {
    Create { field_manager: &'a str },
    Update { field_manager: &'a str },
    Delete(&'a DeleteOptions),
}

impl Options<'_> {
    /// The options object as kube hands it to webhooks and policies.
    pub fn to_value(self, dry_run: bool) -> Value {
        let dry: Vec<&str> = if dry_run { vec!["All"] } else { Vec::new() };
        let (kind, mut v) = match self {
            Options::Create { field_manager } => {
                ("CreateOptions", json!({"fieldManager": field_manager}))
            }
            Options::Update { field_manager } => {
                ("UpdateOptions", json!({"fieldManager": field_manager}))
            }
            Options::Delete(o) => {
                let mut v = json!({});
                if let Some(g) = o.grace_period_seconds {
                    v["gracePeriodSeconds"] = json!(g);
                }
                if let Some(p) = o.propagation {
                    v["propagationPolicy"] = json!(p.as_str());
                }
                ("DeleteOptions", v)
            }
        };
        v["kind"] = json!(kind);
        v["apiVersion"] = json!("meta.k8s.io/v1");
        if !dry.is_empty() {
            v["dryRun"] = json!(dry);
        }
        v
    }
}

/// A plugin's answer: now, or later.
pub enum Outcome<'a> {
    Ready(Result<(), ApiError>),
    Later(Pin<Box<dyn Future<Output = Result<(), ApiError>> + 'a>>),
}

impl<'a> Outcome<'a> {
    pub fn later(f: impl Future<Output = Result<(), ApiError>> + 'a) -> Self {
        Outcome::Later(Box::pin(f))
    }

    async fn resolve(self) -> Result<(), ApiError> {
        match self {
            Outcome::Ready(r) => r,
            Outcome::Later(f) => f.await,
        }
    }
}

/// A plugin that may change the object (kube's `MutationInterface`).
pub trait Mutating {
    fn name(&self) -> &'static str;
    /// Whether the plugin has anything to do with this write.
    fn handles(&self, a: &Attributes<'_>) -> bool;
    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a>;
}

/// A plugin that may only refuse (kube's `ValidationInterface`).
pub trait Validating {
    fn name(&self) -> &'static str;
    fn handles(&self, a: &Attributes<'_>) -> bool;
    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a>;
}

/// One executor's admission chain.
#[derive(Default, Clone)]
pub struct Admission {
    mutating: Vec<Rc<dyn Mutating>>,
    validating: Vec<Rc<dyn Validating>>,
}

impl Admission {
    pub fn with_mutating(mut self, p: Rc<dyn Mutating>) -> Self {
        self.mutating.push(p);
        self
    }

    pub fn with_validating(mut self, p: Rc<dyn Validating>) -> Self {
        self.validating.push(p);
        self
    }

    /// Whether any plugin has anything to do with this write: when none
    /// does, the Store may take its fastest path.
    pub fn handles(&self, a: &Attributes<'_>) -> bool {
        self.mutating.iter().any(|p| p.handles(a)) || self.validating.iter().any(|p| p.handles(a))
    }

    /// Runs the mutating plugins in order; the first refusal ends the
    /// write. When a plugin asks for it (a webhook changed the object),
    /// they all run once more.
    pub async fn admit(
        &self,
        a: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<(), ApiError> {
        self.admit_pass(a, object.as_deref_mut()).await?;
        if a.reinvocation.requested.get() {
            a.reinvocation.reinvoking.set(true);
            self.admit_pass(a, object).await?;
        }
        Ok(())
    }

    async fn admit_pass(
        &self,
        a: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<(), ApiError> {
        for p in &self.mutating {
            if p.handles(a) {
                let answer = p.admit(a, object.as_deref_mut()).resolve().await;
                answer.map_err(|e| refused(p.name(), a, e))?;
            }
        }
        Ok(())
    }

    /// Runs the validating plugins in order; the first refusal ends the
    /// write.
    pub async fn validate(
        &self,
        a: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        for p in &self.validating {
            if p.handles(a) {
                let answer = p.validate(a, object).resolve().await;
                answer.map_err(|e| refused(p.name(), a, e))?;
            }
        }
        Ok(())
    }
}

/// A plugin's refusal, logged with who asked for what (kube logs its
/// admission denials too; the client gets the plugin's Status as is).
fn refused(plugin: &str, a: &Attributes<'_>, e: ApiError) -> ApiError {
    tracing::debug!(
        plugin,
        operation = a.operation.as_str(),
        resource = %a.resource.plural,
        subresource = a.subresource,
        namespace = a.namespace,
        name = a.name,
        user = %a.user.name,
        dry_run = a.dry_run,
        code = e.code,
        "admission refused a write"
    );
    e
}
