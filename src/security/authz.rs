//! Authorization: the ordered union of `--authorization-mode` authorizers
//! behind the system:masters short cut kube-apiserver always puts first.
//! The first authorizer with an opinion (allow or deny) decides; none
//! means forbidden, with the reasons the authorizers gave. A place for
//! the Webhook authorizer is in [`Mode`].

use super::Security;
use kubeshard_cache::Hub;
use kubeshard_core::authn::{Attributes, UserInfo, MASTERS};
use kubeshard_core::nodeauthz;
use kubeshard_core::rbac::{Allowed, PolicyRule};
use kubeshard_core::status::ApiError;
use std::cell::RefCell;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    AlwaysAllow,
    AlwaysDeny,
    Rbac,
    /// kube's Node authorizer: kubelets read only what their pods use.
    Node,
    // Webhook takes its place here.
}

impl Mode {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "AlwaysAllow" => Ok(Mode::AlwaysAllow),
            "AlwaysDeny" => Ok(Mode::AlwaysDeny),
            "RBAC" => Ok(Mode::Rbac),
            "Node" => Ok(Mode::Node),
            "Webhook" | "ABAC" => Err(format!("--authorization-mode {s} is not supported yet")),
            other => Err(format!("unknown --authorization-mode {other:?}")),
        }
    }
}

/// Why a request may proceed.
pub enum Reason {
    Masters,
    AlwaysAllow,
    Node,
    Rbac(Allowed),
}

pub enum Decision {
    Allow(Reason),
    Deny(&'static str),
    /// No authorizer allowed it; what those with a reason said.
    NoOpinion(String),
}

impl Decision {
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The text kube puts in `authorization.k8s.io/reason` and reviews.
    pub fn reason(&self, user: &UserInfo) -> String {
        match self {
            Decision::Allow(Reason::Masters | Reason::AlwaysAllow | Reason::Node) => String::new(),
            Decision::Allow(Reason::Rbac(a)) => a.reason(user),
            Decision::Deny(r) => r.to_string(),
            Decision::NoOpinion(r) => r.clone(),
        }
    }
}

/// One decision from this executor's state as it is now.
pub fn decide(sec: &Security, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.in_group(MASTERS) {
        return Decision::Allow(Reason::Masters);
    }
    // kube's union authorizer joins the reasons of those that passed.
    let mut reasons = String::new();
    for mode in &sec.config.modes {
        match mode {
            Mode::AlwaysAllow => return Decision::Allow(Reason::AlwaysAllow),
            Mode::AlwaysDeny => return Decision::Deny("Everything is forbidden."),
            Mode::Rbac => {
                if let Some(a) = sec.rbac.borrow().authorize(user, attrs) {
                    return Decision::Allow(Reason::Rbac(a));
                }
            }
            Mode::Node => {
                let graph = sec.node_graph.borrow();
                match nodeauthz::authorize(user, attrs, &graph, nodeauthz::node_rules()) {
                    Some(Ok(())) => return Decision::Allow(Reason::Node),
                    Some(Err(why)) if !why.is_empty() => {
                        if !reasons.is_empty() {
                            reasons.push('\n');
                        }
                        reasons.push_str(&why);
                    }
                    _ => {}
                }
            }
        }
    }
    Decision::NoOpinion(reasons)
}

/// A decision that does not deny on stale state: a request that would be
/// refused is decided again once this executor's RBAC index has caught up
/// with every write acknowledged before the request arrived (a binding
/// created a moment ago on another core counts).
pub async fn decide_fresh(
    sec: &Security,
    hub: &RefCell<Hub>,
    user: &UserInfo,
    attrs: &Attributes,
    arrived_at: u64,
) -> Decision {
    let first = decide(sec, user, attrs);
    if first.allowed() {
        return first;
    }
    // A kubelet asks for a pod's Secret right after the pod was bound to
    // it: the node graph must have seen the binding.
    let node_graph_may_lag =
        sec.config.modes.contains(&Mode::Node) && nodeauthz::node_identity(user).is_some();
    let rbac_may_lag =
        sec.config.modes.contains(&Mode::Rbac) && sec.rbac.borrow().revision() < arrived_at;
    if !node_graph_may_lag && !rbac_may_lag {
        return first;
    }
    sec.informers.catch_up(hub, arrived_at).await;
    decide(sec, user, attrs)
}

/// The authorization filter: Ok with the decision, or 403.
pub async fn authorize(
    sec: &Security,
    hub: &RefCell<Hub>,
    user: &UserInfo,
    attrs: &Attributes,
    arrived_at: u64,
) -> Result<Decision, ApiError> {
    let d = decide_fresh(sec, hub, user, attrs, arrived_at).await;
    if d.allowed() {
        return Ok(d);
    }
    Err(forbidden(user, attrs, &d.reason(user)))
}

/// kube's 403 for a refused request.
pub fn forbidden(user: &UserInfo, attrs: &Attributes, reason: &str) -> ApiError {
    let mut msg = attrs.forbidden_reason(&user.name);
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    if attrs.resource_request {
        ApiError::forbidden(&attrs.api_group, &attrs.resource, &attrs.name, &msg)
    } else {
        ApiError::forbidden("", "", "", &msg)
    }
}

/// Everything `user` may do in `namespace`, for SelfSubjectRulesReview
/// and escalation checks: (rules, evaluation errors).
pub fn rules_for(
    sec: &Security,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<String>) {
    let everything = || {
        vec![
            PolicyRule::resources(&["*"], &["*"], &["*"]),
            PolicyRule::urls(&["*"], &["*"]),
        ]
    };
    if user.in_group(MASTERS) {
        return (everything(), vec![]);
    }
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for mode in &sec.config.modes {
        match mode {
            Mode::AlwaysAllow => rules.extend(everything()),
            // The union stops at a denying authorizer: nothing after it
            // can grant anything.
            Mode::AlwaysDeny => break,
            Mode::Rbac => {
                let (r, e) = sec.rbac.borrow().rules_for(user, namespace);
                rules.extend(r);
                errors.extend(e);
            }
            // What a node may do depends on the object, not only on rules.
            Mode::Node if nodeauthz::node_identity(user).is_some() => {
                errors.push("node authorizer does not support user rule resolution".into());
            }
            Mode::Node => {}
        }
    }
    (rules, errors)
}
