//! kube's reinvocation: when a webhook or a mutating policy changed the
//! object, the mutating plugins run once more, so that those that ran
//! before the change (the built-in ones, and webhooks and policies that
//! asked for `reinvocationPolicy: IfNeeded`) see the final object.

use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;

#[derive(Default)]
pub struct Reinvocation {
    /// This is the second pass.
    pub(super) reinvoking: Cell<bool>,
    /// Some plugin asked for a second pass.
    pub(super) requested: Cell<bool>,
    /// The webhook plugin's bookkeeping across the passes.
    pub(super) webhooks: RefCell<Round>,
    /// The mutating policy plugin's.
    pub(super) policies: RefCell<Round>,
}

impl Reinvocation {
    pub fn is_reinvoke(&self) -> bool {
        self.reinvoking.get()
    }

    pub fn request(&self) {
        self.requested.set(true);
    }
}

/// One plugin's reinvocation bookkeeping for one write (kube's
/// `webhookReinvokeContext` and `policyReinvokeContext`), by the key of
/// each invocation (a webhook; a policy, binding and param).
#[derive(Default)]
pub struct Round {
    /// IfNeeded invocations since the object last changed.
    pub(super) invoked: HashSet<String>,
    /// Invocations to make again in the second pass.
    pub(super) reinvoke: HashSet<String>,
    /// The object as the plugin left it in the first pass.
    pub(super) last_output: Option<Value>,
}

impl Round {
    /// The object changed after these invocations saw it: they run again.
    pub(super) fn require_reinvoking_invoked(&mut self) {
        let invoked = std::mem::take(&mut self.invoked);
        self.reinvoke.extend(invoked);
    }

    /// At the start of the plugin's second pass: whether `key` runs again
    /// (first marking every invocation to run again when another plugin
    /// changed the object since this one last saw it).
    pub(super) fn start_reinvoking(&mut self, object: Option<&Value>) {
        if self.last_output.as_ref() != object {
            self.require_reinvoking_invoked();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_moves_invoked_to_reinvoke() {
        let mut r = Round::default();
        r.invoked.insert("a/0".into());
        r.last_output = Some(json!({"a": 1}));
        r.start_reinvoking(Some(&json!({"a": 1})));
        assert!(r.reinvoke.is_empty());
        r.start_reinvoking(Some(&json!({"a": 2})));
        assert!(r.invoked.is_empty());
        assert!(r.reinvoke.contains("a/0"));
    }
}
