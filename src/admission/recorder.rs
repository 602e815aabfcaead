//! TestRecorder: a plugin that only debug builds have, for the test suite.
//! It sees every write and appends what admission was told about it —
//! phase, operation, resource, subresource, namespace, name, old object,
//! user, dry run — as one JSON line to the file its configuration names,
//! so a test can check that every write path reaches the chain with the
//! right attributes. Release builds do not know its name.

use super::{Attributes, Mutating, Outcome, Validating};
use kubeshard_core::meta;
use serde_json::{json, Value};
use std::fs::File;
use std::io::Write;

pub const NAME: &str = "TestRecorder";

pub struct TestRecorder {
    out: File,
}

impl TestRecorder {
    /// `configuration`: `{"path": FILE}`, appended to.
    pub fn open(configuration: Option<&Value>) -> Result<Self, String> {
        let path = configuration
            .and_then(|c| c.get("path"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{NAME} needs a configuration with a path"))?;
        let out = File::options()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{NAME}: {path}: {e}"))?;
        Ok(Self { out })
    }

    fn record(&self, phase: &str, a: &Attributes<'_>, object: Option<&Value>) {
        let line = json!({
            "phase": phase,
            "operation": a.operation.as_str(),
            "group": a.resource.group,
            "resource": a.resource.plural,
            "subresource": a.subresource,
            "namespace": a.namespace,
            "name": a.name,
            "objectName": object.map(meta::name),
            "oldResourceVersion": a.old_object.and_then(|o| meta::meta_str(o, "resourceVersion")),
            "user": a.user.name,
            "dryRun": a.dry_run,
            "options": a.options.to_value(a.dry_run),
        });
        // One write of a whole line: appends from every executor stay
        // whole lines.
        let _ = (&self.out).write_all(format!("{line}\n").as_bytes());
    }
}

impl Mutating for TestRecorder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, _a: &Attributes<'_>) -> bool {
        true
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, o: Option<&'a mut Value>) -> Outcome<'a> {
        self.record("admit", a, o.as_deref());
        Outcome::Ready(Ok(()))
    }
}

impl Validating for TestRecorder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, _a: &Attributes<'_>) -> bool {
        true
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, o: Option<&'a Value>) -> Outcome<'a> {
        self.record("validate", a, o);
        Outcome::Ready(Ok(()))
    }
}
