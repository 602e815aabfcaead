//! Leader election for the built-in controllers when several servers
//! share one store (`--storage etcd`): a Lease in kube-system, taken and
//! renewed the way client-go's leader election does it, so that one
//! replica at a time runs the garbage collector, the namespace
//! controller and the rest.
//!
//! A replica takes the Lease when it is free or when its record has not
//! changed for a whole lease duration, measured on this replica's own
//! clock from when it last saw the record change (clocks of different
//! machines are never compared). The leader renews every retry period
//! and steps down when it has not renewed within the renew deadline,
//! before any other replica may take over.

use crate::context::Api;
use crate::registry::{self, Addressed, CONTROLLER_MANAGER};
use crate::storage::Storage;
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The Lease the controllers are elected by.
pub const LEASE_NAMESPACE: &str = "kube-system";
pub const LEASE_NAME: &str = "kubeshard-controllers";
/// client-go's defaults (kube-controller-manager's flags).
const LEASE_DURATION: Duration = Duration::from_secs(15);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// This replica's standing, shared with the controllers' loop.
#[derive(Default)]
pub struct Election {
    leading: Cell<bool>,
    changed: event_listener::Event,
}

impl Election {
    pub fn leading(&self) -> bool {
        self.leading.get()
    }

    /// Resolves once this replica leads.
    pub async fn until_leading(&self) {
        loop {
            let wake = self.changed.listen();
            if self.leading() {
                return;
            }
            wake.await;
        }
    }

    fn set(&self, leading: bool) {
        if self.leading.replace(leading) != leading {
            self.changed.notify(usize::MAX);
        }
    }
}

/// The Lease record as last seen, and when this replica saw it change.
struct Observed {
    record: (String, String),
    at: Instant,
}

/// Campaigns until shutdown, as `identity`.
pub async fn run(api: Rc<Api>, election: Rc<Election>, identity: String) {
    let Ok(info) = api.builtin("coordination.k8s.io", "leases") else {
        return;
    };
    let observed: RefCell<Option<Observed>> = RefCell::new(None);
    let mut renewed: Option<Instant> = None;
    let shutdown = api.exec.shutdown.clone();
    while !shutdown.is_triggered() {
        let won = try_lead(&api, &info, &identity, &observed).await;
        match won {
            Ok(true) => {
                if !election.leading() {
                    tracing::info!(identity, lease = LEASE_NAME, "leading the controllers");
                }
                renewed = Some(Instant::now());
                election.set(true);
            }
            Ok(false) => {
                if election.leading() {
                    tracing::warn!(identity, "another replica took the controllers' lease");
                }
                election.set(false);
            }
            Err(e) => {
                tracing::warn!(error = %e.message, "the controllers' lease could not be read or written");
                if renewed.is_none_or(|at| at.elapsed() >= RENEW_DEADLINE) && election.leading() {
                    tracing::warn!(identity, "stepping down: the lease was not renewed in time");
                    election.set(false);
                }
            }
        }
        shutdown.sleep(RETRY_PERIOD).await;
    }
    election.set(false);
}

/// One round: creates, renews or takes over the Lease; true when this
/// replica holds it afterwards.
async fn try_lead(
    api: &Api,
    info: &std::sync::Arc<kubeshard_core::catalog::ResourceInfo>,
    identity: &str,
    observed: &RefCell<Option<Observed>>,
) -> Result<bool, ApiError> {
    api.storage()
        .consistent_revision(RETRY_PERIOD)
        .await
        .map_err(crate::storage::status)?;
    let current = api
        .storage()
        .get(&info.storage_key, LEASE_NAMESPACE, LEASE_NAME)
        .await
        .map_err(crate::storage::status)?;
    let now = crate::registry::strategy::now_micro();
    let Some(current) = current else {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE},
            "spec": {"holderIdentity": identity,
                     "leaseDurationSeconds": LEASE_DURATION.as_secs(),
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0}});
        return match registry::create_as(api, &CONTROLLER_MANAGER, info, lease).await {
            Ok(_) => Ok(true),
            Err(e) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let value = current.to_value();
    let record = record_of(&value);
    let changed = observed
        .borrow()
        .as_ref()
        .is_none_or(|o| o.record != record);
    if changed {
        *observed.borrow_mut() = Some(Observed {
            record: record.clone(),
            at: Instant::now(),
        });
    }
    let mine = record.0 == identity;
    let expired = record.0.is_empty()
        || observed
            .borrow()
            .as_ref()
            .is_some_and(|o| o.at.elapsed() >= LEASE_DURATION);
    if !mine && !expired {
        return Ok(false);
    }
    let (me, seen) = (identity.to_string(), record);
    let at = Addressed {
        uid: Some(current.uid()),
        ..Addressed::object(info, LEASE_NAMESPACE, LEASE_NAME)
    };
    let written = registry::update_with(
        api,
        &CONTROLLER_MANAGER,
        at,
        Box::new(move |lease: &mut Value| {
            // Another replica wrote the record since: this round is lost.
            if record_of(lease) != seen {
                return Err(ApiError::conflict(
                    "coordination.k8s.io",
                    "leases",
                    LEASE_NAME,
                    "the lease changed hands",
                ));
            }
            let spec = &mut lease["spec"];
            if spec.get("holderIdentity").and_then(Value::as_str) != Some(me.as_str()) {
                let transitions = spec
                    .get("leaseTransitions")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                spec["holderIdentity"] = json!(me);
                spec["acquireTime"] = json!(now);
                spec["leaseTransitions"] = json!(transitions + 1);
            }
            spec["renewTime"] = json!(now);
            spec["leaseDurationSeconds"] = json!(LEASE_DURATION.as_secs());
            Ok(true)
        }),
    )
    .await;
    match written {
        Ok(_) => Ok(true),
        Err(e) if e.code == 409 || e.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// The holder and renew time: what changes when a leader is alive.
fn record_of(lease: &Value) -> (String, String) {
    (
        meta::str_at(lease, "/spec/holderIdentity").to_string(),
        meta::str_at(lease, "/spec/renewTime").to_string(),
    )
}

/// This replica's name in the Lease: the host and a random suffix, as
/// client-go's callers make it.
pub fn identity() -> String {
    let host = crate::pki::hostname().unwrap_or_default();
    format!("{host}_{}", uuid::Uuid::new_v4())
}
