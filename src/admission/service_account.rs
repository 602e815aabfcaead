//! ServiceAccount (kube's plugin): every new pod runs as a service account
//! (`default` unless it names one), which must exist; unless automounting
//! is turned off, its containers get the projected API credentials
//! (`kube-api-access-*`: a bound token, the cluster CA, the namespace)
//! at kube's path; a pod without image pull secrets takes its account's.
//! An account annotated `kubernetes.io/enforce-mountable-secrets: "true"`
//! limits the secrets the pod may use to the ones it lists. Mirror pods
//! (from a kubelet's static manifests) may use none of this.

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Outcome};
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};
use std::time::Duration;

pub const NAME: &str = "ServiceAccount";

const DEFAULT: &str = "default";
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const ENFORCE_ANNOTATION: &str = "kubernetes.io/enforce-mountable-secrets";
/// The projected token's lifetime: kube's "warn only" bound-token
/// expiry, which the kubelet refreshes.
const TOKEN_EXPIRATION_SECONDS: u64 = 3607;

pub struct ServiceAccount {
    accounts: Lister,
}

impl ServiceAccount {
    pub fn start(init: &PluginInit<'_>) -> Self {
        Self {
            accounts: Lister::start(init, "", "serviceaccounts"),
        }
    }

    /// The pod's account; the `default` one is waited for a little, as
    /// kube waits (the namespace may have been created a moment ago and
    /// its controller not have made it yet).
    async fn account(
        &self,
        a: &Attributes<'_>,
        name: &str,
    ) -> Result<std::rc::Rc<Value>, ApiError> {
        let attempts = if name == DEFAULT { 10 } else { 1 };
        for attempt in 0..attempts {
            if attempt > 0 {
                let jitter = rand::random::<u64>() % 100;
                glommio::timer::sleep(Duration::from_millis(100 + jitter)).await;
            }
            if let Some(sa) = self.accounts.get(a.api, a.namespace, name).await? {
                return Ok(sa);
            }
        }
        Err(forbidden(
            a,
            &format!(
                "error looking up service account {}/{name}: serviceaccount {name:?} not found",
                a.namespace
            ),
        ))
    }

    async fn admit_pod(&self, a: &Attributes<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let mirror = pod
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(MIRROR_ANNOTATION))
            .is_some();
        if !mirror {
            let name = match meta::str_at(pod, "/spec/serviceAccountName") {
                "" => DEFAULT.to_string(),
                n => n.to_string(),
            };
            let sa = self.account(a, &name).await?;
            let spec = spec_mut(pod);
            spec.insert("serviceAccountName".into(), json!(name));
            if automount(spec, &sa) {
                mount_token(spec);
            }
            let has_pull_secrets = spec
                .get("imagePullSecrets")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if !has_pull_secrets {
                if let Some(secrets) = sa.get("imagePullSecrets").and_then(Value::as_array) {
                    let refs: Vec<Value> = secrets
                        .iter()
                        .map(|s| json!({"name": meta::str_at(s, "/name")}))
                        .collect();
                    if !refs.is_empty() {
                        spec.insert("imagePullSecrets".into(), Value::Array(refs));
                    }
                }
            }
            if enforces_mountable_secrets(&sa) {
                limit_secret_references(&sa, pod).map_err(|e| forbidden(a, &e))?;
            }
            return Ok(());
        }
        mirror_pod(pod).map_err(|e| forbidden(a, e))
    }
}

fn forbidden(a: &Attributes<'_>, why: &str) -> ApiError {
    ApiError::forbidden("", "pods", a.name, why)
}

fn spec_mut(pod: &mut Value) -> &mut serde_json::Map<String, Value> {
    let root = pod.as_object_mut().expect("a decoded pod is an object");
    let spec = root.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    spec.as_object_mut().expect("just made an object")
}

/// The pod's choice, else the account's, else yes.
fn automount(spec: &serde_json::Map<String, Value>, sa: &Value) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// Mounts the projected credentials into every container (and init
/// container) that has nothing at kube's path yet; the volume is added
/// once (an existing `kube-api-access-*` volume is reused).
fn mount_token(spec: &mut serde_json::Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .map(|v| meta::str_at(v, "/name"))
                .find(|n| n.starts_with(VOLUME_PREFIX))
                .map(str::to_string)
        });
    let volume_name = existing.clone().unwrap_or_else(|| {
        format!(
            "{VOLUME_PREFIX}{}",
            kubeshard_core::validation::generate_name_suffix(&mut rand::thread_rng())
        )
    });
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut mounted = false;
    for key in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| meta::str_at(m, "/mountPath") == TOKEN_MOUNT_PATH)
            {
                continue;
            }
            mounts.push(mount.clone());
            mounted = true;
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({
                "name": volume_name,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRATION_SECONDS}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                },
            }));
        }
    }
}

fn enforces_mountable_secrets(sa: &Value) -> bool {
    sa.pointer("/metadata/annotations")
        .and_then(|m| m.get(ENFORCE_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|v| matches!(v, "true" | "1" | "t" | "T" | "TRUE" | "True"))
}

fn names(sa: &Value, key: &str) -> Vec<String> {
    meta::array_at(sa, &format!("/{key}"))
        .iter()
        .map(|s| meta::str_at(s, "/name").to_string())
        .collect()
}

/// kube's check of an account that lists the secrets its pods may use.
fn limit_secret_references(sa: &Value, pod: &Value) -> Result<(), String> {
    let sa_name = meta::name(sa);
    let mountable = names(sa, "secrets");
    let allowed = |n: &str| mountable.iter().any(|m| m == n);
    for v in meta::array_at(pod, "/spec/volumes") {
        if let Some(secret) = v.pointer("/secret/secretName").and_then(Value::as_str) {
            if !allowed(secret) {
                return Err(format!("volume with secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"));
            }
        }
    }
    for (key, what) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        for c in meta::array_at(pod, &format!("/spec/{key}")) {
            let cname = meta::str_at(c, "/name");
            for env in meta::array_at(c, "/env") {
                if let Some(secret) = env
                    .pointer("/valueFrom/secretKeyRef/name")
                    .and_then(Value::as_str)
                {
                    if !allowed(secret) {
                        return Err(format!("{what} {cname} with envVar {} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret", meta::str_at(env, "/name")));
                    }
                }
            }
            for from in meta::array_at(c, "/envFrom") {
                if let Some(secret) = from.pointer("/secretRef/name").and_then(Value::as_str) {
                    if !allowed(secret) {
                        return Err(format!("{what} {cname} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"));
                    }
                }
            }
        }
    }
    let pull = names(sa, "imagePullSecrets");
    for (i, r) in meta::array_at(pod, "/spec/imagePullSecrets")
        .iter()
        .enumerate()
    {
        let n = meta::str_at(r, "/name");
        if !pull.iter().any(|p| p == n) {
            return Err(format!("imagePullSecrets[{i}].name=\"{n}\" is not allowed because service account {sa_name} does not reference that imagePullSecret"));
        }
    }
    Ok(())
}

/// A mirror pod may not reference accounts, secrets or token projections.
fn mirror_pod(pod: &Value) -> Result<(), &'static str> {
    if !meta::str_at(pod, "/spec/serviceAccountName").is_empty() {
        return Err("a mirror pod may not reference service accounts");
    }
    let volumes = meta::array_at(pod, "/spec/volumes");
    let secret_volume = volumes.iter().any(|v| v.get("secret").is_some());
    let secret_env = ["initContainers", "containers"].iter().any(|k| {
        meta::array_at(pod, &format!("/spec/{k}")).iter().any(|c| {
            meta::array_at(c, "/env")
                .iter()
                .any(|e| e.pointer("/valueFrom/secretKeyRef").is_some())
                || meta::array_at(c, "/envFrom")
                    .iter()
                    .any(|e| e.get("secretRef").is_some())
        })
    });
    if secret_volume || secret_env || !meta::array_at(pod, "/spec/imagePullSecrets").is_empty() {
        return Err("a mirror pod may not reference secrets");
    }
    let token = volumes.iter().any(|v| {
        meta::array_at(v, "/projected/sources")
            .iter()
            .any(|s| s.get("serviceAccountToken").is_some())
    });
    if token {
        return Err("a mirror pod may not use ServiceAccountToken volume projections");
    }
    Ok(())
}

impl Mutating for ServiceAccount {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.creates("", "pods")
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        match object {
            Some(pod) if pod.is_object() => Outcome::later(self.admit_pod(a, pod)),
            _ => Outcome::Ready(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_mount_once_where_nothing_is_mounted() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "i"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x", "mountPath": TOKEN_MOUNT_PATH}]}]}});
        mount_token(pod["spec"].as_object_mut().unwrap());
        let volume = pod["spec"]["volumes"][0]["name"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(volume.starts_with(VOLUME_PREFIX) && volume.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(
            pod["spec"]["initContainers"][0]["volumeMounts"][0]["name"],
            volume
        );
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"],
            TOKEN_MOUNT_PATH
        );
        assert_eq!(
            pod["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // Again: nothing more.
        let before = pod.clone();
        mount_token(pod["spec"].as_object_mut().unwrap());
        assert_eq!(pod, before);
    }

    #[test]
    fn mountable_secrets_are_enforced_as_kube_words_it() {
        let sa = json!({"metadata": {"name": "sa"}, "secrets": [{"name": "ok"}]});
        let pod = json!({"spec": {"containers": [{"name": "c",
            "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}]}]}});
        assert_eq!(
            limit_secret_references(&sa, &pod).unwrap_err(),
            "container c with envVar E referencing secret.secretName=\"nope\" is not allowed because service account sa does not reference that secret"
        );
        let fine = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "ok"}}]}});
        assert!(limit_secret_references(&sa, &fine).is_ok());
        assert_eq!(
            mirror_pod(&json!({"spec": {"serviceAccountName": "x"}})).unwrap_err(),
            "a mirror pod may not reference service accounts"
        );
    }
}
