//! HorizontalPodAutoscalers between autoscaling/v2 (stored) and
//! autoscaling/v1. v1 knows one target (average CPU utilization); what
//! only v2 can say — other metrics, their current values, conditions,
//! scaling behavior — rides along in annotations, as kube keeps it, so an
//! object read and written back at v1 loses nothing.

use serde_json::{Map, Value};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// Every annotation conversion owns: cleared before it writes its own, and
/// dropped from what is stored.
const ROUND_TRIP: [&str; 6] = [
    METRICS,
    CURRENT_METRICS,
    CONDITIONS,
    BEHAVIOR,
    "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
    "autoscaling.alpha.kubernetes.io/scale-up-tolerance",
];

/// The v1 and v2 names of a metric source's fields, per source type: v1
/// flattens what v2 nests (`targetAverageValue` is `target.averageValue`).
type Members = &'static [(&'static str, &'static [&'static str])];

const SPEC_MEMBERS: [(&str, Members); 5] = [
    (
        "object",
        &[
            ("target", &["describedObject"]),
            ("metricName", &["metric", "name"]),
            ("targetValue", &["target", "value"]),
            ("selector", &["metric", "selector"]),
            ("averageValue", &["target", "averageValue"]),
        ],
    ),
    (
        "pods",
        &[
            ("metricName", &["metric", "name"]),
            ("targetAverageValue", &["target", "averageValue"]),
            ("selector", &["metric", "selector"]),
        ],
    ),
    (
        "resource",
        &[
            ("name", &["name"]),
            (
                "targetAverageUtilization",
                &["target", "averageUtilization"],
            ),
            ("targetAverageValue", &["target", "averageValue"]),
        ],
    ),
    (
        "containerResource",
        &[
            ("name", &["name"]),
            (
                "targetAverageUtilization",
                &["target", "averageUtilization"],
            ),
            ("targetAverageValue", &["target", "averageValue"]),
            ("container", &["container"]),
        ],
    ),
    (
        "external",
        &[
            ("metricName", &["metric", "name"]),
            ("metricSelector", &["metric", "selector"]),
            ("targetValue", &["target", "value"]),
            ("targetAverageValue", &["target", "averageValue"]),
        ],
    ),
];

const STATUS_MEMBERS: [(&str, Members); 5] = [
    (
        "object",
        &[
            ("target", &["describedObject"]),
            ("metricName", &["metric", "name"]),
            ("currentValue", &["current", "value"]),
            ("selector", &["metric", "selector"]),
            ("averageValue", &["current", "averageValue"]),
        ],
    ),
    (
        "pods",
        &[
            ("metricName", &["metric", "name"]),
            ("currentAverageValue", &["current", "averageValue"]),
            ("selector", &["metric", "selector"]),
        ],
    ),
    (
        "resource",
        &[
            ("name", &["name"]),
            (
                "currentAverageUtilization",
                &["current", "averageUtilization"],
            ),
            ("currentAverageValue", &["current", "averageValue"]),
        ],
    ),
    (
        "containerResource",
        &[
            ("name", &["name"]),
            (
                "currentAverageUtilization",
                &["current", "averageUtilization"],
            ),
            ("currentAverageValue", &["current", "averageValue"]),
            ("container", &["container"]),
        ],
    ),
    (
        "external",
        &[
            ("metricName", &["metric", "name"]),
            ("metricSelector", &["metric", "selector"]),
            ("currentValue", &["current", "value"]),
            ("currentAverageValue", &["current", "averageValue"]),
        ],
    ),
];

/// The utilization v1's `targetCPUUtilizationPercentage` stands for.
fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && metric["resource"]["target"]["averageUtilization"].is_i64()
}

pub(super) fn v2_to_v1(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let mut notes: Vec<(&str, String)> = Vec::new();
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = match spec.remove("metrics") {
            Some(Value::Array(m)) => m,
            _ => Vec::new(),
        };
        if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
            spec.insert(
                "targetCPUUtilizationPercentage".into(),
                cpu["resource"]["target"]["averageUtilization"].clone(),
            );
        }
        let others: Vec<Value> = metrics
            .iter()
            .filter(|m| !is_cpu_utilization(m))
            .map(|m| flatten(m, &SPEC_MEMBERS))
            .collect();
        if !others.is_empty() {
            notes.push((METRICS, Value::Array(others).to_string()));
        }
        if let Some(behavior) = spec.remove("behavior") {
            notes.push((BEHAVIOR, go_field_names(&behavior, true).to_string()));
        }
    }
    if let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) {
        let current = match status.remove("currentMetrics") {
            Some(Value::Array(m)) => m,
            _ => Vec::new(),
        };
        for m in &current {
            let cpu = &m["resource"]["current"]["averageUtilization"];
            if m["type"] == "Resource" && m["resource"]["name"] == "cpu" && !cpu.is_null() {
                status.insert("currentCPUUtilizationPercentage".into(), cpu.clone());
            }
        }
        if !current.is_empty() {
            let v1: Vec<Value> = current
                .iter()
                .map(|m| flatten(m, &STATUS_MEMBERS))
                .collect();
            notes.push((CURRENT_METRICS, Value::Array(v1).to_string()));
        }
        if let Some(Value::Array(conditions)) = status.remove("conditions") {
            if !conditions.is_empty() {
                notes.push((CONDITIONS, Value::Array(conditions).to_string()));
            }
        }
    }
    let annotations = round_trip_cleared(o);
    for (key, value) in notes {
        annotations.insert(key.into(), Value::String(value));
    }
    drop_if_empty(o);
}

pub(super) fn v1_to_v2(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let annotation = |o: &Map<String, Value>, key: &str| -> Option<Value> {
        let text = o.get("metadata")?.get("annotations")?.get(key)?.as_str()?;
        serde_json::from_str(text).ok()
    };
    let other_metrics = annotation(o, METRICS);
    let behavior = annotation(o, BEHAVIOR);
    let current = annotation(o, CURRENT_METRICS);
    let conditions = annotation(o, CONDITIONS);
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics: Vec<Value> = match other_metrics {
            Some(Value::Array(m)) => m.iter().map(nest_spec).collect(),
            _ => Vec::new(),
        };
        let cpu = spec.remove("targetCPUUtilizationPercentage");
        if let Some(cpu) = cpu.filter(|c| !c.is_null()) {
            metrics.push(cpu_metric(cpu));
        }
        if metrics.is_empty() {
            // v1's implicit target, made explicit as kube does.
            metrics.push(cpu_metric(Value::from(80)));
        }
        spec.insert("metrics".into(), Value::Array(metrics));
        if let Some(b) = behavior.map(|b| go_field_names(&b, false)) {
            if b.as_object().is_some_and(|m| !m.is_empty()) {
                spec.insert("behavior".into(), b);
            }
        }
    }
    if let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) {
        let cpu = status.remove("currentCPUUtilizationPercentage");
        let metrics: Vec<Value> = match current {
            Some(Value::Array(m)) => m.iter().map(|m| nest(m, &STATUS_MEMBERS)).collect(),
            _ => cpu
                .filter(|c| !c.is_null())
                .map(|c| {
                    serde_json::json!({"type": "Resource", "resource":
                        {"name": "cpu", "current": {"averageUtilization": c}}})
                })
                .into_iter()
                .collect(),
        };
        if !metrics.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(metrics));
        }
        if let Some(c @ Value::Array(_)) = conditions {
            status.insert("conditions".into(), c);
        }
    }
    round_trip_cleared(o);
    drop_if_empty(o);
}

fn cpu_metric(utilization: Value) -> Value {
    serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// A v2 metric (spec or status) in v1's flat form.
fn flatten(metric: &Value, table: &[(&str, Members)]) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), metric["type"].clone());
    for (source, members) in table {
        let Some(nested) = metric.get(*source).filter(|s| s.is_object()) else {
            continue;
        };
        let mut flat = Map::new();
        for (v1, path) in *members {
            if let Some(v) = path.iter().try_fold(nested, |at, k| at.get(*k)) {
                flat.insert((*v1).into(), v.clone());
            }
        }
        out.insert((*source).into(), Value::Object(flat));
    }
    Value::Object(out)
}

/// A v1 metric (spec or status) in v2's nested form.
fn nest(metric: &Value, table: &[(&str, Members)]) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), metric["type"].clone());
    for (source, members) in table {
        let Some(flat) = metric.get(*source).filter(|s| s.is_object()) else {
            continue;
        };
        let mut nested = Value::Object(Map::new());
        for (v1, path) in *members {
            if let Some(v) = flat.get(*v1) {
                set_path(&mut nested, path, v.clone());
            }
        }
        out.insert((*source).into(), nested);
    }
    Value::Object(out)
}

/// A v1 metric spec nested, with the target type v1 leaves implicit.
fn nest_spec(metric: &Value) -> Value {
    let mut out = nest(metric, &SPEC_MEMBERS);
    for source in [
        "object",
        "pods",
        "resource",
        "containerResource",
        "external",
    ] {
        let Some(target) = out
            .get_mut(source)
            .and_then(|s| s.get_mut("target"))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let kind = match source {
            "pods" => "AverageValue",
            "resource" | "containerResource" if target.contains_key("averageUtilization") => {
                "Utilization"
            }
            "object" | "external" if !target.contains_key("averageValue") => "Value",
            _ => "AverageValue",
        };
        let mut typed = Map::new();
        typed.insert("type".into(), kind.into());
        typed.append(target);
        *target = typed;
    }
    out
}

fn set_path(at: &mut Value, path: &[&str], v: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = at;
    for k in parents {
        cur = cur
            .as_object_mut()
            .expect("built as objects")
            .entry(*k)
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let Some(o) = cur.as_object_mut() {
        o.insert((*last).into(), v);
    }
}

/// kube writes the behavior annotation from its internal type, which has
/// no JSON names: Go's field names (`ScaleUp`, `Policies`). `to_go` turns
/// v2's names into those; otherwise back.
fn go_field_names(v: &Value, to_go: bool) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let mut chars = k.chars();
                    let first = chars.next().map(|c| {
                        if to_go {
                            c.to_ascii_uppercase()
                        } else {
                            c.to_ascii_lowercase()
                        }
                    });
                    let name: String = first.into_iter().chain(chars).collect();
                    (name, go_field_names(v, to_go))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| go_field_names(v, to_go)).collect()),
        other => other.clone(),
    }
}

/// The object's annotations without the ones conversion owns: what
/// either direction starts its own from.
fn round_trip_cleared(o: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let annotations = annotations_mut(o);
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    annotations
}

fn annotations_mut(o: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let annotations = meta
        .as_object_mut()
        .expect("made an object")
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    annotations.as_object_mut().expect("made an object")
}

/// No annotations left: none at all, as Go omits an empty map.
fn drop_if_empty(o: &mut Map<String, Value>) {
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            meta.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::convert;
    use serde_json::json;

    fn v2() -> serde_json::Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"keep": "me"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"},
                        "target": {"type": "AverageValue", "averageValue": "10"}}},
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300,
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": 70, "averageValue": "140m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale"}]
            }
        })
    }

    #[test]
    fn v1_shows_the_cpu_target_and_keeps_the_rest_in_annotations() {
        let mut o = v2();
        convert(&mut o, "autoscaling", "v1").unwrap();
        assert_eq!(o["apiVersion"], "autoscaling/v1");
        assert_eq!(o["spec"]["targetCPUUtilizationPercentage"], 50);
        assert!(o["spec"].get("metrics").is_none());
        assert_eq!(o["status"]["currentCPUUtilizationPercentage"], 70);
        let a = &o["metadata"]["annotations"];
        assert_eq!(a["keep"], "me");
        let metrics: serde_json::Value =
            serde_json::from_str(a[super::METRICS].as_str().unwrap()).unwrap();
        assert_eq!(
            metrics,
            json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}},
                   {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}])
        );
        let behavior: serde_json::Value =
            serde_json::from_str(a[super::BEHAVIOR].as_str().unwrap()).unwrap();
        assert_eq!(behavior["ScaleDown"]["StabilizationWindowSeconds"], 300);
        assert!(a.get(super::CONDITIONS).is_some());
    }

    #[test]
    fn v2_survives_a_round_trip_through_v1() {
        let mut o = v2();
        convert(&mut o, "autoscaling", "v1").unwrap();
        convert(&mut o, "autoscaling", "v2").unwrap();
        let want = v2();
        assert_eq!(o["spec"]["behavior"], want["spec"]["behavior"]);
        assert_eq!(o["status"]["conditions"], want["status"]["conditions"]);
        assert_eq!(
            o["status"]["currentMetrics"],
            want["status"]["currentMetrics"]
        );
        assert_eq!(o["metadata"]["annotations"], json!({"keep": "me"}));
        // The CPU target comes back last, as kube orders it.
        assert_eq!(o["spec"]["metrics"], want["spec"]["metrics"]);
    }

    #[test]
    fn a_bare_v1_object_gets_the_implicit_cpu_target() {
        let mut o = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "a"}, "spec": {"maxReplicas": 3,
            "scaleTargetRef": {"kind": "Deployment", "name": "a"}}});
        convert(&mut o, "autoscaling", "v2").unwrap();
        assert_eq!(
            o["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert!(o["metadata"].get("annotations").is_none());
        let mut p = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "a"}, "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 30,
            "scaleTargetRef": {"kind": "Deployment", "name": "a"}}, "status": {"currentCPUUtilizationPercentage": 12}});
        convert(&mut p, "autoscaling", "v2").unwrap();
        assert_eq!(
            p["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 30}}}])
        );
        assert_eq!(
            p["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
            12
        );
    }
}
