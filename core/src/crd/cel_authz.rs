//! kube's CEL authorizer library, for admission policies' `authorizer`
//! variable: `authorizer.group('apps').resource('deployments')
//! .namespace('ns').name('x').check('update').allowed()`,
//! `authorizer.path('/healthz').check('get')`,
//! `authorizer.serviceAccount(ns, name)…` (asks for that account instead
//! of the requester), `authorizer.requestResource.check(verb)` (the
//! resource of the write being admitted), and a decision's `allowed()`,
//! `reason()`, `errored()` and `error()`.
//!
//! The values are plain data; `check` asks the authorizer the evaluating
//! code installed on this thread for the duration of the evaluation (see
//! [`with_authorizer`]), since the server's authorizers live on its
//! executors and evaluation is synchronous there.

use cel::common::ast::{CallExpr, Expr, IdedExpr};
use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value as Cel};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// What one `check` asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Check {
    /// `serviceAccount(namespace, name)`: asked for that account.
    pub service_account: Option<(String, String)>,
    /// A non-resource check's path.
    pub path: Option<String>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub verb: String,
}

/// An authorizer's answer.
pub struct Verdict {
    pub allowed: bool,
    pub reason: String,
}

type Authorize = Rc<dyn Fn(&Check) -> Verdict>;

thread_local! {
    static AUTHORIZER: RefCell<Option<Authorize>> = const { RefCell::new(None) };
}

/// Runs `f` with `authorize` answering the checks its expressions make.
pub fn with_authorizer<R>(authorize: Authorize, f: impl FnOnce() -> R) -> R {
    let previous = AUTHORIZER.with(|a| a.replace(Some(authorize)));
    let out = f();
    AUTHORIZER.with(|a| *a.borrow_mut() = previous);
    out
}

/// The resource of the write being admitted (`requestResource`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestResource {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Authz {
    Root {
        service_account: Option<(String, String)>,
        request: RequestResource,
    },
    Group(Check),
    Resource(Check),
    Path(Check),
    Decision {
        allowed: bool,
        reason: String,
    },
}

impl Opaque for Authz {
    fn runtime_type_name(&self) -> &str {
        match self {
            Authz::Root { .. } => "kubernetes.authorization.Authorizer",
            Authz::Group(_) => "kubernetes.authorization.GroupCheck",
            Authz::Resource(_) => "kubernetes.authorization.ResourceCheck",
            Authz::Path(_) => "kubernetes.authorization.PathCheck",
            Authz::Decision { .. } => "kubernetes.authorization.Decision",
        }
    }
}

/// The `authorizer` variable of a write to `request`.
pub fn authorizer(request: RequestResource) -> Cel {
    Cel::Opaque(Arc::new(Authz::Root {
        service_account: None,
        request,
    }))
}

/// The function `authorizer.requestResource` becomes (the interpreter
/// selects no fields of opaque values).
const REQUEST_RESOURCE: &str = "@requestResource";

/// Rewrites `authorizer.requestResource` into a call.
pub(super) fn rewrite(e: &mut IdedExpr) {
    if let Expr::Select(s) = &mut e.expr {
        if s.field == "requestResource" && !s.test {
            if let Expr::Ident(n) = &s.operand.expr {
                if n == "authorizer" {
                    let target = std::mem::take(&mut s.operand);
                    e.expr = Expr::Call(CallExpr {
                        func_name: REQUEST_RESOURCE.into(),
                        target: Some(target),
                        args: Vec::new(),
                    });
                    return;
                }
            }
        }
    }
    super::cel::for_each_child_mut(e, rewrite);
}

fn this(v: &Arc<dyn Opaque>, function: &str) -> Result<Authz, ExecutionError> {
    v.downcast_ref::<Authz>()
        .cloned()
        .ok_or_else(|| ExecutionError::function_error(function, "not an authorizer value"))
}

fn wrong(function: &str, on: &Authz) -> ExecutionError {
    ExecutionError::function_error(
        function,
        format!("no such overload on {}", on.runtime_type_name()),
    )
}

fn value(a: Authz) -> Cel {
    Cel::Opaque(Arc::new(a))
}

/// A ResourceCheck with one attribute set.
fn set_attribute(
    function: &'static str,
    field: fn(&mut Check) -> &mut String,
) -> impl Fn(This<Arc<dyn Opaque>>, Arc<String>) -> Result<Cel, ExecutionError> {
    move |This(v), s| match this(&v, function)? {
        Authz::Resource(mut c) => {
            *field(&mut c) = s.to_string();
            Ok(value(Authz::Resource(c)))
        }
        other => Err(wrong(function, &other)),
    }
}

pub(super) fn register(
    ctx: &mut Context<'static, 'static>,
    add: &dyn Fn(&str, Result<(), cel::DeclarationError>),
) {
    add(
        "path",
        ctx.add_function(
            "path",
            |This(v): This<Arc<dyn Opaque>>, p: Arc<String>| match this(&v, "path")? {
                Authz::Root {
                    service_account, ..
                } => Ok(value(Authz::Path(Check {
                    service_account,
                    path: Some(p.to_string()),
                    ..Check::default()
                }))),
                other => Err(wrong("path", &other)),
            },
        ),
    );
    add(
        "group",
        ctx.add_function(
            "group",
            |This(v): This<Arc<dyn Opaque>>, g: Arc<String>| match this(&v, "group")? {
                Authz::Root {
                    service_account, ..
                } => Ok(value(Authz::Group(Check {
                    service_account,
                    group: g.to_string(),
                    ..Check::default()
                }))),
                other => Err(wrong("group", &other)),
            },
        ),
    );
    add(
        "serviceAccount",
        ctx.add_function(
            "serviceAccount",
            |This(v): This<Arc<dyn Opaque>>, ns: Arc<String>, name: Arc<String>| match this(
                &v,
                "serviceAccount",
            )? {
                Authz::Root { request, .. } => Ok(value(Authz::Root {
                    service_account: Some((ns.to_string(), name.to_string())),
                    request,
                })),
                other => Err(wrong("serviceAccount", &other)),
            },
        ),
    );
    add(
        "resource",
        ctx.add_function(
            "resource",
            |This(v): This<Arc<dyn Opaque>>, r: Arc<String>| match this(&v, "resource")? {
                Authz::Group(mut c) => {
                    c.resource = r.to_string();
                    Ok(value(Authz::Resource(c)))
                }
                other => Err(wrong("resource", &other)),
            },
        ),
    );
    add(
        "subresource",
        ctx.add_function(
            "subresource",
            set_attribute("subresource", |c| &mut c.subresource),
        ),
    );
    add(
        "namespace",
        ctx.add_function(
            "namespace",
            set_attribute("namespace", |c| &mut c.namespace),
        ),
    );
    add(
        "name",
        ctx.add_function("name", set_attribute("name", |c| &mut c.name)),
    );
    // Selectors narrow what a list may return; the checks here are
    // answered for the resource as a whole, as authorizers that do not
    // read selectors answer them.
    for selector in ["fieldSelector", "labelSelector"] {
        add(
            selector,
            ctx.add_function(
                selector,
                move |This(v): This<Arc<dyn Opaque>>, _s: Arc<String>| match this(&v, selector)? {
                    a @ Authz::Resource(_) => Ok(value(a)),
                    other => Err(wrong(selector, &other)),
                },
            ),
        );
    }
    add(
        REQUEST_RESOURCE,
        ctx.add_function(
            REQUEST_RESOURCE,
            |This(v): This<Arc<dyn Opaque>>| match this(&v, "requestResource")? {
                Authz::Root {
                    service_account,
                    request,
                } => Ok(value(Authz::Resource(Check {
                    service_account,
                    path: None,
                    group: request.group,
                    resource: request.resource,
                    subresource: request.subresource,
                    namespace: request.namespace,
                    name: request.name,
                    verb: String::new(),
                }))),
                other => Err(wrong("requestResource", &other)),
            },
        ),
    );
    add(
        "check",
        ctx.add_function(
            "check",
            |This(v): This<Arc<dyn Opaque>>, verb: Arc<String>| {
                let mut c = match this(&v, "check")? {
                    Authz::Resource(c) | Authz::Path(c) => c,
                    other => return Err(wrong("check", &other)),
                };
                c.verb = verb.to_string();
                let verdict = AUTHORIZER.with(|a| a.borrow().as_ref().map(|f| f(&c)));
                let verdict = verdict.ok_or_else(|| {
                    ExecutionError::function_error("check", "no authorizer is available here")
                })?;
                Ok::<_, ExecutionError>(value(Authz::Decision {
                    allowed: verdict.allowed,
                    reason: verdict.reason,
                }))
            },
        ),
    );
    let decision = |function: &'static str, read: fn(bool, &str) -> Cel| {
        move |This(v): This<Arc<dyn Opaque>>| match this(&v, function)? {
            Authz::Decision { allowed, reason } => Ok(read(allowed, &reason)),
            other => Err(wrong(function, &other)),
        }
    };
    add(
        "allowed",
        ctx.add_function("allowed", decision("allowed", |a, _| Cel::Bool(a))),
    );
    add(
        "reason",
        ctx.add_function(
            "reason",
            decision("reason", |_, r| Cel::String(Arc::new(r.to_string()))),
        ),
    );
    add(
        "errored",
        ctx.add_function("errored", decision("errored", |_, _| Cel::Bool(false))),
    );
    add(
        "error",
        ctx.add_function(
            "error",
            decision("error", |_, _| Cel::String(Arc::new(String::new()))),
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::expression::{Expression, Variables};

    #[test]
    fn checks_ask_the_installed_authorizer() {
        let e = Expression::compile(
            "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('d').check('update').allowed() \
             && !authorizer.requestResource.check('delete').allowed() \
             && authorizer.path('/healthz').check('get').reason() == 'path /healthz' \
             && authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed() \
             && !authorizer.group('').resource('x').check('get').errored()",
            &["authorizer"],
        )
        .unwrap();
        let request = RequestResource {
            group: "".into(),
            resource: "configmaps".into(),
            namespace: "ns".into(),
            name: "cm".into(),
            subresource: String::new(),
        };
        let vars = Variables::default().bind_value("authorizer", authorizer(request));
        let asked = Rc::new(RefCell::new(Vec::new()));
        let log = asked.clone();
        let allowed = with_authorizer(
            Rc::new(move |c: &Check| {
                log.borrow_mut().push(c.clone());
                Verdict {
                    allowed: c.verb != "delete",
                    reason: c
                        .path
                        .as_ref()
                        .map_or(String::new(), |p| format!("path {p}")),
                }
            }),
            || e.evaluate_bool(&vars, &mut 1000),
        );
        assert!(allowed.unwrap());
        let asked = asked.borrow();
        assert_eq!(
            asked[0],
            Check {
                group: "apps".into(),
                resource: "deployments".into(),
                subresource: "scale".into(),
                namespace: "ns".into(),
                name: "d".into(),
                verb: "update".into(),
                ..Check::default()
            }
        );
        assert_eq!(
            (asked[1].resource.as_str(), asked[1].name.as_str()),
            ("configmaps", "cm")
        );
        assert_eq!(asked[3].service_account, Some(("ns".into(), "sa".into())));
        // Outside an admission evaluation there is no one to ask.
        let err = e.evaluate_bool(&vars, &mut 1000).unwrap_err();
        assert!(err.contains("no authorizer"), "{err}");
    }
}
