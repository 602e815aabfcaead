//! StorageObjectInUseProtection and PersistentVolumeClaimResize (kube's
//! plugins): new claims and volumes carry the protection finalizer that
//! keeps them while in use, and a bound claim may only grow when its
//! storage class allows expansion.

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::status::ApiError;
use serde_json::{json, Value};

pub const PROTECTION: &str = "StorageObjectInUseProtection";
pub const RESIZE: &str = "PersistentVolumeClaimResize";

pub struct StorageProtection;

fn finalizer_for(a: &Attributes<'_>) -> Option<&'static str> {
    if !a.subresource.is_empty() || !a.resource.group.is_empty() {
        return None;
    }
    match a.resource.plural.as_str() {
        "persistentvolumeclaims" => Some("kubernetes.io/pvc-protection"),
        "persistentvolumes" => Some("kubernetes.io/pv-protection"),
        _ => None,
    }
}

impl Mutating for StorageProtection {
    fn name(&self) -> &'static str {
        PROTECTION
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.operation == Operation::Create && finalizer_for(a).is_some()
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        if let (Some(finalizer), Some(obj)) = (finalizer_for(a), object) {
            let metadata = meta::metadata_mut(obj);
            let list = metadata.entry("finalizers").or_insert_with(|| json!([]));
            if list.is_null() {
                *list = json!([]);
            }
            if let Some(list) = list.as_array_mut() {
                if !list.iter().any(|f| f == finalizer) {
                    list.push(json!(finalizer));
                }
            }
        }
        Outcome::Ready(Ok(()))
    }
}

pub struct ClaimResize {
    classes: Lister,
}

impl ClaimResize {
    pub fn start(init: &PluginInit<'_>) -> Self {
        Self {
            classes: Lister::start(init, "storage.k8s.io", "storageclasses"),
        }
    }

    async fn check(&self, a: &Attributes<'_>, new: &Value, old: &Value) -> Result<(), ApiError> {
        let size = |o: &Value| {
            o.pointer("/spec/resources/requests/storage")
                .and_then(kubeshard_core::quantity::nanos)
        };
        let (Some(new_size), old_size) = (size(new), size(old)) else {
            return Ok(());
        };
        if old_size.is_some_and(|o| new_size <= o) {
            return Ok(());
        }
        let refuse = |why: &str| ApiError::forbidden("", "persistentvolumeclaims", a.name, why);
        if meta::str_at(old, "/status/phase") != "Bound" {
            return Err(refuse(
                "Only bound persistent volume claims can be expanded",
            ));
        }
        let class = |o: &Value| {
            o.pointer("/metadata/annotations")
                .and_then(|m| m.get("volume.beta.kubernetes.io/storage-class"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| meta::str_at(o, "/spec/storageClassName").to_string())
        };
        let (new_class, old_class) = (class(new), class(old));
        let expandable = if new_class.is_empty() || new_class != old_class {
            false
        } else {
            self.classes
                .get(a.api, "", &new_class)
                .await?
                .and_then(|c| c.get("allowVolumeExpansion").and_then(Value::as_bool))
                .unwrap_or(false)
        };
        if !expandable {
            return Err(refuse("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"));
        }
        Ok(())
    }
}

impl Validating for ClaimResize {
    fn name(&self) -> &'static str {
        RESIZE
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.operation == Operation::Update && a.addresses("", "persistentvolumeclaims")
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        match (object, a.old_object) {
            (Some(new), Some(old)) => Outcome::later(self.check(a, new, old)),
            _ => Outcome::Ready(Ok(())),
        }
    }
}
