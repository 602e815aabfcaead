//! RBAC escalation prevention, applied where Roles, ClusterRoles and their
//! bindings are written (kube does this in the RBAC registry, not in
//! admission):
//!
//! - a role may be created or changed only by someone who holds every
//!   permission it grants, or who may `escalate` on it;
//! - a binding may be created or changed only by someone who holds every
//!   permission of the role it references, or who may `bind` that role;
//! - a ClusterRole with an aggregationRule needs cluster-admin powers;
//! - members of system:masters are exempt.
//!
//! A binding's roleRef cannot change after creation (422).

use super::store::Target;
use crate::context::Api;
use crate::security::authz::{decide, rules_for};
use crate::storage::{Storage, StorageResult};
use kubeshard_cache::StoredObject;
use kubeshard_core::authn::{Attributes, UserInfo, MASTERS};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::rbac::covers::uncovered;
use kubeshard_core::rbac::types::{role_ref_of, rules_of};
use kubeshard_core::rbac::{rule_allows, PolicyRule, RbacKind, RoleRef, GROUP};
use kubeshard_core::status::{field_invalid, ApiError};
use serde_json::Value;
use std::sync::Arc;

fn kind_of(info: &ResourceInfo) -> Option<RbacKind> {
    (info.group == GROUP)
        .then(|| RbacKind::from_plural(&info.plural))
        .flatten()
}

fn may(api: &Api, user: &UserInfo, verb: &str, resource: &str, ns: &str, name: &str) -> bool {
    decide(
        &api.security,
        user,
        &Attributes::resource(verb, GROUP, resource, ns, name),
    )
    .allowed()
}

/// The check for one write, carrying only owned data so it can run on
/// the shard that owns the object (another core, for an update).
#[derive(Clone)]
enum Check {
    /// The new role's rules must be covered by `owner`.
    Role {
        owner: Vec<PolicyRule>,
        errors: Vec<String>,
        full_authority: bool,
    },
    /// The role `role_ref` names must be bindable by the writer or covered
    /// by `owner`.
    /// The rules of the roles the binding may reference (just its own
    /// roleRef's when that is known in advance), with the binding's
    /// namespace for the `bind` check.
    Binding {
        owner: Vec<PolicyRule>,
        errors: Vec<String>,
        namespace: String,
        roles: Vec<(RoleRef, Arc<[PolicyRule]>)>,
    },
}

fn everything() -> [PolicyRule; 2] {
    [
        PolicyRule::resources(&["*"], &["*"], &["*"]),
        PolicyRule::urls(&["*"], &["*"]),
    ]
}

/// What to check for a write of `kind` named `name` in `ns` (None when
/// the writer is exempt). A binding's check is for `role_ref`; when that
/// is not known yet (a binding created by an update or an apply), the
/// check carries every role the binding could reference.
fn prepare(
    api: &Api,
    user: &UserInfo,
    kind: RbacKind,
    ns: &str,
    name: &str,
    role_ref: Option<RoleRef>,
) -> Option<Check> {
    if user.in_group(MASTERS) {
        return None;
    }
    let (owner, errors) = rules_for(&api.security, user, ns);
    if !kind.is_binding() {
        if may(api, user, "escalate", kind.plural(), ns, name) {
            return None;
        }
        let full_authority = uncovered(&owner, &everything()).is_empty();
        return Some(Check::Role {
            owner,
            errors,
            full_authority,
        });
    }
    let idx = api.security.rbac.borrow();
    let roles = match role_ref {
        Some(r) => idx
            .resolve(&r, ns)
            .map(|rules| vec![(r, rules.clone())])
            .unwrap_or_default(),
        None => idx.referable_roles(ns),
    };
    Some(Check::Binding {
        owner,
        errors,
        namespace: ns.to_string(),
        roles,
    })
}

fn escalation_error(
    user: &UserInfo,
    plural: &str,
    name: &str,
    missing: &[PolicyRule],
    errors: &[String],
) -> ApiError {
    let groups = user
        .groups
        .iter()
        .map(|g| format!("{g:?}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut msg = format!(
        "user {:?} (groups=[{groups}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        missing
            .iter()
            .map(PolicyRule::compact)
            .collect::<Vec<_>>()
            .join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    ApiError::forbidden(GROUP, plural, name, &msg)
}

impl Check {
    fn run(&self, user: &UserInfo, plural: &str, obj: &Value) -> Result<(), ApiError> {
        let name = kubeshard_core::meta::name(obj);
        let (owner, errors, wanted) = match self {
            Check::Role {
                owner,
                errors,
                full_authority,
            } => {
                if obj.get("aggregationRule").is_some_and(|a| !a.is_null()) && !full_authority {
                    return Err(ApiError::forbidden(
                        GROUP,
                        plural,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    ));
                }
                (owner, errors, rules_of(obj))
            }
            Check::Binding {
                owner,
                errors,
                namespace,
                roles,
            } => {
                let role_ref = role_ref_of(obj);
                let resource = if role_ref.kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                };
                // `bind` is decided from the same rules the authorizer
                // would use for this namespace.
                let bind = Attributes::resource("bind", GROUP, resource, namespace, &role_ref.name);
                if owner.iter().any(|r| rule_allows(&bind, r)) {
                    return Ok(());
                }
                let Some((_, rules)) = roles.iter().find(|(r, _)| *r == role_ref) else {
                    let what = if role_ref.kind == "Role" {
                        "role"
                    } else {
                        "clusterrole"
                    };
                    return Err(ApiError::forbidden(
                        GROUP,
                        plural,
                        name,
                        &format!(
                            "{what}.rbac.authorization.k8s.io {:?} not found",
                            role_ref.name
                        ),
                    ));
                };
                (owner, errors, rules.to_vec())
            }
        };
        let missing = uncovered(owner, &wanted);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(escalation_error(user, plural, name, &missing, errors))
        }
    }
}

/// Refuses creating an RBAC object that would escalate the writer.
pub async fn check_create(
    api: &Api,
    user: &UserInfo,
    info: &ResourceInfo,
    namespace: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    let Some(kind) = kind_of(info) else {
        return Ok(());
    };
    catch_up(api).await;
    // Judged as it will be stored: a roleRef without an apiGroup names
    // the RBAC group.
    let mut obj = obj.clone();
    kubeshard_core::defaults::apply(&info.group, &info.kind, &mut obj);
    let role_ref = kind.is_binding().then(|| role_ref_of(&obj));
    let name = kubeshard_core::meta::name(&obj);
    match prepare(api, user, kind, namespace, name, role_ref) {
        Some(c) => c.run(user, &info.plural, &obj),
        None => Ok(()),
    }
}

/// What an update (PUT, PATCH, apply, dry run or not) of an RBAC object
/// must satisfy on its way to storage: no escalation, and a binding's
/// roleRef unchanged. Decided here, where the RBAC index is, and carried
/// to the write, which may run on another shard.
#[derive(Clone)]
pub struct EscalationCheck {
    binding: bool,
    /// The roleRef of the binding as stored when the check was prepared;
    /// None when there was none (the write can only create it).
    expected_ref: Option<RoleRef>,
    check: Option<Check>,
}

impl EscalationCheck {
    pub fn run(
        &self,
        user: &UserInfo,
        info: &ResourceInfo,
        old: Option<&Arc<StoredObject>>,
        new: &Value,
    ) -> Result<(), ApiError> {
        if let (Some(old), true) = (old, self.binding) {
            let before = role_ref_of(&old.to_value());
            let name = kubeshard_core::meta::name(new);
            if role_ref_of(new) != before {
                return Err(ApiError::invalid(
                    &info.group,
                    &info.kind,
                    name,
                    vec![field_invalid(
                        "roleRef",
                        &serde_json::to_string(&before).unwrap_or_default(),
                        "cannot change roleRef",
                    )],
                ));
            }
            if self.expected_ref.as_ref() != Some(&before) {
                return Err(ApiError::conflict_stale(&info.group, &info.plural, name));
            }
        }
        match &self.check {
            Some(check) => check.run(user, &info.plural, new),
            None => Ok(()),
        }
    }
}

/// The check an update of an RBAC object needs (None for other kinds).
pub async fn prepare_update(
    api: &Api,
    user: &UserInfo,
    t: &Target<'_>,
) -> Result<Option<EscalationCheck>, ApiError> {
    let Some(kind) = kind_of(t.info) else {
        return Ok(None);
    };
    catch_up(api).await;
    // A binding's roleRef cannot change, so the stored one is the one to
    // check; the write re-checks that it still is.
    let mut expected_ref = None;
    if kind.is_binding() {
        let current = api
            .storage()
            .get(&t.info.storage_key, t.namespace, t.name)
            .await
            .or_status()?;
        expected_ref = current.map(|c| role_ref_of(&c.to_value()));
    }
    // Without a stored binding the write can only be a create (an apply,
    // or a PUT): the check then carries every role the new binding could
    // reference and judges the one it does.
    let check = prepare(api, user, kind, t.namespace, t.name, expected_ref.clone());
    Ok(Some(EscalationCheck {
        binding: kind.is_binding(),
        expected_ref,
        check,
    }))
}

/// Decisions about escalation use an index that has seen every write
/// acknowledged so far.
async fn catch_up(api: &Api) {
    let closed = api.storage().progress();
    api.security.informers.catch_up(&api.exec.hub, closed).await;
}
