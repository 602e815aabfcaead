//! core/v1 Events and events.k8s.io/v1 Events: one object, two field
//! namings (the newer API renamed what the Event is about, its message
//! and the deprecated counters, and dropped nothing).

use super::rename;
use serde_json::Value;

/// (core name, events.k8s.io name) of every field the versions name
/// differently.
const RENAMED: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

pub(super) fn core_to_events(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        for (core, events) in RENAMED {
            rename(o, core, events);
        }
        // core serializes an empty source and zero counters; the newer
        // API leaves out what was never set.
        if o.get("deprecatedSource")
            .is_some_and(|s| s.as_object().is_some_and(|m| m.is_empty()))
        {
            o.remove("deprecatedSource");
        }
    }
}

pub(super) fn events_to_core(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        for (core, events) in RENAMED {
            rename(o, events, core);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::convert;
    use serde_json::json;

    #[test]
    fn events_round_trip_through_core() {
        let newer = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "note": "pulled", "reason": "Pulled", "type": "Normal", "action": "Pull",
            "reportingController": "kubelet", "reportingInstance": "node-1",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
            "deprecatedCount": 3
        });
        let mut core = newer.clone();
        convert(&mut core, "", "v1").unwrap();
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "pulled");
        assert_eq!(core["reportingComponent"], "kubelet");
        assert_eq!(core["count"], 3);
        assert_eq!(core["series"]["count"], 2);
        convert(&mut core, "events.k8s.io", "v1").unwrap();
        assert_eq!(core, newer);
    }
}
