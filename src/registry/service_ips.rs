//! Service cluster IPs, allocated as kube 1.33+ does: each address a
//! Service holds is reserved by creating the networking.k8s.io/v1
//! IPAddress object named by it (its parentRef naming the Service). The
//! store's create-if-absent makes that reservation atomic across shards,
//! so two Services can never hold one address; the objects are what
//! `kubectl get ipaddresses` shows and what a repair pass reconciles.

use super::{create_as, delete_as, APISERVER};
use crate::context::Api;
use crate::storage::{Storage, StorageResult};
use kubeshard_core::cidr::{family_of, Cidr};
use kubeshard_core::meta;
use kubeshard_core::registry::deletion::DeleteOptions;
use kubeshard_core::status::{field_invalid, field_not_supported, ApiError, StatusCause};
use rand::Rng;
use serde_json::{json, Value};
use std::net::IpAddr;

/// Random draws before the allocator walks the range in order.
const RANDOM_TRIES: usize = 16;
/// The most addresses one walk tries (a range this full is full enough).
const MAX_WALK: u128 = 1 << 16;

const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
const MANAGER: &str = "ipallocator.k8s.io";

/// The Service a reservation belongs to.
struct Parent<'a> {
    namespace: &'a str,
    name: &'a str,
}

/// Fills in a new Service's `clusterIP`, `clusterIPs`, `ipFamilies` and
/// `ipFamilyPolicy`, reserving every address (none for a dry run, which
/// only picks a free one). Answers the addresses reserved, for
/// [`release`] if the Service is not stored after all.
pub async fn allocate(api: &Api, obj: &mut Value, dry_run: bool) -> Result<Vec<String>, ApiError> {
    let ranges = &api.config.service_cidrs.0;
    let namespace = meta::namespace(obj).to_string();
    let name = meta::name(obj).to_string();
    let invalid = |causes: Vec<StatusCause>| ApiError::invalid("", "Service", &name, causes);
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(vec![]);
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return Ok(vec![]);
    }
    let asked: Vec<String> = match spec.get("clusterIPs").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => match spec.get("clusterIP").and_then(Value::as_str) {
            Some(ip) if !ip.is_empty() => vec![ip.to_string()],
            _ => vec![],
        },
    };
    let policy = spec
        .get("ipFamilyPolicy")
        .and_then(Value::as_str)
        .unwrap_or("SingleStack")
        .to_string();
    let families = families(spec.get("ipFamilies"), &asked, &policy, ranges).map_err(invalid)?;
    spec.insert("ipFamilyPolicy".into(), json!(policy));
    spec.insert("ipFamilies".into(), json!(families));
    if asked.first().map(String::as_str) == Some("None") {
        spec.insert("clusterIP".into(), json!("None"));
        spec.insert("clusterIPs".into(), json!(["None"]));
        return Ok(vec![]);
    }
    let parent = Parent {
        namespace: &namespace,
        name: &name,
    };
    let mut held = Vec::new();
    for (i, family) in families.iter().enumerate() {
        let range = ranges
            .iter()
            .find(|r| r.family() == family)
            .expect("families() only answers configured families");
        let got = match asked.get(i) {
            Some(ip) => reserve_asked(api, range, ip, i, &parent, dry_run).await,
            None => reserve_any(api, range, &parent, dry_run).await,
        };
        match got {
            Ok(ip) => held.push(ip),
            Err(e) => {
                if !dry_run {
                    release(api, &namespace, &name, &held).await;
                }
                return Err(match e {
                    Refused::Invalid(c) => invalid(vec![c]),
                    Refused::Other(e) => e,
                });
            }
        }
    }
    spec.insert("clusterIP".into(), json!(held[0]));
    spec.insert("clusterIPs".into(), json!(held));
    Ok(if dry_run { vec![] } else { held })
}

/// The families a Service gets: as written, else those of the addresses
/// it asks for, else what its policy wants of the configured ranges.
fn families(
    written: Option<&Value>,
    asked: &[String],
    policy: &str,
    ranges: &[Cidr],
) -> Result<Vec<String>, Vec<StatusCause>> {
    const POLICIES: &[&str] = &["SingleStack", "PreferDualStack", "RequireDualStack"];
    if !POLICIES.contains(&policy) {
        return Err(vec![field_not_supported(
            "spec.ipFamilyPolicy",
            policy,
            POLICIES,
        )]);
    }
    let configured: Vec<&str> = ranges.iter().map(Cidr::family).collect();
    let mut out: Vec<String> = match written.and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|f| f.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => asked
            .iter()
            .filter_map(|ip| ip.parse::<IpAddr>().ok())
            .map(|ip| family_of(&ip).to_string())
            .collect(),
    };
    if out.is_empty() {
        out.push(configured[0].to_string());
    }
    if policy != "SingleStack" && out.len() == 1 {
        if let Some(other) = configured.iter().find(|f| **f != out[0]) {
            out.push(other.to_string());
        }
    }
    let mut causes = Vec::new();
    for (i, f) in out.iter().enumerate() {
        if !configured.contains(&f.as_str()) {
            causes.push(field_invalid(
                &format!("spec.ipFamilies[{i}]"),
                f,
                "not configured on this cluster",
            ));
        }
    }
    if policy == "RequireDualStack" && out.len() < 2 {
        causes.push(field_invalid(
            "spec.ipFamilyPolicy",
            policy,
            "this cluster is not configured for dual-stack services",
        ));
    }
    if policy == "SingleStack" && out.len() > 1 {
        causes.push(field_invalid(
            "spec.ipFamilies",
            &out.join(","),
            "must be a single family when ipFamilyPolicy is SingleStack",
        ));
    }
    if causes.is_empty() {
        Ok(out)
    } else {
        Err(causes)
    }
}

enum Refused {
    Invalid(StatusCause),
    Other(ApiError),
}

async fn reserve_asked(
    api: &Api,
    range: &Cidr,
    asked: &str,
    index: usize,
    parent: &Parent<'_>,
    dry_run: bool,
) -> Result<String, Refused> {
    let path = format!("spec.clusterIPs[{index}]");
    let refuse = |detail: String| Refused::Invalid(field_invalid(&path, asked, &detail));
    let ip: IpAddr = asked.parse().map_err(|_| {
        refuse("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into())
    })?;
    if range
        .offset_of(&ip)
        .is_none_or(|o| !range.usable().contains(&o))
    {
        return Err(refuse(format!(
            "failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. \
             The range of valid IPs is {range}"
        )));
    }
    match reserve(api, &ip, parent, dry_run).await {
        Ok(true) => Ok(ip.to_string()),
        Ok(false) => Err(refuse(format!(
            "failed to allocate IP {ip}: provided IP is already allocated"
        ))),
        Err(e) => Err(Refused::Other(e)),
    }
}

async fn reserve_any(
    api: &Api,
    range: &Cidr,
    parent: &Parent<'_>,
    dry_run: bool,
) -> Result<String, Refused> {
    let usable = range.usable();
    let len = usable.end - usable.start;
    let start = rand::thread_rng().gen_range(usable.clone());
    let random = (0..RANDOM_TRIES).map(|_| rand::thread_rng().gen_range(usable.clone()));
    let walk = (0..len.min(MAX_WALK)).map(|i| usable.start + (start - usable.start + i) % len);
    for offset in random.chain(walk) {
        let ip = range.nth(offset);
        match reserve(api, &ip, parent, dry_run).await {
            Ok(true) => return Ok(ip.to_string()),
            Ok(false) => continue,
            Err(e) => return Err(Refused::Other(e)),
        }
    }
    Err(Refused::Other(ApiError::internal(&format!(
        "failed to allocate a serviceIP: range {range} is full"
    ))))
}

/// Creates the IPAddress for `ip`; false when another holds it.
async fn reserve(
    api: &Api,
    ip: &IpAddr,
    parent: &Parent<'_>,
    dry_run: bool,
) -> Result<bool, ApiError> {
    let info = api.builtin("networking.k8s.io", "ipaddresses")?;
    let name = ip.to_string();
    if dry_run {
        let taken = api
            .storage()
            .get(&info.storage_key, "", &name)
            .await
            .or_status()?
            .is_some();
        return Ok(!taken);
    }
    let obj = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": name,
            "labels": {FAMILY_LABEL: family_of(ip), MANAGED_BY_LABEL: MANAGER},
        },
        "spec": {"parentRef": {
            "group": "", "resource": "services",
            "namespace": parent.namespace, "name": parent.name,
        }},
    });
    // Boxed: this create runs inside the Service's create (the Store
    // calling itself).
    match Box::pin(create_as(api, &APISERVER, &info, obj)).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives back the addresses a Service held (those whose IPAddress still
/// names it: a reservation taken over meanwhile is left alone).
pub async fn release(api: &Api, namespace: &str, name: &str, ips: &[String]) {
    let Ok(info) = api.builtin("networking.k8s.io", "ipaddresses") else {
        return;
    };
    for ip in ips.iter().filter(|ip| *ip != "None") {
        let held = match api
            .storage()
            .get(&info.storage_key, "", ip)
            .await
            .or_status()
        {
            Ok(Some(o)) => o.to_value(),
            _ => continue,
        };
        let parent = held.pointer("/spec/parentRef");
        let ours = parent.and_then(|p| p.get("namespace")) == Some(&json!(namespace))
            && parent.and_then(|p| p.get("name")) == Some(&json!(name));
        if !ours {
            continue;
        }
        let opts = DeleteOptions::default();
        let release = delete_as(api, &APISERVER, &info, "", ip, &opts);
        // Boxed: this delete runs inside the Service's delete (the Store
        // calling itself).
        if let Err(e) = Box::pin(release).await {
            tracing::warn!(%ip, error = %e.message, "could not release a service IP");
        }
    }
}

/// The addresses a stored Service holds.
pub fn held(service: &Value) -> Vec<String> {
    service
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// One pass of kube's IPAddress repair, at start and then periodically
/// (`service_repair`): an allocator-managed IPAddress whose Service is
/// gone or no longer holds the address is deleted once older than
/// the grace (a Service deleted past the release, a server that
/// died in between), and an address a Service holds without its
/// IPAddress gets one again.
///
/// The grace is the longest a request may take (`--request-timeout`, 60 s
/// by default, kube's fixed grace): a Service still being created — its
/// address reserved, the Service not stored yet, perhaps by another server
/// — keeps its address.
pub async fn repair(api: &Api) -> Result<(), ApiError> {
    repair_listed(api, &stored_services(api).await?).await
}

/// Every stored Service, as the repairs read them.
pub async fn stored_services(api: &Api) -> Result<Vec<Value>, ApiError> {
    let services = api.builtin("", "services")?;
    Ok(crate::storage::list_all(api.storage(), &services)
        .await?
        .iter()
        .map(|s| s.to_value())
        .collect())
}

/// [`repair`] against `services`, the stored Services as just listed.
pub async fn repair_listed(api: &Api, services: &[Value]) -> Result<(), ApiError> {
    let grace = chrono::TimeDelta::from_std(api.security.config.request_timeout)
        .unwrap_or(chrono::TimeDelta::MAX);
    let addresses = api.builtin("networking.k8s.io", "ipaddresses")?;
    let held_by: std::collections::HashMap<(String, String), Vec<String>> = services
        .iter()
        .map(|v| {
            let key = (meta::namespace(v).to_string(), meta::name(v).to_string());
            (key, held(v))
        })
        .collect();
    let mut reserved = std::collections::HashSet::new();
    for a in crate::storage::list_all(api.storage(), &addresses).await? {
        let a = a.to_value();
        let ip = meta::name(&a).to_string();
        let managed = a.pointer(&format!(
            "/metadata/labels/{}",
            MANAGED_BY_LABEL.replace('/', "~1")
        )) == Some(&json!(MANAGER));
        let parent = |f: &str| {
            a.pointer(&format!("/spec/parentRef/{f}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let key = (parent("namespace"), parent("name"));
        let still_held = held_by.get(&key).is_some_and(|ips| ips.contains(&ip));
        if !managed || still_held || !older_than(&a, grace) {
            reserved.insert(ip);
            continue;
        }
        tracing::info!(%ip, service = %format!("{}/{}", key.0, key.1), "releasing a leaked service IP");
        delete_as(
            api,
            &APISERVER,
            &addresses,
            "",
            &ip,
            &DeleteOptions::default(),
        )
        .await?;
    }
    for ((namespace, name), ips) in &held_by {
        for ip in ips
            .iter()
            .filter(|ip| *ip != "None" && !reserved.contains(*ip))
        {
            let Ok(addr) = ip.parse::<IpAddr>() else {
                continue;
            };
            let parent = Parent { namespace, name };
            if !reserve(api, &addr, &parent, false).await? {
                tracing::warn!(%ip, service = %format!("{namespace}/{name}"), "a service IP is held by another object");
            }
        }
    }
    Ok(())
}

/// Whether `obj` was created more than `age` ago (an unreadable
/// timestamp counts as old: nothing else would ever clean it up).
fn older_than(obj: &Value, age: chrono::TimeDelta) -> bool {
    kubeshard_core::registry::lifecycle::parse_time(meta::str_at(
        obj,
        "/metadata/creationTimestamp",
    ))
    .is_none_or(|t| chrono::Utc::now() - t > age)
}
