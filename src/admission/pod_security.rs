//! PodSecurity (kube's plugin): the Pod Security Standards a namespace's
//! `pod-security.kubernetes.io/{enforce,audit,warn}` labels ask for.
//! Pods that break the enforced level are refused; the warn level's
//! breaches come back as warnings (for pods and for the pod templates of
//! workloads, which are never refused), the audit level's as audit
//! annotations. Namespace labels are validated, and tightening a
//! namespace's enforced level warns about the pods already there.
//! Exemptions and defaults come from a PodSecurityConfiguration in
//! `--admission-control-config-file`.

use super::namespace_labels::{labels, NamespaceLabels};
use super::{Attributes, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::podsecurity::{self, Level, LevelVersion, PodView, Version};
use kubeshard_core::status::{field_invalid, ApiError, StatusCause};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub const NAME: &str = "PodSecurity";
const PREFIX: &str = "pod-security.kubernetes.io/";
/// At most this many existing pods are judged when a namespace tightens.
const MAX_PODS_CHECKED: usize = 3000;

/// Pod subresources that never change what a pod runs.
const IGNORED_SUBRESOURCES: &[&str] = &[
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// Workloads whose pod templates are judged (warn and audit only).
const WORKLOADS: &[(&str, &str)] = &[
    ("", "replicationcontrollers"),
    ("", "podtemplates"),
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
];

/// The three modes' policies.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Policy {
    enforce: LevelVersion,
    audit: LevelVersion,
    warn: LevelVersion,
}

impl Policy {
    fn fully_privileged(&self) -> bool {
        [&self.enforce, &self.audit, &self.warn]
            .iter()
            .all(|p| p.level == Level::Privileged)
    }
}

fn privileged() -> LevelVersion {
    LevelVersion {
        level: Level::Privileged,
        version: Version::latest(),
    }
}

/// The plugin's configuration (PodSecurityConfiguration).
#[derive(Debug, Clone)]
pub struct Config {
    defaults: Policy,
    exempt_users: Vec<String>,
    exempt_namespaces: Vec<String>,
    exempt_runtime_classes: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            defaults: Policy {
                enforce: privileged(),
                audit: privileged(),
                warn: privileged(),
            },
            exempt_users: Vec::new(),
            exempt_namespaces: Vec::new(),
            exempt_runtime_classes: Vec::new(),
        }
    }
}

impl Config {
    /// From a PodSecurityConfiguration (v1, v1beta1 or v1alpha1).
    pub fn parse(v: &Value) -> Result<Config, String> {
        let kind = meta::str_at(v, "/kind");
        if !kind.is_empty() && kind != "PodSecurityConfiguration" {
            return Err(format!("expected a PodSecurityConfiguration, got {kind}"));
        }
        let defaults = v.get("defaults").cloned().unwrap_or(Value::Null);
        let mode = |m: &str| -> Result<LevelVersion, String> {
            let level = match meta::str_at(&defaults, &format!("/{m}")) {
                "" => Level::Privileged,
                l => Level::parse(l).ok_or_else(|| {
                    format!("defaults.{m}: Invalid value: {l:?}: must be one of privileged, baseline, restricted")
                })?,
            };
            let version = match meta::str_at(&defaults, &format!("/{m}-version")) {
                "" => Version::latest(),
                s => Version::parse(s).ok_or_else(|| {
                    format!("defaults.{m}-version: Invalid value: {s:?}: must be \"latest\" or \"v1.x\"")
                })?,
            };
            Ok(LevelVersion { level, version })
        };
        let list = |k: &str| -> Vec<String> {
            meta::array_at(v, &format!("/exemptions/{k}"))
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let users = list("usernames");
        if users.iter().any(String::is_empty) {
            return Err(
                "exemptions.usernames: Invalid value: \"\": username must not be empty".into(),
            );
        }
        Ok(Config {
            defaults: Policy {
                enforce: mode("enforce")?,
                audit: mode("audit")?,
                warn: mode("warn")?,
            },
            exempt_users: users,
            exempt_namespaces: list("namespaces"),
            exempt_runtime_classes: list("runtimeClasses"),
        })
    }
}

/// The policy a namespace's labels ask for, and what is wrong with them
/// (kube falls back: enforce to restricted, audit and warn to
/// privileged, versions to latest).
fn policy(labels: &Map<String, Value>, defaults: &Policy) -> (Policy, Vec<StatusCause>) {
    let mut errors = Vec::new();
    let label = |k: &str| labels.get(&format!("{PREFIX}{k}")).and_then(Value::as_str);
    let mut mode = |m: &str, default: &LevelVersion, fallback: Level| -> (LevelVersion, bool) {
        let mut valid_level = false;
        let level = match label(m) {
            None => default.level,
            Some(l) => match Level::parse(l) {
                Some(level) => {
                    valid_level = true;
                    level
                }
                None => {
                    errors.push(field_invalid(
                        &format!("metadata.labels[{PREFIX}{m}]"),
                        l,
                        "must be one of privileged, baseline, restricted",
                    ));
                    fallback
                }
            },
        };
        let version = match label(&format!("{m}-version")) {
            None => default.version.clone(),
            Some(s) => Version::parse(s).unwrap_or_else(|| {
                errors.push(field_invalid(
                    &format!("metadata.labels[{PREFIX}{m}-version]"),
                    s,
                    "must be \"latest\" or \"v1.x\"",
                ));
                Version::latest()
            }),
        };
        (LevelVersion { level, version }, valid_level)
    };
    let (enforce, enforce_labelled) = mode("enforce", &defaults.enforce, Level::Restricted);
    let (audit, _) = mode("audit", &defaults.audit, Level::Privileged);
    let (mut warn, _) = mode("warn", &defaults.warn, Level::Privileged);
    // Without a warn label, warn is at least as strict as enforce.
    if label("warn").is_none() && enforce_labelled && enforce.level > warn.level {
        warn.level = enforce.level;
        if label("warn-version").is_none() {
            warn.version = enforce.version.clone();
        }
    }
    (
        Policy {
            enforce,
            audit,
            warn,
        },
        errors,
    )
}

pub struct PodSecurity {
    config: Config,
    namespaces: NamespaceLabels,
}

impl PodSecurity {
    pub fn start(config: Option<&Value>, namespaces: NamespaceLabels) -> Self {
        let config = config
            .map(|c| Config::parse(c).expect("checked when the configuration file was read"))
            .unwrap_or_default();
        Self { config, namespaces }
    }

    fn exempt_user(&self, a: &Attributes<'_>) -> bool {
        !a.user.name.is_empty() && self.config.exempt_users.contains(&a.user.name)
    }

    fn exempt_namespace(&self, ns: &str) -> bool {
        !ns.is_empty() && self.config.exempt_namespaces.iter().any(|n| n == ns)
    }

    /// Judges a pod (or a workload's template, `enforce` false) at the
    /// namespace's policy.
    async fn judge(
        &self,
        a: &Attributes<'_>,
        pod: &PodView<'_>,
        enforce: bool,
    ) -> Result<(), ApiError> {
        if self.exempt_namespace(a.namespace) {
            a.annotate(format!("{PREFIX}exempt"), "namespace".into());
            return Ok(());
        }
        if self.exempt_user(a) {
            a.annotate(format!("{PREFIX}exempt"), "user".into());
            return Ok(());
        }
        let labels = match self.namespaces.of(a.api, a.namespace).await {
            Ok(l) => l,
            Err(e) if enforce => {
                a.annotate(
                    format!("{PREFIX}error"),
                    format!(
                        "failed to lookup namespace {:?}: {}",
                        a.namespace, e.message
                    ),
                );
                return Err(ApiError::internal(&format!(
                    "failed to lookup namespace {:?}",
                    a.namespace
                )));
            }
            Err(e) => {
                a.annotate(
                    format!("{PREFIX}error"),
                    format!(
                        "failed to lookup namespace {:?}: {}",
                        a.namespace, e.message
                    ),
                );
                return Ok(());
            }
        };
        // No label of ours and privileged defaults: nothing to judge (the
        // common namespace; no policy is built).
        let ours = labels.keys().any(|k| k.starts_with(PREFIX));
        if !ours && self.config.defaults.fully_privileged() {
            if enforce {
                a.annotate(
                    format!("{PREFIX}enforce-policy"),
                    "privileged:latest".into(),
                );
            }
            return Ok(());
        }
        let (policy, errors) = policy(&labels, &self.config.defaults);
        if !errors.is_empty() {
            let texts: Vec<String> = errors.iter().map(|c| c.error_string()).collect();
            a.annotate(
                format!("{PREFIX}error"),
                format!("Failed to parse policy: {}", aggregate(&texts)),
            );
        }
        if errors.is_empty() && policy.fully_privileged() {
            if enforce {
                a.annotate(
                    format!("{PREFIX}enforce-policy"),
                    "privileged:latest".into(),
                );
            }
            return Ok(());
        }
        if !enforce
            && policy.warn.level == Level::Privileged
            && policy.audit.level == Level::Privileged
            && errors.is_empty()
        {
            return Ok(());
        }
        let runtime_class = meta::str_at(pod.spec, "/runtimeClassName");
        if !runtime_class.is_empty()
            && self
                .config
                .exempt_runtime_classes
                .iter()
                .any(|r| r == runtime_class)
        {
            a.annotate(format!("{PREFIX}exempt"), "runtimeClass".into());
            return Ok(());
        }
        let mut cache: BTreeMap<String, String> = BTreeMap::new();
        let mut judged = |lv: &LevelVersion| -> String {
            cache
                .entry(lv.to_string())
                .or_insert_with(|| podsecurity::describe(&podsecurity::evaluate(lv, pod)))
                .clone()
        };
        if enforce {
            a.annotate(
                format!("{PREFIX}enforce-policy"),
                policy.enforce.to_string(),
            );
            let failures = judged(&policy.enforce);
            if !failures.is_empty() {
                audit_violations(a, &policy.audit, &judged(&policy.audit));
                return Err(ApiError::forbidden(
                    "",
                    "pods",
                    a.name,
                    &format!(
                        "violates PodSecurity {:?}: {failures}",
                        policy.enforce.to_string()
                    ),
                ));
            }
        }
        audit_violations(a, &policy.audit, &judged(&policy.audit));
        let warn = judged(&policy.warn);
        if !warn.is_empty() {
            a.warn(format!(
                "would violate PodSecurity {:?}: {warn}",
                policy.warn.to_string()
            ));
        }
        Ok(())
    }

    /// A namespace's labels: valid (or invalid as they were), and when the
    /// enforced level tightens, warnings about the pods already there.
    async fn namespace(&self, a: &Attributes<'_>, ns: &Value) -> Result<(), ApiError> {
        let (new, errors) = policy(&labels(ns), &self.config.defaults);
        if !errors.is_empty() {
            let old_errors = a
                .old_object
                .map(|o| policy(&labels(o), &self.config.defaults).1);
            let tolerated = old_errors
                .as_ref()
                .is_some_and(|old| !old.is_empty() && *old == errors);
            if !tolerated {
                return Err(ApiError::invalid("", "Namespace", meta::name(ns), errors));
            }
        }
        if a.operation != Operation::Update || !errors.is_empty() {
            return Ok(());
        }
        let Some(old) = a.old_object else {
            return Ok(());
        };
        let (old_policy, _) = policy(&labels(old), &self.config.defaults);
        if new.enforce == old_policy.enforce || new.enforce.level == Level::Privileged {
            return Ok(());
        }
        if new.enforce.version == old_policy.enforce.version
            && new.enforce.level <= old_policy.enforce.level
        {
            return Ok(());
        }
        let name = meta::name(ns);
        if self.exempt_namespace(name) {
            return Ok(());
        }
        for w in self.existing_pods(a, name, &new.enforce).await {
            a.warn(w);
        }
        Ok(())
    }

    /// kube's warnings about a namespace's pods that break `enforce`.
    async fn existing_pods(
        &self,
        a: &Attributes<'_>,
        ns: &str,
        enforce: &LevelVersion,
    ) -> Vec<String> {
        let catalog = a.api.catalog();
        let Some(info) = catalog.lookup("", "v1", "pods") else {
            return Vec::new();
        };
        let pods = match crate::storage::list_in(a.api.storage(), info, ns).await {
            Ok(p) => p,
            Err(_) => {
                return vec![
                    "failed to list pods while checking new PodSecurity enforce level".into(),
                ]
            }
        };
        let pods: Vec<Value> = pods
            .iter()
            .map(|p| p.to_value())
            .filter(|p| {
                let rc = meta::str_at(p, "/spec/runtimeClassName");
                rc.is_empty() || !self.config.exempt_runtime_classes.iter().any(|r| r == rc)
            })
            .collect();
        let total = pods.len();
        let checked = total.min(MAX_PODS_CHECKED);
        // Reasons (without details) → the pods failing with them.
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in pods.iter().take(checked) {
            let failures = podsecurity::evaluate(enforce, &PodView::of(p));
            if failures.is_empty() {
                continue;
            }
            let reasons: Vec<&str> = failures.iter().map(|f| f.reason.as_str()).collect();
            groups
                .entry(reasons.join(", "))
                .or_default()
                .push(meta::name(p).to_string());
        }
        let mut out = Vec::new();
        if checked < total {
            out.push(format!("new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"));
        }
        if groups.is_empty() {
            return out;
        }
        out.push(format!(
            "existing pods in namespace {ns:?} violate the new PodSecurity enforce level {:?}",
            enforce.to_string()
        ));
        let mut lines: Vec<String> = groups
            .into_iter()
            .map(|(reasons, mut names)| {
                names.sort();
                match names.len() {
                    1 => format!("{}: {reasons}", names[0]),
                    2 => format!("{} (and 1 other pod): {reasons}", names[0]),
                    n => format!("{} (and {} other pods): {reasons}", names[0], n - 1),
                }
            })
            .collect();
        lines.sort();
        out.extend(lines);
        out
    }
}

/// Records the audit level's breaches, if any, on the audit event.
fn audit_violations(a: &Attributes<'_>, audit: &LevelVersion, failures: &str) {
    if !failures.is_empty() {
        a.annotate(
            format!("{PREFIX}audit-violations"),
            format!(
                "would violate PodSecurity {:?}: {failures}",
                audit.to_string()
            ),
        );
    }
}

fn aggregate(texts: &[String]) -> String {
    match texts {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Whether a pod update changes what the pod runs (kube judges only
/// those): container counts, images, or ephemeral containers.
fn significant_update(new: &Value, old: &Value) -> bool {
    for key in ["containers", "initContainers"] {
        let (n, o) = (
            meta::array_at(new, &format!("/spec/{key}")),
            meta::array_at(old, &format!("/spec/{key}")),
        );
        if n.len() != o.len()
            || n.iter()
                .zip(o)
                .any(|(a, b)| a.get("image") != b.get("image"))
        {
            return true;
        }
    }
    let old_ephemeral = meta::array_at(old, "/spec/ephemeralContainers");
    meta::array_at(new, "/spec/ephemeralContainers")
        .iter()
        .any(|c| {
            match old_ephemeral
                .iter()
                .find(|o| o.get("name") == c.get("name"))
            {
                None => true,
                Some(o) => o.get("image") != c.get("image"),
            }
        })
}

/// A workload's pod template.
fn template<'a>(group: &str, plural: &str, obj: &'a Value) -> Option<&'a Value> {
    let path = match (group, plural) {
        ("", "podtemplates") => "/template",
        ("batch", "cronjobs") => "/spec/jobTemplate/spec/template",
        _ => "/spec/template",
    };
    obj.pointer(path).filter(|t| !t.is_null())
}

impl Validating for PodSecurity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        if !matches!(a.operation, Operation::Create | Operation::Update) {
            return false;
        }
        let gr = (a.resource.group.as_str(), a.resource.plural.as_str());
        match gr {
            ("", "pods") => !IGNORED_SUBRESOURCES.contains(&a.subresource),
            ("", "namespaces") => a.subresource.is_empty(),
            _ => a.subresource.is_empty() && WORKLOADS.contains(&gr),
        }
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        let Some(obj) = object else {
            return Outcome::Ready(Ok(()));
        };
        let (group, plural) = (a.resource.group.as_str(), a.resource.plural.as_str());
        match (group, plural) {
            ("", "namespaces") => Outcome::later(self.namespace(a, obj)),
            ("", "pods") => {
                if a.operation == Operation::Update
                    && a.old_object
                        .is_some_and(|old| !significant_update(obj, old))
                {
                    return Outcome::Ready(Ok(()));
                }
                Outcome::later(async move { self.judge(a, &PodView::of(obj), true).await })
            }
            _ => match template(group, plural, obj) {
                Some(t) => {
                    Outcome::later(async move { self.judge(a, &PodView::of(t), false).await })
                }
                None => Outcome::Ready(Ok(())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn labels_make_the_policy_as_kube_reads_them() {
        let defaults = Config::default().defaults;
        let (p, errs) = policy(
            &labels(json!({"pod-security.kubernetes.io/enforce": "baseline"})),
            &defaults,
        );
        assert!(errs.is_empty());
        assert_eq!(p.enforce.to_string(), "baseline:latest");
        // Warn follows enforce when not labelled.
        assert_eq!(p.warn.to_string(), "baseline:latest");
        assert_eq!(p.audit.to_string(), "privileged:latest");
        let (p, errs) = policy(
            &labels(json!({"pod-security.kubernetes.io/enforce": "bogus",
                "pod-security.kubernetes.io/warn-version": "v2"})),
            &defaults,
        );
        assert_eq!(p.enforce.level, Level::Restricted, "fails closed");
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[0].error_string(),
            "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"bogus\": must be one of privileged, baseline, restricted"
        );
        assert!(Config::parse(&json!({"kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "nope"}}))
        .is_err());
        let c = Config::parse(&json!({"apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration", "defaults": {"enforce": "baseline", "enforce-version": "v1.30"},
            "exemptions": {"namespaces": ["kube-system"]}})).unwrap();
        assert_eq!(c.defaults.enforce.to_string(), "baseline:v1.30");
        assert_eq!(c.exempt_namespaces, ["kube-system"]);
    }

    #[test]
    fn only_significant_pod_updates_are_judged() {
        let old = json!({"spec": {"containers": [{"name": "c", "image": "a"}]}});
        let relabelled = json!({"metadata": {"labels": {"x": "y"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}});
        assert!(!significant_update(&relabelled, &old));
        let new_image = json!({"spec": {"containers": [{"name": "c", "image": "b"}]}});
        assert!(significant_update(&new_image, &old));
        let debug = json!({"spec": {"containers": [{"name": "c", "image": "a"}],
            "ephemeralContainers": [{"name": "d", "image": "busybox"}]}});
        assert!(significant_update(&debug, &old));
    }
}
