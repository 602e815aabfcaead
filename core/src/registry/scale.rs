//! The autoscaling/v1 Scale view of a kind whose catalog entry says where
//! its replicas and selector live (deployments, replica sets, stateful
//! sets, replication controllers, CRDs with `subresources.scale`): what
//! the `scale` subresource serves, and what admission sees of a write to
//! it, as kube admits such writes as Scales.

use crate::catalog::{ScaleSelector, ScaleSpec};
use crate::meta;
use crate::selector::LabelSelector;
use crate::status::ApiError;
use serde_json::{json, Map, Value};

pub const SCALE_API_VERSION: &str = "autoscaling/v1";

/// The Scale view of `obj`: the parent's identity, its desired and
/// observed replicas, and its selector as a string.
pub fn scale_of(spec: &ScaleSpec, obj: &Value) -> Result<Value, ApiError> {
    let mut md = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta::metadata(obj).and_then(|m| m.get(field)) {
            md.insert(field.into(), v.clone());
        }
    }
    let int_at = |path: &[Box<str>]| get_path(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let selector = match &spec.selector {
        ScaleSelector::LabelSelector(path) => {
            let raw = get_path(obj, path).cloned().unwrap_or(Value::Null);
            LabelSelector::from_metav1(&raw)
                .map_err(|e| ApiError::internal(&format!("invalid label selector: {e}")))?
                .to_string()
        }
        ScaleSelector::LabelMap(path) => crate::table::format::label_pairs(get_path(obj, path)),
        ScaleSelector::String(path) => get_path(obj, path)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    let mut scale_spec = Map::new();
    let replicas = int_at(&spec.spec_replicas);
    // autoscaling/v1 omits a zero spec.replicas; status.replicas is always there.
    if replicas != 0 {
        scale_spec.insert("replicas".into(), json!(replicas));
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(int_at(&spec.status_replicas)));
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": md,
        "spec": scale_spec,
        "status": status,
    }))
}

fn get_path<'a, K: AsRef<str>>(obj: &'a Value, path: &[K]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |cur, p| cur.get(p.as_ref()))
}

fn set_path<K: AsRef<str>>(obj: &mut Value, path: &[K], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for p in parents {
        let p = p.as_ref();
        if !cur.get(p).is_some_and(Value::is_object) {
            cur[p] = json!({});
        }
        cur = &mut cur[p];
    }
    cur[last.as_ref()] = value;
}

/// Sets the desired replica count of `obj` (a write through its Scale).
pub fn set_replicas(spec: &ScaleSpec, obj: &mut Value, replicas: i64) {
    set_path(obj, &spec.spec_replicas, json!(replicas));
}

/// The desired replica count a Scale asks for (absent: zero).
pub fn replicas_of(scale: &Value) -> i64 {
    scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn deployment_spec() -> ScaleSpec {
        let cat = Catalog::with_builtins().snapshot();
        cat.lookup("apps", "v1", "deployments")
            .unwrap()
            .scale
            .clone()
            .unwrap()
    }

    #[test]
    fn scale_view_of_a_deployment() {
        let spec = deployment_spec();
        let d = json!({"metadata": {"name": "web", "namespace": "n", "uid": "u", "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "fe"}, "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}},
            "status": {"replicas": 2}});
        let s = scale_of(&spec, &d).unwrap();
        assert_eq!(s["spec"], json!({"replicas": 3}));
        assert_eq!(
            s["status"],
            json!({"replicas": 2, "selector": "app=web,env in (dev,prod),tier=fe"})
        );
        assert_eq!(
            s["metadata"],
            json!({"name": "web", "namespace": "n", "uid": "u", "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z"})
        );
        let zero = scale_of(
            &spec,
            &json!({"metadata": {"name": "z"}, "spec": {"replicas": 0, "selector": {}}}),
        )
        .unwrap();
        assert_eq!(zero["spec"], json!({}));
        assert_eq!(zero["status"], json!({"replicas": 0}));
    }

    #[test]
    fn replicas_go_back_to_the_object() {
        let spec = deployment_spec();
        let mut d = json!({"metadata": {"name": "web"}});
        set_replicas(&spec, &mut d, 4);
        assert_eq!(d["spec"]["replicas"], 4);
        assert_eq!(replicas_of(&scale_of(&spec, &d).unwrap()), 4);
        let mut target = json!({"a": {}});
        set_path(&mut target, &["a", "b", "c"], json!(1));
        assert_eq!(target, json!({"a": {"b": {"c": 1}}}));
    }
}
