//! DefaultStorageClass and DefaultIngressClass (kube's plugins): a new
//! claim or Ingress that names no class gets the cluster's default one —
//! the class annotated as default, the newest if several are.

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Outcome};
use kubeshard_core::meta;
use serde_json::{json, Value};

pub const STORAGE: &str = "DefaultStorageClass";
pub const INGRESS: &str = "DefaultIngressClass";

/// What one of the two plugins defaults.
struct Kind {
    group: &'static str,
    plural: &'static str,
    /// Annotations that mark a class as the default.
    default_annotations: &'static [&'static str],
    /// Where the object names its class, and annotations that name one
    /// the old way.
    class_field: &'static str,
    class_annotation: &'static str,
}

const STORAGE_KIND: Kind = Kind {
    group: "",
    plural: "persistentvolumeclaims",
    default_annotations: &[
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ],
    class_field: "storageClassName",
    class_annotation: "volume.beta.kubernetes.io/storage-class",
};

const INGRESS_KIND: Kind = Kind {
    group: "networking.k8s.io",
    plural: "ingresses",
    default_annotations: &["ingressclass.kubernetes.io/is-default-class"],
    class_field: "ingressClassName",
    class_annotation: "kubernetes.io/ingress.class",
};

pub struct DefaultClass {
    name: &'static str,
    kind: &'static Kind,
    classes: Lister,
}

impl DefaultClass {
    pub fn storage(init: &PluginInit<'_>) -> Self {
        Self {
            name: STORAGE,
            kind: &STORAGE_KIND,
            classes: Lister::start(init, "storage.k8s.io", "storageclasses"),
        }
    }

    pub fn ingress(init: &PluginInit<'_>) -> Self {
        Self {
            name: INGRESS,
            kind: &INGRESS_KIND,
            classes: Lister::start(init, "networking.k8s.io", "ingressclasses"),
        }
    }

    /// The default class: the newest marked one (by name when created in
    /// the same second).
    fn default_class(&self) -> Option<String> {
        let mut marked: Vec<_> = self
            .classes
            .list("")
            .into_iter()
            .filter(|c| {
                self.kind.default_annotations.iter().any(|a| {
                    c.pointer("/metadata/annotations")
                        .and_then(|m| m.get(*a))
                        .and_then(Value::as_str)
                        == Some("true")
                })
            })
            .collect();
        marked.sort_by(|x, y| {
            let created = |c: &Value| meta::str_at(c, "/metadata/creationTimestamp").to_string();
            created(y)
                .cmp(&created(x))
                .then_with(|| meta::name(x).cmp(meta::name(y)))
        });
        marked.first().map(|c| meta::name(c).to_string())
    }
}

impl Mutating for DefaultClass {
    fn name(&self) -> &'static str {
        self.name
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.creates(self.kind.group, self.kind.plural)
    }

    fn admit<'a>(&'a self, _a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        let Some(obj) = object else {
            return Outcome::Ready(Ok(()));
        };
        let named = obj
            .pointer(&format!("/spec/{}", self.kind.class_field))
            .is_some_and(|v| !v.is_null())
            || obj
                .pointer("/metadata/annotations")
                .and_then(|m| m.get(self.kind.class_annotation))
                .is_some();
        if !named {
            if let (Some(class), Some(spec)) = (
                self.default_class(),
                obj.get_mut("spec").and_then(Value::as_object_mut),
            ) {
                spec.insert(self.kind.class_field.into(), json!(class));
            }
        }
        Outcome::Ready(Ok(()))
    }
}
