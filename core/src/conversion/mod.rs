//! Conversion between the versions one kind is served at (kube's
//! `runtime.Scheme` conversions). Objects are stored at one version (the
//! catalog's storage group/version); a request at another version is
//! converted on its way in and every answer on its way out.
//!
//! Conversions work on JSON values, the form the Store and the handlers
//! already hold; a kind without a conversion of its own converts by its
//! apiVersion alone (the fields are the same, as for a CRD's `None`
//! strategy).

mod autoscaling;
mod events;

use crate::status::ApiError;
use serde_json::Value;

/// Converts `obj` (any served version of its kind) to `group`/`version`.
pub fn convert(obj: &mut Value, group: &str, version: &str) -> Result<(), ApiError> {
    let to = api_version(group, version);
    let from = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if from == to {
        return Ok(());
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    match (kind, from.as_str(), to.as_str()) {
        ("HorizontalPodAutoscaler", "autoscaling/v2", "autoscaling/v1") => {
            autoscaling::v2_to_v1(obj)
        }
        ("HorizontalPodAutoscaler", "autoscaling/v1", "autoscaling/v2") => {
            autoscaling::v1_to_v2(obj)
        }
        ("Event", "v1", "events.k8s.io/v1") => events::core_to_events(obj),
        ("Event", "events.k8s.io/v1", "v1") => events::events_to_core(obj),
        _ if group_of(&from) == group => {}
        _ => {
            return Err(ApiError::internal(&format!(
                "no conversion of {kind} from {from} to {to}"
            )))
        }
    }
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".into(), Value::String(to));
    }
    Ok(())
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Moves `from`'s value (if any) to `to` within one object.
fn rename(obj: &mut serde_json::Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.insert(to.into(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_fields_convert_by_api_version() {
        let mut w =
            json!({"apiVersion": "example.com/v1beta1", "kind": "Widget", "spec": {"a": 1}});
        convert(&mut w, "example.com", "v1").unwrap();
        assert_eq!(
            w,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"a": 1}})
        );
    }

    #[test]
    fn unknown_cross_group_conversions_are_refused() {
        let mut w = json!({"apiVersion": "a.example/v1", "kind": "Widget"});
        assert_eq!(convert(&mut w, "b.example", "v1").unwrap_err().code, 500);
    }
}
