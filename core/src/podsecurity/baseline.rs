//! The baseline level's checks (restricted runs most of them too).

use super::{
    containers_phrase, context, fail, join_quote, name, plural, setters, Failure, PodView,
};
use serde_json::Value;
use std::collections::BTreeSet;

const APPARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

pub fn app_armor(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let bad_type = |v: Option<&Value>| {
        v.and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .filter(|t| !matches!(*t, "RuntimeDefault" | "Localhost"))
            .map(str::to_string)
    };
    let mut types = BTreeSet::new();
    let pod_bad = bad_type(pod.pod_context("appArmorProfile"));
    types.extend(pod_bad.clone());
    let mut bad_containers = Vec::new();
    for c in pod.containers() {
        if let Some(t) = bad_type(context(c, "appArmorProfile")) {
            types.insert(t);
            bad_containers.push(name(c));
        }
    }
    let mut annotations = BTreeSet::new();
    if let Some(m) = pod.metadata.get("annotations").and_then(Value::as_object) {
        for (k, v) in m {
            let v = v.as_str().unwrap_or("");
            if k.starts_with(APPARMOR_PREFIX)
                && !(v.is_empty() || v == "runtime/default" || v.starts_with("localhost/"))
            {
                annotations.insert(format!("{k}=\"{v}\""));
            }
        }
    }
    let values: Vec<String> = types
        .into_iter()
        .chain(annotations.iter().cloned())
        .collect();
    if values.is_empty() {
        return None;
    }
    let mut who = setters(pod_bad.is_some(), &bad_containers);
    if !annotations.is_empty() {
        let word = plural(annotations.len(), "annotation", "annotations");
        who = if who.is_empty() {
            word.to_string()
        } else {
            format!("{who} and {word}")
        };
    }
    fail(
        plural(
            values.len(),
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
        ),
        format!(
            "{who} must not set AppArmor profile type to {}",
            join_quote(&values)
        ),
    )
}

const DEFAULT_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Containers adding capabilities outside `allowed`, and those
/// capabilities (a sorted set).
pub(super) fn added_capabilities<'a>(
    pod: &PodView<'a>,
    allowed: &[&str],
) -> (Vec<&'a str>, BTreeSet<String>) {
    let mut who = Vec::new();
    let mut caps = BTreeSet::new();
    for c in pod.containers() {
        let bad: Vec<&str> = context(c, "capabilities")
            .and_then(|k| k.get("add"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|cap| !allowed.contains(cap))
            .collect();
        if !bad.is_empty() {
            who.push(name(c));
            caps.extend(bad.into_iter().map(str::to_string));
        }
    }
    (who, caps)
}

pub fn capabilities(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let (who, caps) = added_capabilities(pod, DEFAULT_CAPABILITIES);
    if who.is_empty() {
        return None;
    }
    let caps: Vec<String> = caps.into_iter().collect();
    fail(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&who),
            join_quote(&caps)
        ),
    )
}

pub fn host_namespaces(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|k| pod.spec.get(**k).and_then(Value::as_bool) == Some(true))
        .map(|k| format!("{k}=true"))
        .collect();
    (!set.is_empty())
        .then(|| fail("host namespaces", set.join(", ")))
        .flatten()
}

fn volumes<'a>(pod: &PodView<'a>) -> &'a [Value] {
    pod.spec
        .get("volumes")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub fn host_path_volumes(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let names: Vec<&str> = volumes(pod)
        .iter()
        .filter(|v| v.get("hostPath").is_some_and(|h| !h.is_null()))
        .map(name)
        .collect();
    if names.is_empty() {
        return None;
    }
    fail(
        "hostPath volumes",
        format!(
            "{} {}",
            plural(names.len(), "volume", "volumes"),
            join_quote(&names)
        ),
    )
}

pub fn host_ports(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let mut who = Vec::new();
    let mut ports = BTreeSet::new();
    for c in pod.containers() {
        let mine: Vec<String> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .map(|p| p.to_string())
            .collect();
        if !mine.is_empty() {
            who.push(name(c));
            ports.extend(mine);
        }
    }
    if who.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    fail(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&who),
            plural(who.len(), "uses", "use"),
            plural(ports.len(), "hostPort", "hostPorts"),
            ports.join(", ")
        ),
    )
}

pub fn host_probes(pod: &PodView<'_>, minor: u32) -> Option<Failure> {
    if minor < 34 {
        return None;
    }
    let mut who = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for c in pod.containers() {
        let handlers = ["livenessProbe", "readinessProbe", "startupProbe"]
            .iter()
            .filter_map(|p| c.get(*p))
            .chain(
                ["postStart", "preStop"]
                    .iter()
                    .filter_map(|h| c.get("lifecycle").and_then(|l| l.get(*h))),
            );
        for h in handlers {
            for kind in ["httpGet", "tcpSocket"] {
                if let Some(host) = h
                    .get(kind)
                    .and_then(|k| k.get("host"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    who.insert(name(c).to_string());
                    hosts.insert(host.to_string());
                }
            }
        }
    }
    if who.is_empty() {
        return None;
    }
    let who: Vec<String> = who.into_iter().collect();
    let hosts: Vec<String> = hosts.into_iter().collect();
    fail(
        "probe or lifecycle host",
        format!(
            "{} {} probe or lifecycle {} {}",
            containers_phrase(&who),
            plural(who.len(), "uses", "use"),
            plural(hosts.len(), "host", "hosts"),
            join_quote(&hosts)
        ),
    )
}

pub fn privileged(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let who: Vec<&str> = pod
        .containers()
        .filter(|c| context(c, "privileged").and_then(Value::as_bool) == Some(true))
        .map(name)
        .collect();
    if who.is_empty() {
        return None;
    }
    fail(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&who)
        ),
    )
}

pub fn proc_mount(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let mut who = Vec::new();
    let mut values = BTreeSet::new();
    for c in pod.containers() {
        if let Some(m) = context(c, "procMount")
            .and_then(Value::as_str)
            .filter(|m| *m != "Default")
        {
            who.push(name(c));
            values.insert(m.to_string());
        }
    }
    if who.is_empty() {
        return None;
    }
    let values: Vec<String> = values.into_iter().collect();
    fail(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&who),
            join_quote(&values)
        ),
    )
}

pub fn se_linux(pod: &PodView<'_>, minor: u32) -> Option<Failure> {
    let allowed = |t: &str| {
        matches!(
            t,
            "" | "container_t" | "container_init_t" | "container_kvm_t"
        ) || (t == "container_engine_t" && minor >= 31)
    };
    let mut types = BTreeSet::new();
    let (mut user, mut role) = (false, false);
    let mut judge = |o: Option<&Value>| {
        let Some(o) = o else { return false };
        let mut bad = false;
        if let Some(t) = o
            .get("type")
            .and_then(Value::as_str)
            .filter(|t| !allowed(t))
        {
            types.insert(t.to_string());
            bad = true;
        }
        if o.get("user")
            .and_then(Value::as_str)
            .is_some_and(|u| !u.is_empty())
        {
            user = true;
            bad = true;
        }
        if o.get("role")
            .and_then(Value::as_str)
            .is_some_and(|r| !r.is_empty())
        {
            role = true;
            bad = true;
        }
        bad
    };
    let pod_bad = judge(pod.pod_context("seLinuxOptions"));
    let who: Vec<&str> = pod
        .containers()
        .filter(|c| judge(context(c, "seLinuxOptions")))
        .map(name)
        .collect();
    if !pod_bad && who.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !types.is_empty() {
        let types: Vec<String> = types.into_iter().collect();
        data.push(format!(
            "{} {}",
            plural(types.len(), "type", "types"),
            join_quote(&types)
        ));
    }
    if user {
        data.push("user may not be set".to_string());
    }
    if role {
        data.push("role may not be set".to_string());
    }
    fail(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters(pod_bad, &who),
            data.join("; ")
        ),
    )
}

/// Pod and containers setting a seccomp type other than RuntimeDefault
/// and Localhost, and those types.
pub(super) fn bad_seccomp<'a>(pod: &PodView<'a>) -> Option<Failure> {
    let bad = |v: Option<&Value>| {
        v.and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .filter(|t| !matches!(*t, "RuntimeDefault" | "Localhost"))
            .map(str::to_string)
    };
    let mut types = BTreeSet::new();
    let pod_bad = bad(pod.pod_context("seccompProfile"));
    types.extend(pod_bad.clone());
    let mut who = Vec::new();
    for c in pod.containers() {
        if let Some(t) = bad(context(c, "seccompProfile")) {
            types.insert(t);
            who.push(name(c));
        }
    }
    if types.is_empty() {
        return None;
    }
    let types: Vec<String> = types.into_iter().collect();
    fail(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters(pod_bad.is_some(), &who),
            join_quote(&types)
        ),
    )
}

pub fn seccomp(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    bad_seccomp(pod)
}

fn allowed_sysctl(name: &str, minor: u32) -> bool {
    match name {
        "kernel.shm_rmid_forced"
        | "net.ipv4.ip_local_port_range"
        | "net.ipv4.tcp_syncookies"
        | "net.ipv4.ping_group_range"
        | "net.ipv4.ip_unprivileged_port_start" => true,
        "net.ipv4.ip_local_reserved_ports" => minor >= 27,
        "net.ipv4.tcp_keepalive_time"
        | "net.ipv4.tcp_fin_timeout"
        | "net.ipv4.tcp_keepalive_intvl"
        | "net.ipv4.tcp_keepalive_probes" => minor >= 29,
        "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem" => minor >= 32,
        _ => false,
    }
}

pub fn sysctls(pod: &PodView<'_>, minor: u32) -> Option<Failure> {
    let bad: Vec<&str> = pod
        .pod_context("sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|n| !allowed_sysctl(n, minor))
        .collect();
    (!bad.is_empty())
        .then(|| fail("forbidden sysctls", bad.join(", ")))
        .flatten()
}

pub fn windows_host_process(pod: &PodView<'_>, _minor: u32) -> Option<Failure> {
    let host = |v: Option<&Value>| {
        v.and_then(|w| w.get("hostProcess"))
            .and_then(Value::as_bool)
            == Some(true)
    };
    let pod_bad = host(pod.pod_context("windowsOptions"));
    let who: Vec<&str> = pod
        .containers()
        .filter(|c| host(context(c, "windowsOptions")))
        .map(name)
        .collect();
    if !pod_bad && who.is_empty() {
        return None;
    }
    fail(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters(pod_bad, &who)
        ),
    )
}
