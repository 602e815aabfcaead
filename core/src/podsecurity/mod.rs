//! The Pod Security Standards as kube's PodSecurity admission checks them:
//! levels (`privileged`, `baseline`, `restricted`) and versions
//! (`latest`, `v1.N`) read from a namespace's labels, and the checks each
//! level runs over a pod spec, with kube's reasons and details, in kube's
//! order. Pure functions over the pod's JSON; the plugin lives in the
//! server crate.

mod baseline;
mod restricted;

use serde_json::Value;

/// The newest policy version this server knows (`latest`).
pub const LATEST_MINOR: u32 = 34;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A policy version: `latest`, or `v1.N` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The minor version the checks run at (`latest`, and anything newer
    /// than this server knows, run at [`LATEST_MINOR`]).
    pub minor: u32,
    /// As it is printed (`latest`, `v1.30`).
    pub text: String,
}

impl Version {
    pub fn latest() -> Version {
        Version {
            minor: LATEST_MINOR,
            text: "latest".into(),
        }
    }

    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::latest());
        }
        let minor = s.strip_prefix("v1.")?;
        if minor.is_empty()
            || !minor.bytes().all(|b| b.is_ascii_digit())
            || (minor.len() > 1 && minor.starts_with('0'))
        {
            return None;
        }
        let n: u32 = minor.parse().ok()?;
        Some(Version {
            minor: n.min(LATEST_MINOR),
            text: s.to_string(),
        })
    }
}

/// A level at a version (`restricted:latest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl std::fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version.text)
    }
}

/// One failed check: kube's reason and its detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub detail: String,
}

/// kube's rendering of failures: `reason (detail), reason (detail)`.
pub fn describe(failures: &[Failure]) -> String {
    failures
        .iter()
        .map(|f| {
            if f.detail.is_empty() {
                f.reason.clone()
            } else {
                format!("{} ({})", f.reason, f.detail)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pod (or template) a check reads: its metadata and spec.
pub struct PodView<'a> {
    pub metadata: &'a Value,
    pub spec: &'a Value,
}

impl<'a> PodView<'a> {
    pub fn of(pod: &'a Value) -> PodView<'a> {
        PodView {
            metadata: pod.get("metadata").unwrap_or(&Value::Null),
            spec: pod.get("spec").unwrap_or(&Value::Null),
        }
    }

    /// initContainers, containers, then ephemeralContainers.
    pub fn containers(&self) -> impl Iterator<Item = &'a Value> + 'a {
        let spec = self.spec;
        ["initContainers", "containers", "ephemeralContainers"]
            .into_iter()
            .flat_map(move |k| {
                spec.get(k)
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
            })
    }

    pub fn pod_context(&self, key: &str) -> Option<&'a Value> {
        self.spec
            .get("securityContext")
            .and_then(|s| s.get(key))
            .filter(|v| !v.is_null())
    }

    pub fn is_windows(&self) -> bool {
        self.spec.pointer("/os/name").and_then(Value::as_str) == Some("windows")
    }
}

fn name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

fn context<'a>(c: &'a Value, key: &str) -> Option<&'a Value> {
    c.get("securityContext")
        .and_then(|s| s.get(key))
        .filter(|v| !v.is_null())
}

/// `"a", "b"`.
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(|i| format!("\"{}\"", i.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural<'s>(n: usize, one: &'s str, many: &'s str) -> &'s str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase<S: AsRef<str>>(names: &[S]) -> String {
    format!(
        "{} {}",
        plural(names.len(), "container", "containers"),
        join_quote(names)
    )
}

/// Who set something: `pod`, `containers "a", "b"`, joined by " and ".
fn setters<S: AsRef<str>>(pod: bool, containers: &[S]) -> String {
    let mut parts = Vec::new();
    if pod {
        parts.push("pod".to_string());
    }
    if !containers.is_empty() {
        parts.push(containers_phrase(containers));
    }
    parts.join(" and ")
}

fn fail(reason: &str, detail: String) -> Option<Failure> {
    Some(Failure {
        reason: reason.to_string(),
        detail,
    })
}

type Check = fn(&PodView<'_>, u32) -> Option<Failure>;

/// The checks of a level, in kube's order.
fn checks(level: Level) -> Vec<Check> {
    match level {
        Level::Privileged => Vec::new(),
        Level::Baseline => vec![
            baseline::app_armor,
            baseline::capabilities,
            baseline::host_namespaces,
            baseline::host_path_volumes,
            baseline::host_ports,
            baseline::host_probes,
            baseline::privileged,
            baseline::proc_mount,
            baseline::se_linux,
            baseline::seccomp,
            baseline::sysctls,
            baseline::windows_host_process,
        ],
        Level::Restricted => vec![
            baseline::app_armor,
            baseline::host_namespaces,
            baseline::host_ports,
            baseline::host_probes,
            baseline::privileged,
            baseline::proc_mount,
            baseline::se_linux,
            baseline::sysctls,
            baseline::windows_host_process,
            restricted::allow_privilege_escalation,
            restricted::capabilities,
            restricted::volumes,
            restricted::run_as_non_root,
            restricted::run_as_user,
            restricted::seccomp,
        ],
    }
}

/// Every check `policy` fails for `pod`.
pub fn evaluate(policy: &LevelVersion, pod: &PodView<'_>) -> Vec<Failure> {
    checks(policy.level)
        .into_iter()
        .filter_map(|check| check(pod, policy.version.minor))
        .collect()
}

#[cfg(test)]
mod tests;
