//! AlwaysAdmit and AlwaysDeny (kube's plugins of those names, deprecated
//! there but still accepted): the first sees every write and lets it
//! through, the second refuses every write. AlwaysDeny is how an operator
//! freezes a server's data while keeping it readable; AlwaysAdmit, as any
//! plugin that sees updates, sends every update through the Store's
//! read-admit-write path.

use super::{Attributes, Mutating, Outcome, Validating};
use kubeshard_core::status::ApiError;
use serde_json::Value;

pub struct AlwaysAdmit;

impl Mutating for AlwaysAdmit {
    fn name(&self) -> &'static str {
        "AlwaysAdmit"
    }

    fn handles(&self, _a: &Attributes<'_>) -> bool {
        true
    }

    fn admit<'a>(&'a self, _a: &'a Attributes<'a>, _o: Option<&'a mut Value>) -> Outcome<'a> {
        Outcome::Ready(Ok(()))
    }
}

pub struct AlwaysDeny;

impl Validating for AlwaysDeny {
    fn name(&self) -> &'static str {
        "AlwaysDeny"
    }

    fn handles(&self, _a: &Attributes<'_>) -> bool {
        true
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, _o: Option<&'a Value>) -> Outcome<'a> {
        Outcome::Ready(Err(ApiError::forbidden(
            &a.resource.group,
            &a.resource.plural,
            a.name,
            "admission control is denying all modifications",
        )))
    }
}
