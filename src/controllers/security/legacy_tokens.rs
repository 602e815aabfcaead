//! Fills Secrets of type `kubernetes.io/service-account-token` that name a
//! service account (annotation `kubernetes.io/service-account.name`) with
//! a legacy token, the account's uid, the namespace and the CA, as kube's
//! token controller does. Such a token works until the Secret or the
//! account is deleted.

use crate::context::Api;
use crate::informer::Change;
use crate::registry;
use crate::security::authn::serviceaccount::{issue_legacy, ObjectRef};
use crate::storage::{Storage, StorageResult};
use base64::Engine;
use kubeshard_cache::Filter;
use kubeshard_core::selector::fields::FieldSelector;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

const TYPE: &str = "kubernetes.io/service-account-token";
const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

pub fn start(api: &Rc<Api>) {
    let todo: Rc<RefCell<Vec<(String, String)>>> = Rc::default();
    let wake = Rc::new(event_listener::Event::new());
    let (t, w) = (todo.clone(), wake.clone());
    let filter = Filter {
        fields: FieldSelector::parse(&format!("type={TYPE}")).expect("a valid field selector"),
        ..Filter::default()
    };
    api.security.informers.start(
        &api.exec,
        api.config.keys.builtin("", "secrets"),
        filter,
        Box::new(move |change| {
            if let Change::Upsert(o) = change {
                let v = o.to_value();
                if v.pointer("/data/token").is_none() {
                    t.borrow_mut()
                        .push((o.namespace.to_string(), o.name.to_string()));
                    w.notify(1);
                }
            }
        }),
    );
    let api = api.clone();
    glommio::spawn_local(async move {
        while !api.shutdown().is_triggered() {
            let listener = wake.listen();
            let batch: Vec<_> = std::mem::take(&mut *todo.borrow_mut());
            for (ns, name) in batch {
                if let Err(e) = fill(&api, &ns, &name).await {
                    tracing::warn!(%ns, %name, error = %e.message, "could not fill service-account token secret");
                }
            }
            futures_lite::future::or(listener, api.shutdown().wait()).await;
        }
    })
    .detach();
}

async fn fill(api: &Api, ns: &str, name: &str) -> Result<(), ApiError> {
    let secrets = api.builtin("", "secrets")?;
    let Some(secret) = api
        .storage()
        .get(&secrets.storage_key, ns, name)
        .await
        .or_status()?
    else {
        return Ok(());
    };
    let v = secret.to_value();
    let Some(account) = v
        .pointer(&format!(
            "/metadata/annotations/{}",
            NAME_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return Ok(());
    };
    let Some(sa) = api
        .storage()
        .get(
            &api.config.keys.builtin("", "serviceaccounts"),
            ns,
            &account,
        )
        .await
        .or_status()?
    else {
        return Ok(());
    };
    let config = &api.security.config;
    let token = issue_legacy(
        &config.service_accounts,
        ns,
        &ObjectRef {
            name: account.clone(),
            uid: sa.uid().to_string(),
        },
        name,
    )
    .map_err(|e| ApiError::internal(&e))?;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let (data, uid) = (
        json!({"token": b64(&token), "namespace": b64(ns), "ca.crt": b64(&config.trust_pem)}),
        sa.uid().to_string(),
    );
    let at = registry::Addressed::object(&secrets, ns, name);
    let mutation = Box::new(move |new: &mut serde_json::Value| {
        if new.pointer("/data/token").is_some() {
            return Err(ApiError::conflict("", "secrets", "", "already filled"));
        }
        new["data"] = data.clone();
        new["metadata"]["annotations"][UID_ANNOTATION] = json!(uid);
        Ok(true)
    });
    registry::update_with(api, &registry::CONTROLLER_MANAGER, at, mutation)
        .await
        .map(|_| ())
        .or_else(|e| if e.code == 409 { Ok(()) } else { Err(e) })
}
