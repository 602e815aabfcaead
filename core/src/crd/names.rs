//! Whether a CRD's names are free (kube's naming controller): a CRD
//! competes for its plural, singular and short names, and separately for
//! its kind and list kind, with every other CRD of its group. A name that
//! is taken keeps the CRD's previously accepted value; the rest are
//! accepted.

use serde_json::{json, Value};
use std::collections::HashSet;

/// The outcome for one CRD: its accepted names and the `NamesAccepted`
/// condition's status, reason and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Naming {
    pub accepted: Value,
    pub ok: bool,
    pub reason: &'static str,
    pub message: String,
}

/// Decides `crd`'s accepted names against `others` (the other CRDs).
pub fn decide(crd: &Value, others: &[&Value]) -> Naming {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let requested = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let old = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut resources: HashSet<&str> = HashSet::new();
    let mut kinds: HashSet<&str> = HashSet::new();
    let own_name = crd.pointer("/metadata/name");
    for other in others {
        if other.pointer("/metadata/name") == own_name
            || other.pointer("/spec/group").and_then(Value::as_str) != Some(group)
        {
            continue;
        }
        let Some(names) = other.pointer("/status/acceptedNames") else {
            continue;
        };
        for key in ["plural", "singular"] {
            if let Some(n) = names.get(key).and_then(Value::as_str) {
                resources.insert(n);
            }
        }
        resources.extend(super::str_list(names.get("shortNames")));
        for key in ["kind", "listKind"] {
            if let Some(n) = names.get(key).and_then(Value::as_str) {
                kinds.insert(n);
            }
        }
    }
    let mut accepted = old.clone();
    if !accepted.is_object() {
        accepted = json!({});
    }
    let mut outcome: Outcome = (true, "NoConflicts", "no conflicts found".to_string());
    let names = Names {
        requested: &requested,
        old: &old,
    };
    names.take(
        "plural",
        &resources,
        "PluralConflict",
        &mut accepted,
        &mut outcome,
    );
    names.take(
        "singular",
        &resources,
        "SingularConflict",
        &mut accepted,
        &mut outcome,
    );
    let short: Vec<&str> = super::str_list(requested.get("shortNames")).collect();
    let old_short: Vec<&str> = super::str_list(old.get("shortNames")).collect();
    let taken: Vec<String> = short
        .iter()
        .filter(|s| !old_short.contains(s) && resources.contains(*s))
        .map(|s| format!("{s:?} is already in use"))
        .collect();
    match taken.len() {
        0 => {
            if short.is_empty() {
                if let Some(o) = accepted.as_object_mut() {
                    o.remove("shortNames");
                }
            } else {
                accepted["shortNames"] = json!(short);
            }
        }
        1 => outcome = (false, "ShortNamesConflict", taken[0].clone()),
        _ => {
            outcome = (
                false,
                "ShortNamesConflict",
                format!("[{}]", taken.join(", ")),
            )
        }
    }
    names.take("kind", &kinds, "KindConflict", &mut accepted, &mut outcome);
    names.take(
        "listKind",
        &kinds,
        "ListKindConflict",
        &mut accepted,
        &mut outcome,
    );
    match requested.get("categories") {
        Some(c) => accepted["categories"] = c.clone(),
        None => {
            if let Some(o) = accepted.as_object_mut() {
                o.remove("categories");
            }
        }
    }
    Naming {
        accepted,
        ok: outcome.0,
        reason: outcome.1,
        message: outcome.2,
    }
}

type Outcome = (bool, &'static str, String);

/// A CRD's requested and previously accepted names.
struct Names<'a> {
    requested: &'a Value,
    old: &'a Value,
}

impl Names<'_> {
    /// Accepts the requested `key` unless another CRD uses it (keeping
    /// the one accepted before, and saying why).
    fn take(
        &self,
        key: &str,
        used: &HashSet<&str>,
        reason: &'static str,
        accepted: &mut Value,
        outcome: &mut Outcome,
    ) {
        let wanted = self
            .requested
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("");
        let current = self.old.get(key).and_then(Value::as_str).unwrap_or("");
        if wanted != current && used.contains(wanted) {
            *outcome = (false, reason, format!("{wanted:?} is already in use"));
        } else {
            accepted[key] = json!(wanted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str], accepted: bool) -> Value {
        let names = json!({"plural": plural, "singular": plural.trim_end_matches('s'),
            "kind": kind, "listKind": format!("{kind}List"), "shortNames": short});
        let mut c = json!({"metadata": {"name": name},
            "spec": {"group": "example.com", "names": names.clone()}});
        if accepted {
            c["status"] = json!({"acceptedNames": names});
        }
        c
    }

    #[test]
    fn free_names_are_accepted_and_taken_ones_refused() {
        let a = crd("widgets.example.com", "widgets", "Widget", &["wd"], true);
        let b = crd(
            "gadgets.example.com",
            "gadgets",
            "Gadget",
            &["wd", "gd"],
            false,
        );
        let ok = decide(&a, &[&a, &b]);
        assert!(ok.ok, "{ok:?}");
        assert_eq!(ok.message, "no conflicts found");
        let taken = decide(&b, &[&a, &b]);
        assert!(!taken.ok);
        assert_eq!(taken.reason, "ShortNamesConflict");
        assert_eq!(taken.message, "\"wd\" is already in use");
        assert_eq!(taken.accepted["plural"], "gadgets");
        assert!(taken.accepted.get("shortNames").is_none());
        let mut c = crd("gizmos.example.com", "gizmos", "Widget", &[], false);
        c["spec"]["names"]["listKind"] = json!("GizmoList");
        let taken = decide(&c, &[&a, &c]);
        assert_eq!(
            (taken.reason, taken.message.as_str()),
            ("KindConflict", "\"Widget\" is already in use")
        );
        assert_eq!(taken.accepted["kind"], json!(null));
    }
}
