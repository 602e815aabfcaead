//! LimitRanger (kube's plugin): a namespace's LimitRanges give new pods'
//! containers their default requests and limits (recorded in the
//! `kubernetes.io/limit-ranger` annotation), and refuse pods and claims
//! outside their minimums, maximums and limit-to-request ratios — per
//! container, per pod (containers summed, init containers at their
//! peak), per claim. Each LimitRange is applied in turn (by name): the
//! first to set a default wins, the first with a violation refuses.

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Mutating, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::quantity::nanos;
use kubeshard_core::status::ApiError;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

pub const NAME: &str = "LimitRanger";
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

pub struct LimitRanger {
    ranges: Lister,
}

/// Resource name → quantity as written.
type Amounts = BTreeMap<String, Value>;

fn amounts(v: Option<&Value>) -> Amounts {
    v.and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn text(q: &Value) -> String {
    match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn is_pods(a: &Attributes<'_>) -> bool {
    a.resource.group.is_empty() && a.resource.plural == "pods"
}

fn is_claims(a: &Attributes<'_>) -> bool {
    a.resource.group.is_empty() && a.resource.plural == "persistentvolumeclaims"
}

impl LimitRanger {
    pub fn start(init: &PluginInit<'_>) -> Self {
        Self {
            ranges: Lister::start(init, "", "limitranges"),
        }
    }

    /// The namespace's LimitRanges' items, range by range (by name).
    fn ranges(&self, namespace: &str) -> Vec<Rc<Value>> {
        let mut all = self.ranges.list(namespace);
        all.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
        all
    }
}

fn items<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    meta::array_at(range, "/spec/limits")
        .iter()
        .filter(move |i| meta::str_at(i, "/type") == kind)
}

/// Sets the Container defaults of `range` that a container lacks; what
/// was set, as the annotation's parts.
fn default_containers(range: &Value, pod: &mut Value) -> Vec<String> {
    let mut defaults = Amounts::new();
    let mut default_requests = Amounts::new();
    for item in items(range, "Container") {
        defaults.extend(amounts(item.get("default")));
        default_requests.extend(amounts(item.get("defaultRequest")));
    }
    if defaults.is_empty() && default_requests.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    for (key, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(list) = pod
            .pointer_mut(&format!("/spec/{key}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let resources = c.entry("resources").or_insert_with(|| json!({}));
            if !resources.is_object() {
                *resources = json!({});
            }
            let resources = resources.as_object_mut().expect("just made an object");
            for (field, from, word) in [
                ("requests", &default_requests, "request"),
                ("limits", &defaults, "limit"),
            ] {
                let set = fill(resources, field, from);
                if !set.is_empty() {
                    parts.push(format!("{} {word} for {what} {name}", set.join(", ")));
                }
            }
        }
    }
    parts
}

/// Adds the keys of `from` missing in `resources[field]`; their names.
fn fill(resources: &mut Map<String, Value>, field: &str, from: &Amounts) -> Vec<String> {
    if from.is_empty() {
        return Vec::new();
    }
    let target = resources.entry(field).or_insert_with(|| json!({}));
    if !target.is_object() {
        *target = json!({});
    }
    let target = target.as_object_mut().expect("just made an object");
    let mut set = Vec::new();
    for (k, v) in from {
        if !target.contains_key(k) {
            target.insert(k.clone(), v.clone());
            set.push(k.clone());
        }
    }
    set
}

/// The checks of one LimitRange item against observed requests and
/// limits (`what` is the item's type as kube prints it).
fn check(item: &Value, what: &str, requests: &Amounts, limits: &Amounts, errors: &mut Vec<String>) {
    let get = |m: &Amounts, k: &str| m.get(k).and_then(nanos).map(|n| (n, text(&m[k])));
    for (r, enforced) in amounts(item.get("min")) {
        let Some(e) = nanos(&enforced) else { continue };
        let shown = text(&enforced);
        match get(requests, &r) {
            None => errors.push(format!(
                "minimum {r} usage per {what} is {shown}.  No request is specified"
            )),
            Some((n, t)) if n < e => errors.push(format!(
                "minimum {r} usage per {what} is {shown}, but request is {t}"
            )),
            _ => {}
        }
        if let Some((n, t)) = get(limits, &r) {
            if n < e {
                errors.push(format!(
                    "minimum {r} usage per {what} is {shown}, but limit is {t}"
                ));
            }
        }
    }
    for (r, enforced) in amounts(item.get("max")) {
        let Some(e) = nanos(&enforced) else { continue };
        let shown = text(&enforced);
        if what == "PersistentVolumeClaim" {
            match get(requests, &r) {
                None => errors.push(format!(
                    "maximum {r} usage per {what} is {shown}.  No request is specified"
                )),
                Some((n, t)) if n > e => errors.push(format!(
                    "maximum {r} usage per {what} is {shown}, but request is {t}"
                )),
                _ => {}
            }
            continue;
        }
        match get(limits, &r) {
            None => errors.push(format!(
                "maximum {r} usage per {what} is {shown}.  No limit is specified"
            )),
            Some((n, t)) if n > e => errors.push(format!(
                "maximum {r} usage per {what} is {shown}, but limit is {t}"
            )),
            _ => {}
        }
        if let Some((n, t)) = get(requests, &r) {
            if n > e {
                errors.push(format!(
                    "maximum {r} usage per {what} is {shown}, but request is {t}"
                ));
            }
        }
    }
    for (r, enforced) in amounts(item.get("maxLimitRequestRatio")) {
        let Some(e) = nanos(&enforced) else { continue };
        let shown = text(&enforced);
        let req = get(requests, &r).map(|(n, _)| n).filter(|n| *n != 0);
        let lim = get(limits, &r).map(|(n, _)| n).filter(|n| *n != 0);
        match (req, lim) {
            (None, _) => errors.push(format!("{r} max limit to request ratio per {what} is {shown}, but no request is specified or request is 0")),
            (_, None) => errors.push(format!("{r} max limit to request ratio per {what} is {shown}, but no limit is specified or limit is 0")),
            (Some(req), Some(lim)) => {
                let observed = lim as f64 / req as f64;
                if observed > e as f64 / 1e9 {
                    errors.push(format!("{r} max limit to request ratio per {what} is {shown}, but provided ratio is {observed:.6}"));
                }
            }
        }
    }
}

fn resources_of(c: &Value, field: &str) -> Amounts {
    amounts(c.pointer(&format!("/resources/{field}")))
}

/// The pod's requests or limits as a whole (kube's pod aggregate),
/// written back as quantities.
fn pod_total(pod: &Value, field: &str) -> Amounts {
    kubeshard_core::quota::pod_total(pod, field)
        .into_iter()
        .map(|(k, n)| {
            let like = if k == "cpu" { "" } else { "Ki" };
            let text = kubeshard_core::quota::render(n, like);
            (k, json!(text))
        })
        .collect()
}

/// The errors of the first range `obj` violates.
fn violations(ranges: &[Rc<Value>], obj: &Value, pod: bool) -> Option<String> {
    for range in ranges {
        let mut errors = Vec::new();
        if pod {
            for item in items(range, "Container") {
                for key in ["containers", "initContainers"] {
                    for c in meta::array_at(obj, &format!("/spec/{key}")) {
                        check(
                            item,
                            "Container",
                            &resources_of(c, "requests"),
                            &resources_of(c, "limits"),
                            &mut errors,
                        );
                    }
                }
            }
            for item in items(range, "Pod") {
                check(
                    item,
                    "Pod",
                    &pod_total(obj, "requests"),
                    &pod_total(obj, "limits"),
                    &mut errors,
                );
            }
        } else {
            for item in items(range, "PersistentVolumeClaim") {
                let requests = amounts(obj.pointer("/spec/resources/requests"));
                check(
                    item,
                    "PersistentVolumeClaim",
                    &requests,
                    &Amounts::new(),
                    &mut errors,
                );
            }
        }
        let mut seen = Vec::new();
        errors.retain(|e| {
            let new = !seen.contains(e);
            seen.push(e.clone());
            new
        });
        match errors.len() {
            0 => continue,
            1 => return errors.pop(),
            _ => return Some(format!("[{}]", errors.join(", "))),
        }
    }
    None
}

impl Mutating for LimitRanger {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.creates("", "pods")
    }

    fn admit<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a mut Value>) -> Outcome<'a> {
        let Some(pod) = object else {
            return Outcome::Ready(Ok(()));
        };
        for range in self.ranges(a.namespace) {
            let parts = default_containers(&range, pod);
            if !parts.is_empty() {
                let annotations = meta::metadata_mut(pod)
                    .entry("annotations")
                    .or_insert_with(|| json!({}));
                if !annotations.is_object() {
                    *annotations = json!({});
                }
                annotations[ANNOTATION] =
                    json!(format!("LimitRanger plugin set: {}", parts.join("; ")));
            }
        }
        Outcome::Ready(Ok(()))
    }
}

impl Validating for LimitRanger {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.subresource.is_empty()
            && ((a.operation == Operation::Create && is_pods(a))
                || (matches!(a.operation, Operation::Create | Operation::Update) && is_claims(a)))
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let Some(obj) = object else {
            return Outcome::Ready(Ok(()));
        };
        if a.old_object
            .is_some_and(|o| kubeshard_core::registry::lifecycle::deletion_timestamp(o).is_some())
        {
            return Outcome::Ready(Ok(()));
        }
        let ranges = self.ranges(a.namespace);
        if ranges.is_empty() {
            return Outcome::Ready(Ok(()));
        }
        let answer = match violations(&ranges, obj, is_pods(a)) {
            Some(e) => Err(ApiError::forbidden("", &a.resource.plural, a.name, &e)),
            None => Ok(()),
        };
        Outcome::Ready(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(limits: Value) -> Rc<Value> {
        Rc::new(json!({"metadata": {"name": "r"}, "spec": {"limits": limits}}))
    }

    #[test]
    fn defaults_fill_what_containers_lack() {
        let r = range(
            json!([{"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
            "defaultRequest": {"cpu": "100m"}}]),
        );
        let mut pod = json!({"spec": {"containers": [
            {"name": "app", "resources": {"limits": {"memory": "1Gi"}}}],
            "initContainers": [{"name": "setup"}]}});
        let parts = default_containers(&r, &mut pod);
        assert_eq!(
            parts,
            [
                "cpu request for container app",
                "cpu limit for container app",
                "cpu request for init container setup",
                "cpu, memory limit for init container setup",
            ]
        );
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["limits"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
    }

    #[test]
    fn violations_are_worded_as_kubes() {
        let r = range(json!([
            {"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"},
                "maxLimitRequestRatio": {"cpu": "2"}},
        ]));
        let pod = json!({"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": "50m", "memory": "1Gi"}, "limits": {"cpu": "200m", "memory": "2Gi"}}}]}});
        let e = violations(std::slice::from_ref(&r), &pod, true).unwrap();
        assert!(e.starts_with('['), "{e}");
        for part in [
            "minimum cpu usage per Container is 100m, but request is 50m",
            "maximum memory usage per Container is 1Gi, but limit is 2Gi",
            "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
        ] {
            assert!(e.contains(part), "{part} not in {e}");
        }
        let bare = json!({"spec": {"containers": [{"name": "c"}]}});
        let e = violations(&[r], &bare, true).unwrap();
        assert!(
            e.contains("minimum cpu usage per Container is 100m.  No request is specified"),
            "{e}"
        );
        assert!(
            e.contains("maximum memory usage per Container is 1Gi.  No limit is specified"),
            "{e}"
        );
        // Per pod: containers add up; init containers count at their peak.
        let pod_range = range(json!([{"type": "Pod", "max": {"cpu": "1"}}]));
        let two = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "600m"}, "limits": {"cpu": "600m"}}},
            {"name": "b", "resources": {"requests": {"cpu": "600m"}, "limits": {"cpu": "600m"}}}]}});
        assert_eq!(
            violations(&[pod_range], &two, true).unwrap(),
            "[maximum cpu usage per Pod is 1, but limit is 1200m, maximum cpu usage per Pod is 1, but request is 1200m]"
        );
        // Claims.
        let claims = range(json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}}]));
        let small = json!({"spec": {"resources": {"requests": {"storage": "500Mi"}}}});
        assert_eq!(
            violations(&[claims], &small, false).unwrap(),
            "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
        );
    }
}
