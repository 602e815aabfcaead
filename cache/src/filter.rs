//! Which objects a list or watch wants: namespace, label and field
//! selectors. Works on pre-extracted metadata only, never on JSON.

use crate::object::StoredObject;
use kubeshard_core::selector::fields::{FieldSelector, Fields};
use kubeshard_core::selector::labels::{LabelSelector, Labels};

#[derive(Debug, Clone)]
pub struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Default for Filter {
    fn default() -> Self {
        Self {
            namespace: None,
            labels: LabelSelector::everything(),
            fields: FieldSelector::everything(),
        }
    }
}

struct ObjLabels<'a>(&'a StoredObject);
impl Labels for ObjLabels<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.label(key)
    }
}

struct ObjFields<'a>(&'a StoredObject);
impl Fields for ObjFields<'_> {
    fn get(&self, field: &str) -> Option<&str> {
        self.0.field(field)
    }
}

impl Filter {
    pub fn matches(&self, obj: &StoredObject) -> bool {
        if let Some(ns) = &self.namespace {
            if *obj.namespace != **ns {
                return false;
            }
        }
        (self.labels.is_empty() || self.labels.matches(&ObjLabels(obj)))
            && (self.fields.is_empty() || self.fields.matches(&ObjFields(obj)))
    }

    /// True when no selector narrows the result (kube then reports
    /// `remainingItemCount`).
    pub fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty()
    }
}
