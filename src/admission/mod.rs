//! The admission seam: mutating then validating plugins run on every write
//! after decoding and before storage. Built-in plugins, webhooks and CEL
//! policies arrive with the admission issue; the chain and its call sites
//! exist now so they slot in without touching the handlers.

use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::status::ApiError;
use serde_json::Value;

/// One admission plugin. Default methods admit everything.
#[allow(dead_code)] // the first plugins arrive with the admission issue
pub trait AdmissionPlugin {
    fn name(&self) -> &'static str;
    fn admit_create(&self, _info: &ResourceInfo, _obj: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }
    fn admit_update(&self, _info: &ResourceInfo, _obj: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }
    fn admit_delete(
        &self,
        _info: &ResourceInfo,
        _namespace: &str,
        _name: &str,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

/// The ordered chain of plugins; empty by default.
#[derive(Default)]
pub struct Admission {
    plugins: Vec<Box<dyn AdmissionPlugin>>,
}

impl Admission {
    #[allow(dead_code)] // the first plugins arrive with the admission issue
    pub fn with(mut self, plugin: Box<dyn AdmissionPlugin>) -> Self {
        self.plugins.push(plugin);
        self
    }

    pub fn admit_create(&self, info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        self.plugins
            .iter()
            .try_for_each(|p| p.admit_create(info, obj))
    }

    pub fn admit_update(&self, info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        self.plugins
            .iter()
            .try_for_each(|p| p.admit_update(info, obj))
    }

    pub fn admit_delete(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        self.plugins
            .iter()
            .try_for_each(|p| p.admit_delete(info, namespace, name))
    }
}
