//! The registry Store: the one way every write reaches storage (kube's
//! `registry/generic/registry.Store`), whoever makes it — a request's
//! handler, a built-in controller, the server's own bootstrap.
//!
//! It owns the order of a write: namespace lifecycle and the other
//! mutating admission plugins → the kind's strategy (defaults, server
//! fields, what the addressed part may change, validation, field
//! ownership) → the RBAC registry's escalation check → validating
//! admission → storage → waiting until the write is visible (the closed
//! revision covers it) → the stored object. A dry run goes through the
//! same steps and stops before storage.
//!
//! An update has two ways to storage. When no admission plugin has
//! anything to do with it (the common case: the default chain only
//! guards creates and namespace deletions), the whole read-modify-write
//! runs on the shard that owns the object, in one step: no read before,
//! no conflict possible. Otherwise the object is read, the update and
//! the (possibly asynchronous) admission run here, against that old
//! object, and the result is written only if the object is still the one
//! read — and all of it again on a conflict, as kube's guaranteed update
//! does. A fast-path update that finds it would create an object admission
//! must see first steps back to the slow path.

use super::rbac_escalation::{self as escalation, EscalationCheck};
use super::service_alloc::{self, Taken};
use super::strategy::{shape, Ownership, Part};
use crate::admission::{Admission, Attributes, Operation, Options};
use crate::context::Api;
use crate::security::authz;
use crate::storage::{status_error, Storage, StorageError, StorageResult, UpdateFn, UpdateStep};
use kubeshard_cache::StoredObject;
use kubeshard_core::authn::UserInfo;
use kubeshard_core::catalog::{KindHooks, ResourceInfo, ScaleSpec};
use kubeshard_core::meta;
use kubeshard_core::registry::certificates;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::registry::scale::{replicas_of, scale_of, set_replicas};
use kubeshard_core::registry::should_delete_during_update;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::{DeleteOutcome, UpdateOutcome};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits to become visible before answering anyway.
const VISIBLE_WAIT: Duration = Duration::from_secs(5);

/// How often a conflicting update is tried again before giving up (kube
/// retries until its context ends; a conflict here means another writer
/// got in between this one's read and write, so every lost round is
/// another writer's success and the bound is only a backstop).
const MAX_ATTEMPTS: usize = 256;

/// Who writes, and how.
#[derive(Clone, Copy)]
pub struct Writer<'a> {
    pub user: &'a Arc<UserInfo>,
    pub dry_run: bool,
    /// Where admission's warnings and audit annotations go (none for the
    /// server's own writes).
    pub notes: Option<&'a crate::render::warnings::Warnings>,
}

/// What an update addresses.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub info: &'a Arc<ResourceInfo>,
    /// Empty for cluster-scoped kinds.
    pub namespace: &'a str,
    pub name: &'a str,
    pub subresource: &'a str,
}

/// The stored object, decoded, that an update starts from.
#[derive(Clone, Copy)]
pub struct Old<'a> {
    pub stored: &'a Arc<StoredObject>,
    pub value: &'a Value,
}

/// The object an update asks for, given the stored one (None: there is
/// none). Runs again when a conflicting writer got in first.
pub type Requested = Box<dyn FnMut(Option<Old<'_>>) -> Result<Value, ApiError> + Send>;

/// Whether an update may create the object it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creates {
    Never,
    Allowed,
}

/// The result of an update.
pub struct Written {
    pub object: Arc<StoredObject>,
    /// The update created the object (201).
    pub created: bool,
    /// Warnings for the client about what was written.
    pub warnings: Vec<String>,
}

/// One try at storing a new object.
enum Attempt {
    Stored(Arc<StoredObject>),
    /// The generated name was taken; another may not be.
    NameTaken(ApiError),
}

const CHANGED_MEANWHILE: &str = "the object changed while it was being updated";

/// The conflict that sends an update round again: another writer changed
/// the object between this one's read and its write.
fn changed_meanwhile() -> ApiError {
    ApiError::new(409, "Conflict", CHANGED_MEANWHILE)
}

fn is_changed_meanwhile(e: &ApiError) -> bool {
    e.code == 409 && e.message == CHANGED_MEANWHILE
}

/// The fast path's way of saying "this one creates, and admission must see
/// it": not an answer any client gets.
fn needs_admission() -> ApiError {
    ApiError::new(0, "NeedsAdmission", "")
}

pub struct Store<'a> {
    api: &'a Api,
}

impl<'a> Store<'a> {
    pub fn new(api: &'a Api) -> Self {
        Self { api }
    }

    fn admission(&self) -> &Admission {
        &self.api.admission
    }

    /// Admits a create on a subresource that is not stored as an object
    /// of its own (an Eviction, a TokenRequest), as kube runs those
    /// through the chain: plugins see the request body as the new object.
    pub async fn admit_subresource_create(
        &self,
        w: Writer<'_>,
        info: &ResourceInfo,
        subresource: &str,
        namespace: &str,
        name: &str,
        body: &mut Value,
    ) -> Result<(), ApiError> {
        let attrs = Attributes {
            operation: Operation::Create,
            resource: info,
            subresource,
            namespace,
            name,
            old_object: None,
            user: w.user,
            dry_run: w.dry_run,
            options: Options::Create { field_manager: "" },
            api: self.api,
            notes: w.notes,
            reinvocation: Default::default(),
        };
        if !self.admission().handles(&attrs) {
            return Ok(());
        }
        self.admission().admit(&attrs, Some(body)).await?;
        self.admission().validate(&attrs, Some(body)).await
    }

    /// POST: creates `obj` (already type-checked and bound to its
    /// namespace), answering the stored object. With `generateName` and no
    /// name, a few random names are tried.
    pub async fn create(
        &self,
        w: Writer<'_>,
        info: &Arc<ResourceInfo>,
        mut obj: Value,
        ownership: Ownership,
    ) -> Result<Arc<StoredObject>, ApiError> {
        if info.custom.as_ref().is_some_and(|c| c.terminating) {
            return Err(ApiError::new(
                403,
                "Forbidden",
                "create not allowed while custom resource definition is terminating",
            ));
        }
        let namespace = meta::namespace(&obj).to_string();
        escalation::check_create(self.api, w.user, info, &namespace, &obj).await?;
        let name = meta::name(&obj).to_string();
        let attrs = Attributes {
            operation: Operation::Create,
            resource: info,
            subresource: "",
            namespace: &namespace,
            name: &name,
            old_object: None,
            user: w.user,
            dry_run: w.dry_run,
            options: Options::Create {
                field_manager: ownership.manager(),
            },
            api: self.api,
            notes: w.notes,
            reinvocation: Default::default(),
        };
        self.admission().admit(&attrs, Some(&mut obj)).await?;
        if info.strategy.kind_hooks == KindHooks::CertificateSigningRequest {
            certificates::stamp_requester(&mut obj, w.user);
        }
        let generate = meta::name(&obj).is_empty()
            && meta::meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty());
        let attempts = if generate { GENERATE_NAME_ATTEMPTS } else { 1 };
        let mut last_err = None;
        for attempt in 1..=attempts {
            // The last attempt (the only one, unless the name is generated)
            // takes the object itself: copying it was a measurable share of
            // a create.
            let mut candidate = if attempt == attempts {
                std::mem::take(&mut obj)
            } else {
                obj.clone()
            };
            if generate {
                let prefix = meta::meta_str(&candidate, "generateName")
                    .unwrap_or("")
                    .to_string();
                meta::set_meta(
                    &mut candidate,
                    "name",
                    Value::String(format!(
                        "{prefix}{}",
                        kubeshard_core::validation::generate_name_suffix(&mut rand::thread_rng())
                    )),
                );
            }
            // A Service's cluster IPs and node ports are reserved before
            // it is stored, and given back if it is not.
            let taken = if info.strategy.kind_hooks == KindHooks::Service {
                service_alloc::before_write(self.api, &mut candidate, None, w.dry_run).await?
            } else {
                Taken::default()
            };
            let held_by = (!taken.is_empty()).then(|| meta::name(&candidate).to_string());
            let attempt = self
                .store_new(w, info, &attrs, &ownership, candidate, generate)
                .await;
            if let (Some(held_by), false) = (held_by, matches!(attempt, Ok(Attempt::Stored(_)))) {
                service_alloc::undo(self.api, &namespace, &held_by, taken).await;
            }
            match attempt? {
                Attempt::Stored(stored) => return Ok(stored),
                Attempt::NameTaken(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| ApiError::internal("name generation failed")))
    }

    /// One try at storing a new object (its name final): strategy,
    /// validating admission, storage. A generated name already taken
    /// answers [`Attempt::NameTaken`], so the caller draws another.
    async fn store_new(
        &self,
        w: Writer<'_>,
        info: &Arc<ResourceInfo>,
        attrs: &Attributes<'_>,
        ownership: &Ownership,
        candidate: Value,
        generate: bool,
    ) -> Result<Attempt, ApiError> {
        let namespace = attrs.namespace;
        let prepared = shape(info, Part::Main, ownership, candidate, None)?;
        self.admission().validate(attrs, Some(&prepared)).await?;
        let shards = self.api.storage();
        if w.dry_run {
            // Creating over an existing object fails the same way dry.
            let existing = shards
                .get(&info.storage_key, namespace, meta::name(&prepared))
                .await
                .or_status()?;
            if existing.is_some() {
                let e = ApiError::already_exists(&info.group, &info.plural, meta::name(&prepared));
                return if generate {
                    Ok(Attempt::NameTaken(e))
                } else {
                    Err(e)
                };
            }
            return Ok(Attempt::Stored(Arc::new(StoredObject::encode(
                info, &prepared, 0,
            ))));
        }
        // Named in errors; only a generated name needs keeping (a copy per
        // create otherwise, for the error path alone).
        let generated = generate.then(|| meta::name(&prepared).to_string());
        let candidate_name = generated.as_deref().unwrap_or(attrs.name);
        match shards.create(info, prepared).await {
            Ok(stored) => {
                self.wait_visible(stored.revision).await;
                Ok(Attempt::Stored(stored))
            }
            Err(StorageError::AlreadyExists) if generate => Ok(Attempt::NameTaken(status_error(
                StorageError::AlreadyExists,
                info,
                candidate_name,
            ))),
            Err(StorageError::AlreadyExists) => {
                let e = status_error(StorageError::AlreadyExists, info, attrs.name);
                Err(self.being_deleted(info, namespace, attrs.name, e).await)
            }
            Err(e) => Err(status_error(e, info, candidate_name)),
        }
    }

    /// PUT, PATCH, apply and the subresources: the object `requested`
    /// asks for, shaped by the strategy of the addressed part, admitted and
    /// stored. `creates` says whether a missing object may be created
    /// (then only by a writer allowed to create it).
    pub async fn update(
        &self,
        w: Writer<'_>,
        t: Target<'_>,
        requested: Requested,
        ownership: Ownership,
        creates: Creates,
    ) -> Result<Written, ApiError> {
        let part = Part::of(t.subresource);
        let create_refusal = match creates {
            Creates::Allowed => create_refusal(self.api, w.user, &t).await,
            Creates::Never => None,
        };
        let check = escalation::prepare_update(self.api, w.user, &t).await?;
        let requested = Arc::new(Mutex::new(requested));
        let admission_sees = |op| {
            self.admission().handles(&Attributes {
                operation: op,
                resource: t.info,
                subresource: t.subresource,
                namespace: t.namespace,
                name: t.name,
                old_object: None,
                user: w.user,
                dry_run: w.dry_run,
                options: Options::Update {
                    field_manager: ownership.manager(),
                },
                api: self.api,
                notes: w.notes,
                reinvocation: Default::default(),
            })
        };
        // A Service's writes need more than its own shard (its cluster
        // IPs and node ports), so they go the slow way.
        let is_service = t.info.strategy.kind_hooks == KindHooks::Service;
        let admit_updates = admission_sees(Operation::Update) || is_service;
        // A create by PUT goes the slow way when admission must see it.
        let admit_creates =
            creates == Creates::Allowed && (admission_sees(Operation::Create) || is_service);
        let guards = Guards {
            check,
            create_refusal,
            creates,
            user: w.user.clone(),
        };
        if !w.dry_run && !admit_updates {
            let fast = self
                .api
                .storage()
                .guaranteed_update(
                    t.info,
                    t.namespace,
                    t.name,
                    on_shard(
                        t.info.clone(),
                        part,
                        ownership.clone(),
                        requested.clone(),
                        guards.clone(),
                        admit_creates,
                    ),
                )
                .await
                .for_object(t.info, t.name);
            match fast {
                Err(e) if e.code == 0 => {} // a create admission must see
                Err(e) => return Err(e),
                Ok(outcome) => return Ok(self.written(outcome).await),
            }
        }
        for _ in 0..MAX_ATTEMPTS {
            match self
                .update_after_read(w, &t, part, &ownership, &requested, &guards)
                .await
            {
                Err(e) if is_changed_meanwhile(&e) => {
                    // The write that got in may still be on its way to
                    // durable storage, where a read does not see it yet:
                    // read again once everything drawn so far is visible.
                    let drawn = self.api.storage().current_revision();
                    self.wait_visible(drawn).await;
                }
                other => return other,
            }
        }
        Err(ApiError::conflict(
            &t.info.group,
            &t.info.plural,
            t.name,
            "the object kept changing while it was being updated; please try again",
        ))
    }

    /// One round of the slow path: read, update and admit here, write only
    /// if the object is still the one read.
    async fn update_after_read(
        &self,
        w: Writer<'_>,
        t: &Target<'_>,
        part: Part,
        ownership: &Ownership,
        requested: &Arc<Mutex<Requested>>,
        guards: &Guards,
    ) -> Result<Written, ApiError> {
        let shards = self.api.storage();
        let current = shards
            .get(&t.info.storage_key, t.namespace, t.name)
            .await
            .or_status()?;
        let old_value = current.as_ref().map(|c| c.to_value());
        let old = current
            .as_ref()
            .zip(old_value.as_ref())
            .map(|(stored, value)| Old { stored, value });
        if old.is_none() && guards.creates == Creates::Never {
            // The requested function answers as the write would (404, or
            // its own error); nothing can be created.
            (requested.lock())(None)?;
            return Err(ApiError::not_found(&t.info.group, &t.info.plural, t.name));
        }
        let mut new = (requested.lock())(old)?;
        // kube admits a write to a `scale` subresource as a Scale: the
        // plugins see the autoscaling/v1 view (old and new), and what a
        // mutating one does to its replicas goes back to the object.
        let scale = scale_subresource(t.info, t.subresource);
        let old_view = match scale {
            Some(spec) => old_value.as_ref().map(|o| scale_of(spec, o)).transpose()?,
            None => None,
        };
        let attrs = Attributes {
            operation: if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            },
            resource: t.info,
            subresource: t.subresource,
            namespace: t.namespace,
            name: t.name,
            old_object: if scale.is_some() {
                old_view.as_ref()
            } else {
                old_value.as_ref()
            },
            user: w.user,
            dry_run: w.dry_run,
            options: if old.is_some() {
                Options::Update {
                    field_manager: ownership.manager(),
                }
            } else {
                Options::Create {
                    field_manager: ownership.manager(),
                }
            },
            api: self.api,
            notes: w.notes,
            reinvocation: Default::default(),
        };
        match scale {
            Some(spec) => {
                let mut view = scale_of(spec, &new)?;
                let asked = replicas_of(&view);
                self.admission().admit(&attrs, Some(&mut view)).await?;
                if replicas_of(&view) != asked {
                    set_replicas(spec, &mut new, replicas_of(&view));
                }
            }
            None => self.admission().admit(&attrs, Some(&mut new)).await?,
        }
        // A Service gets (and gives up) cluster IPs and node ports as its
        // type and ports change; one created by PUT as a POSTed one does.
        let is_service = t.info.strategy.kind_hooks == KindHooks::Service;
        let taken = if is_service {
            service_alloc::before_write(self.api, &mut new, old_value.as_ref(), w.dry_run).await?
        } else {
            Taken::default()
        };
        let written = self
            .store_update(
                w,
                t,
                part,
                ownership,
                &attrs,
                new,
                current.as_ref(),
                old_value.as_ref(),
                guards,
            )
            .await;
        match (&written, old_value.as_ref()) {
            (Err(_), _) if !taken.is_empty() => {
                service_alloc::undo(self.api, t.namespace, t.name, taken).await;
            }
            (Ok(stored), Some(old)) if is_service && !w.dry_run => {
                let new = stored.object.to_value();
                service_alloc::after_update(self.api, t.namespace, t.name, old, &new).await;
            }
            _ => {}
        }
        written
    }

    /// The end of one slow-path round: shape, guards, validating
    /// admission, and the write if the object is still the one read.
    #[allow(clippy::too_many_arguments)]
    async fn store_update(
        &self,
        w: Writer<'_>,
        t: &Target<'_>,
        part: Part,
        ownership: &Ownership,
        attrs: &Attributes<'_>,
        new: Value,
        current: Option<&Arc<StoredObject>>,
        old_value: Option<&Value>,
        guards: &Guards,
    ) -> Result<Written, ApiError> {
        let shards = self.api.storage();
        let new = shape(t.info, part, ownership, new, old_value)?;
        guards.check(t.info, current, &new)?;
        match scale_subresource(t.info, t.subresource) {
            Some(spec) => {
                let view = scale_of(spec, &new)?;
                self.admission().validate(attrs, Some(&view)).await?;
            }
            None => self.admission().validate(attrs, Some(&new)).await?,
        }
        if w.dry_run {
            // The answer carries the current resourceVersion: nothing new
            // was drawn.
            let revision = current.map_or(0, |c| c.revision);
            let mut new = new;
            if revision > 0 {
                meta::set_meta(
                    &mut new,
                    "resourceVersion",
                    Value::String(revision.to_string()),
                );
            }
            return Ok(Written {
                object: Arc::new(StoredObject::encode(t.info, &new, revision)),
                created: current.is_none(),
                warnings: Vec::new(),
            });
        }
        let expected = current.map(|c| c.revision);
        let mut new = Some(step(t.info, new, old_value));
        let outcome = shards
            .guaranteed_update(
                t.info,
                t.namespace,
                t.name,
                Box::new(move |now: Option<&Arc<StoredObject>>| {
                    if now.map(|c| c.revision) != expected {
                        return Err(changed_meanwhile());
                    }
                    new.take().ok_or_else(changed_meanwhile)
                }),
            )
            .await
            .for_object(t.info, t.name)?;
        Ok(self.written(outcome).await)
    }

    async fn written(&self, outcome: UpdateOutcome) -> Written {
        let created = matches!(outcome, UpdateOutcome::Created(_));
        let object = outcome.object().clone();
        self.wait_visible(object.revision).await;
        Written {
            object,
            created,
            warnings: Vec::new(),
        }
    }

    /// DELETE of one object, with kube's lifecycle (preconditions,
    /// graceful deletion, finalizers, propagation), after admission.
    pub async fn delete(
        &self,
        w: Writer<'_>,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let mut attrs = Attributes {
            operation: Operation::Delete,
            resource: info,
            subresource: "",
            namespace,
            name,
            old_object: None,
            user: w.user,
            dry_run: w.dry_run || opts.dry_run,
            options: Options::Delete(opts),
            api: self.api,
            notes: w.notes,
            reinvocation: Default::default(),
        };
        if self.admission().handles(&attrs) {
            let old = self
                .api
                .storage()
                .get(&info.storage_key, namespace, name)
                .await
                .or_status()?
                .map(|o| o.to_value());
            attrs.old_object = old.as_ref();
            // As kube's: a deletion has no new object; plugins see the
            // one being deleted as the old object.
            self.admission().admit(&attrs, None).await?;
            self.admission().validate(&attrs, None).await?;
        }
        let mut opts = opts.clone();
        opts.dry_run |= w.dry_run;
        let outcome = super::delete(
            self.api.storage(),
            info,
            namespace,
            name,
            &opts,
            self.api.config.enable_garbage_collector,
        )
        .await?;
        if let (KindHooks::Service, DeleteOutcome::Deleted(gone), false) =
            (info.strategy.kind_hooks, &outcome, opts.dry_run)
        {
            service_alloc::after_delete(self.api, namespace, name, &gone.to_value()).await;
        }
        Ok(outcome)
    }

    async fn wait_visible(&self, revision: u64) {
        self.api
            .storage()
            .wait_progress(revision, VISIBLE_WAIT)
            .await;
    }

    /// kube tells a client whose name clashes with an object on its way
    /// out that this is why.
    async fn being_deleted(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        mut err: ApiError,
    ) -> ApiError {
        let existing = self
            .api
            .storage()
            .get(&info.storage_key, namespace, name)
            .await;
        if let Ok(Some(o)) = existing {
            if meta::meta_str(&o.to_value(), "deletionTimestamp").is_some() {
                err.message = format!("object is being deleted: {}", err.message);
            }
        }
        err
    }
}

/// Attempts at a fresh random name before giving up (kube retries too).
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// What an update must satisfy beyond its kind's validation, decided on
/// this executor (where the RBAC index is) and carried to the write.
#[derive(Clone)]
struct Guards {
    /// RBAC escalation and a binding's immutable roleRef.
    check: Option<EscalationCheck>,
    /// Why this writer may not create the object, if it may not.
    create_refusal: Option<ApiError>,
    creates: Creates,
    user: Arc<UserInfo>,
}

impl Guards {
    fn check(
        &self,
        info: &ResourceInfo,
        old: Option<&Arc<StoredObject>>,
        new: &Value,
    ) -> Result<(), ApiError> {
        if old.is_none() {
            if let Some(e) = &self.create_refusal {
                return Err(e.clone());
            }
        }
        match &self.check {
            Some(c) => c.run(&self.user, info, old, new),
            None => Ok(()),
        }
    }
}

/// The fast path: the whole update on the owning shard.
fn on_shard(
    info: Arc<ResourceInfo>,
    part: Part,
    ownership: Ownership,
    requested: Arc<Mutex<Requested>>,
    guards: Guards,
    admit_creates: bool,
) -> UpdateFn {
    Box::new(move |current: Option<&Arc<StoredObject>>| {
        let old_value = current.map(|c| c.to_value());
        let old = current
            .zip(old_value.as_ref())
            .map(|(stored, value)| Old { stored, value });
        let new = (requested.lock())(old)?;
        if old.is_none() {
            if guards.creates == Creates::Never {
                return Err(ApiError::not_found(
                    &info.group,
                    &info.plural,
                    meta::name(&new),
                ));
            }
            if admit_creates {
                return Err(needs_admission());
            }
        }
        let new = shape(&info, part, &ownership, new, old_value.as_ref())?;
        guards.check(&info, current, &new)?;
        Ok(step(&info, new, old_value.as_ref()))
    })
}

/// What storage does with an update's result: store it, or — kube's
/// delete-during-update, decided here and not by storage — delete the
/// object when the update removed the last finalizer of an object whose
/// deletion was due.
fn step(info: &ResourceInfo, new: Value, old: Option<&Value>) -> UpdateStep {
    match old {
        Some(old) if should_delete_during_update(info, &new, old) => UpdateStep::Delete(new),
        _ => UpdateStep::Write(new),
    }
}

/// A write through the update path that finds no object creates it, and
/// a create needs `create` (kube's handlers authorize a PUT or an apply
/// that turns into a create as one, whatever verb the request came in
/// with). The decision is taken here, where this executor's RBAC index
/// lives, and carried into the update, which may run on another shard:
/// the refusal, if the writer may not create.
async fn create_refusal(api: &Api, user: &UserInfo, t: &Target<'_>) -> Option<ApiError> {
    let attrs = kubeshard_core::authn::Attributes::resource(
        "create",
        &t.info.group,
        &t.info.plural,
        t.namespace,
        t.name,
    )
    .with_subresource(t.subresource);
    let closed = api.storage().progress();
    let decision = authz::decide_fresh(&api.security, &api.exec.hub, user, &attrs, closed).await;
    (!decision.allowed()).then(|| authz::forbidden(user, &attrs, &decision.reason(user)))
}

/// The Scale a write to `subresource` of `info` is admitted as, when it
/// is a write to the `scale` subresource.
fn scale_subresource<'i>(info: &'i ResourceInfo, subresource: &str) -> Option<&'i ScaleSpec> {
    (subresource == "scale")
        .then_some(())
        .and(info.scale.as_ref())
}
