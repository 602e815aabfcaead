//! Behaviour of individual built-in kinds that is code rather than data.

use crate::catalog::{KindHooks, ResourceInfo};
use serde_json::{json, Value};

pub(super) fn on_create(info: &ResourceInfo, obj: &mut Value) {
    if info.strategy.kind_hooks == KindHooks::CustomResourceDefinition {
        crate::crd::record_stored_version(obj);
    }
    let qos = (info.strategy.kind_hooks == KindHooks::Pod).then(|| super::qos::qos_class(obj));
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match info.strategy.kind_hooks {
        KindHooks::Namespace => {
            // A new namespace is Active and carries the kubernetes finalizer,
            // which namespace deletion clears once the namespace is empty.
            root.insert("status".into(), json!({"phase": "Active"}));
            let spec = root.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                let list = spec.entry("finalizers").or_insert_with(|| json!([]));
                if !list.is_array() {
                    *list = json!([]);
                }
                let list = list.as_array_mut().expect("just made an array");
                if !list.iter().any(|f| f == "kubernetes") {
                    list.push(json!("kubernetes"));
                }
            }
        }
        KindHooks::Pod => {
            // A new pod is Pending, with the QoS class its resources give.
            root.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos.unwrap_or("BestEffort")}),
            );
        }
        KindHooks::Secret => {
            root.entry("type").or_insert_with(|| json!("Opaque"));
            fold_string_data(root);
        }
        KindHooks::Job => job_selector(root),
        KindHooks::Service
        | KindHooks::CustomResourceDefinition
        | KindHooks::Rbac
        | KindHooks::CertificateSigningRequest
        | KindHooks::None => {}
    }
}

/// Unless the client asked to pick it (`spec.manualSelector`), a new Job's
/// pods are labelled with its name and uid (kube's and the legacy label
/// names) and its selector is its uid label: unique, so a Job never adopts
/// another one's pods.
fn job_selector(root: &mut serde_json::Map<String, Value>) {
    let md = root.get("metadata");
    let (name, uid) = (
        md.and_then(|m| m.get("name")).cloned().unwrap_or_default(),
        md.and_then(|m| m.get("uid")).cloned().unwrap_or_default(),
    );
    let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        let md = t.entry("metadata").or_insert_with(|| json!({}));
        if let Some(md) = md.as_object_mut() {
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                for (key, value) in [
                    ("batch.kubernetes.io/controller-uid", &uid),
                    ("batch.kubernetes.io/job-name", &name),
                    ("controller-uid", &uid),
                    ("job-name", &name),
                ] {
                    labels.entry(key).or_insert_with(|| value.clone());
                }
            }
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if let Some(sel) = selector.as_object_mut() {
        let match_labels = sel.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(m) = match_labels.as_object_mut() {
            m.entry("batch.kubernetes.io/controller-uid").or_insert(uid);
        }
    }
}

/// `stringData` is write-only: kube merges it into `data` (base64, taking
/// precedence over the same key in `data`) and never stores it.
fn fold_string_data(root: &mut serde_json::Map<String, Value>) {
    use base64::Engine;
    let Some(Value::Object(string_data)) = root.remove("stringData") else {
        return;
    };
    let data = root.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    let data = data.as_object_mut().expect("just made an object");
    for (k, v) in string_data {
        if let Some(s) = v.as_str() {
            data.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(s)),
            );
        }
    }
}

pub(super) fn on_update(info: &ResourceInfo, new: &mut Value, old: &Value) {
    if info.strategy.kind_hooks == KindHooks::Namespace {
        // spec.finalizers change only through the finalize subresource.
        if let (Some(n), Some(fin)) = (new.as_object_mut(), old.pointer("/spec/finalizers")) {
            let spec = n.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("finalizers".into(), fin.clone());
            }
        }
    }
    if info.strategy.kind_hooks == KindHooks::CertificateSigningRequest {
        super::certificates::keep_spec(new, old);
    }
    if info.strategy.kind_hooks == KindHooks::CustomResourceDefinition {
        crate::crd::record_stored_version(new);
    }
    if info.strategy.kind_hooks == KindHooks::Service {
        super::service::keep_allocated(new, old);
    }
    if info.strategy.kind_hooks == KindHooks::Secret {
        if let Some(n) = new.as_object_mut() {
            n.entry("type").or_insert_with(|| json!("Opaque"));
            fold_string_data(n);
        }
    }
}
