//! How Table cells render values: ages, label selectors, lists — the
//! same strings kubectl shows.

use crate::registry::lifecycle::parse_time;
use crate::selector::LabelSelector;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// kube's short human durations: "45s", "3m20s", "5h", "12d", "3y45d".
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let pair = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    let (m, h) = (s / 60, s / 3600);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 => pair(m, "m", s % 60, "s"),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 => pair(h, "h", (s % 3600) / 60, "m"),
        _ if h < 48 => format!("{h}h"),
        _ if h < 24 * 8 => pair(h / 24, "d", h % 24, "h"),
        _ if h < 24 * 365 * 2 => format!("{}d", h / 24),
        _ if h < 24 * 365 * 8 => pair(h / 24 / 365, "y", (h / 24) % 365, "d"),
        _ => format!("{}y", h / 24 / 365),
    }
}

/// Time since a timestamp field, or `<unknown>` when it is absent.
pub fn since(ts: Option<&Value>, now: DateTime<Utc>) -> String {
    match ts.and_then(Value::as_str).and_then(parse_time) {
        Some(t) => human_duration((now - t).num_seconds()),
        None => "<unknown>".into(),
    }
}

/// A `metav1.LabelSelector` as kubectl prints it (`<invalid>` when it
/// cannot be read).
pub fn selector(v: Option<&Value>) -> String {
    LabelSelector::from_metav1(v.unwrap_or(&Value::Null))
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "<invalid>".into())
}

/// A `map[string]string` selector as `k=v,…` sorted by key, `<none>` when
/// empty (kube's `labels.FormatLabels`).
pub fn label_map(v: Option<&Value>) -> String {
    or_none(&label_pairs(v))
}

/// A `map[string]string` as `k=v,…` sorted by key, empty when empty (the
/// selector string a label set selects with).
pub fn label_pairs(v: Option<&Value>) -> String {
    let mut pairs: Vec<String> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    pairs.join(",")
}

pub use crate::meta::{array_at, str_at};

pub fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

pub fn len_of(obj: &Value, pointer: &str) -> i64 {
    match obj.pointer(pointer) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

/// `s`, or `<none>` when empty.
pub fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(200), "3m20s");
        assert_eq!(human_duration(300), "5m");
        assert_eq!(human_duration(60 * 30), "30m");
        assert_eq!(human_duration(3600 * 5 + 60 * 7), "5h7m");
        assert_eq!(human_duration(3600 * 30), "30h");
        assert_eq!(human_duration(3600 * 24 * 3), "3d");
        assert_eq!(human_duration(3600 * 24 * 3 + 3600 * 5), "3d5h");
        assert_eq!(human_duration(3600 * 24 * 400), "400d");
        assert_eq!(human_duration(3600 * 24 * (365 * 3 + 10)), "3y10d");
        assert_eq!(human_duration(-5), "<invalid>");
    }

    #[test]
    fn selectors_and_maps() {
        assert_eq!(
            selector(Some(&json!({"matchLabels": {"b": "2", "a": "1"}}))),
            "a=1,b=2"
        );
        assert_eq!(
            selector(Some(
                &json!({"matchExpressions": [{"key": "x", "operator": "Bogus"}]})
            )),
            "<invalid>"
        );
        assert_eq!(label_map(Some(&json!({"z": "1", "a": "2"}))), "a=2,z=1");
        assert_eq!(label_map(None), "<none>");
    }
}
