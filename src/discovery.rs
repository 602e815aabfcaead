//! Discovery documents (`/api`, `/apis`, `/apis/{g}`, `/api/v1`,
//! `/apis/{g}/{v}`, aggregated v2, `/version`) rendered from the catalog.
//!
//! kubectl and client-go build their REST mapper from these documents, so the
//! shapes follow kube-apiserver v1.34 field for field and in field order,
//! including its quirks: the core APIResourceList carries no `apiVersion`,
//! subresources have an empty `singularName`, and `responseKind` leaves
//! group/version empty unless the kind lives in another group (`scale`
//! answers `autoscaling/v1 Scale`). Everything derives from a
//! [`CatalogSnapshot`], so a CRD registered at runtime shows up in discovery
//! with no extra wiring.
//!
//! Ordering is part of the contract, because clients take the first match
//! for a short name or kind: groups follow kube-aggregator's priorities
//! (core alone under `/api`; then `apps`, `events.k8s.io`, ...; CRD groups
//! at 1000; an extension server's group at its APIService's
//! `groupPriorityMinimum`), then name; versions by `versionPriority`, then
//! GA > beta > alpha, newest first (kube's version-aware order); resources
//! sort by name, which puts each `plural/subresource` right after its
//! parent.
//!
//! Group versions an extension server serves (see [`crate::aggregator`])
//! are listed with the server's own; their resources come from the
//! document the availability check fetched, and while the server is
//! unavailable they are listed as `Stale` in aggregated discovery.

use crate::aggregated::{Remote, Routes};
use crate::aggregator::{convert, priority};
use base64::Engine;
use kubeshard_core::catalog::{CatalogSnapshot, ResourceInfo};
use serde_json::{json, Value};
use std::sync::Arc;

/// Echoed back so client-go recognises the body as aggregated: it checks the
/// `g`, `v` and `as` parameters of the response Content-Type.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The kube release whose API surface kubeshard mirrors; kubectl warns about
/// version skew against these numbers.
const KUBE_MAJOR: &str = "1";
const KUBE_MINOR: &str = "34";
/// kube 1.34 binaries declare compatibility with the previous minor.
const KUBE_MIN_COMPAT_MINOR: &str = "33";

pub fn api_versions(server_address: &str) -> Vec<u8> {
    to_bytes(json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }))
}

pub fn api_group_list(cat: &CatalogSnapshot, routes: &Routes) -> Vec<u8> {
    let groups: Vec<Value> = named_groups(cat, routes)
        .iter()
        .filter_map(|g| group_doc(cat, routes, g, None))
        .collect();
    to_bytes(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

/// `None` for the core group too: kube has no `/apis/` entry for it.
pub fn api_group(cat: &CatalogSnapshot, routes: &Routes, group: &str) -> Option<Vec<u8>> {
    if group.is_empty() {
        return None;
    }
    group_doc(cat, routes, group, Some("APIGroup")).map(to_bytes)
}

/// `group` is `""` for `/api/v1`.
pub fn api_resource_list(cat: &CatalogSnapshot, group: &str, version: &str) -> Option<Vec<u8>> {
    let resources = cat.group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut entries: Vec<Value> = Vec::new();
    for r in &resources {
        entries.push(api_resource(r));
        entries.extend(subresources(r).iter().map(|s| s.api_resource(r)));
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Some(to_bytes(json!({
        "kind": "APIResourceList",
        // kube's legacy `/api/v1` list never carried apiVersion; keep the
        // asymmetry for clients that compare documents verbatim.
        "apiVersion": if group.is_empty() { Value::Null } else { "v1".into() },
        "groupVersion": gv_string(group, version),
        "resources": entries,
    })))
}

/// One round trip replaces the per-group-version fan-out, which is why
/// kubectl asks for this first. `core` selects the `/api` document (the
/// legacy group only) versus `/apis` (every named group).
pub fn aggregated_discovery(cat: &CatalogSnapshot, routes: &Routes, core: bool) -> Vec<u8> {
    let groups: Vec<String> = if core {
        cat.groups().into_iter().filter(String::is_empty).collect()
    } else {
        named_groups(cat, routes)
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|g| aggregated_group(cat, routes, g))
        .collect();
    to_bytes(json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }))
}

/// Only v2 counts: answering a v2beta1-only client with the unaggregated
/// form is allowed and spares a second schema. Unknown parameters are
/// tolerated; `q=0` opts a media range out.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        if !parts
            .next()
            .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
        {
            return false;
        }
        let (mut g, mut v, mut as_list, mut q_ok) = (false, false, false, true);
        for (key, val) in parts.filter_map(|p| p.split_once('=')) {
            let val = val.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "g" => g = val == "apidiscovery.k8s.io",
                "v" => v = val == "v2",
                "as" => as_list = val == "APIGroupDiscoveryList",
                "q" => q_ok = val.parse::<f32>().map_or(true, |q| q > 0.0),
                _ => {}
            }
        }
        g && v && as_list && q_ok
    })
}

/// kubectl parses only `gitVersion` (semver) and major/minor, so the build
/// identity goes into the pre-release part where it cannot upset skew
/// checks. Build metadata comes from compile-time env vars when a release
/// pipeline sets them; the Go-specific fields say honestly what built us.
pub fn version_info(pkg_version: &str) -> Vec<u8> {
    to_bytes(json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": KUBE_MIN_COMPAT_MINOR,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0-kubeshard.{pkg_version}"),
        "gitCommit": option_env!("KUBESHARD_GIT_COMMIT").unwrap_or(""),
        "gitTreeState": option_env!("KUBESHARD_GIT_TREE_STATE").unwrap_or(""),
        "buildDate": option_env!("KUBESHARD_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
        "goVersion": "none",
        "compiler": "rustc",
        "platform": go_platform(),
    }))
}

/// Go spells architectures differently, and tooling matches on Go's names.
fn go_platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    format!("{}/{}", std::env::consts::OS, arch)
}

/// Null stands for Go's `omitempty`: kube never emits a null in these
/// documents, so every null member is dropped before encoding. Field order
/// relies on serde_json's `preserve_order`, enabled workspace-wide.
fn to_bytes(v: Value) -> Vec<u8> {
    serde_json::to_vec(&omit_nulls(v)).expect("a serde_json::Value always serialises")
}

fn omit_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, omit_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(omit_nulls).collect()),
        other => other,
    }
}

/// `omitempty` for lists.
fn non_empty(list: &[String]) -> Value {
    if list.is_empty() {
        Value::Null
    } else {
        json!(list)
    }
}

fn gv_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Named (non-core) groups, local and remote, in kube-aggregator's order:
/// highest group priority first, then by name.
fn named_groups(cat: &CatalogSnapshot, routes: &Routes) -> Vec<String> {
    let mut groups: Vec<String> = cat.groups().into_iter().filter(|g| !g.is_empty()).collect();
    for g in routes.by_group.keys() {
        if !groups.contains(g) {
            groups.push(g.clone());
        }
    }
    groups.sort_by_cached_key(|g| {
        let local = cat
            .versions(g)
            .first()
            .map(|v| priority::local(g, v).0)
            .unwrap_or(i64::MIN);
        let remote = routes
            .by_group
            .get(g)
            .and_then(|vs| vs.values().map(|r| r.group_priority).max())
            .unwrap_or(i64::MIN);
        (std::cmp::Reverse(local.max(remote)), g.clone())
    });
    groups
}

/// A group's versions in preference order (the first is what clients use
/// by default), each with the remote that serves it, if one does (it
/// wins over a local one, as requests go to it).
fn preferred_versions<'r>(
    cat: &CatalogSnapshot,
    routes: &'r Routes,
    group: &str,
) -> Vec<(String, Option<&'r Arc<Remote>>)> {
    let mut versions: Vec<(String, i64, Option<&Arc<Remote>>)> = cat
        .versions(group)
        .into_iter()
        .map(|v| {
            let vp = priority::local(group, &v).1;
            (v, vp, None)
        })
        .collect();
    for (v, r) in routes.by_group.get(group).into_iter().flatten() {
        versions.retain(|(have, ..)| have != v);
        versions.push((v.clone(), r.version_priority, Some(r)));
    }
    versions.sort_by_cached_key(|(v, vp, _)| {
        (
            std::cmp::Reverse(*vp),
            kubeshard_core::catalog::version_rank(v),
        )
    });
    versions.into_iter().map(|(v, _, r)| (v, r)).collect()
}

/// An APIGroup; `kind` is set for the standalone `/apis/{g}` document and
/// left out for entries of an APIGroupList, as kube does.
fn group_doc(
    cat: &CatalogSnapshot,
    routes: &Routes,
    group: &str,
    kind: Option<&str>,
) -> Option<Value> {
    let versions = preferred_versions(cat, routes, group);
    let entry = |(v, _): &(String, _)| json!({"groupVersion": gv_string(group, v), "version": v});
    let preferred = entry(versions.first()?);
    Some(json!({
        "kind": kind,
        "apiVersion": kind.map(|_| "v1"),
        "name": group,
        "versions": versions.iter().map(entry).collect::<Vec<_>>(),
        "preferredVersion": preferred,
    }))
}

/// How a subresource presents itself; kube derives this from the storage
/// behind it, we from its name.
struct Subresource<'a> {
    name: &'a str,
    /// Non-empty only when the response kind lives outside the parent's
    /// group version, which is when kube fills APIResource.group/version.
    group: &'static str,
    version: &'static str,
    kind: &'a str,
}

/// Subresources kube serves for built-ins (status, scale) are read and
/// written but never listed, watched, created or deleted; a namespace's
/// `finalize` is only ever replaced and `serviceaccounts/token` only
/// created.
const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];
const FINALIZE_VERBS: &[&str] = &["update"];
const CREATE_ONLY: &[&str] = &["create"];
const GET_ONLY: &[&str] = &["get"];
/// Streams are opened with GET or POST.
const CONNECT_VERBS: &[&str] = &["create", "get"];
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];

impl Subresource<'_> {
    fn verbs(&self) -> &'static [&'static str] {
        match self.name {
            "finalize" => FINALIZE_VERBS,
            "token" | "binding" | "eviction" => CREATE_ONLY,
            "log" => GET_ONLY,
            "exec" | "attach" | "portforward" => CONNECT_VERBS,
            "proxy" => PROXY_VERBS,
            _ => SUBRESOURCE_VERBS,
        }
    }

    fn api_resource(&self, parent: &ResourceInfo) -> Value {
        let non_blank = |s: &str| (!s.is_empty()).then(|| s.to_string());
        json!({
            "name": format!("{}/{}", parent.plural, self.name),
            "singularName": "",
            "namespaced": parent.namespaced,
            "group": non_blank(self.group),
            "version": non_blank(self.version),
            "kind": self.kind,
            "verbs": self.verbs(),
        })
    }

    fn aggregated(&self) -> Value {
        json!({
            "subresource": self.name,
            "responseKind": {"group": self.group, "version": self.version, "kind": self.kind},
            "verbs": self.verbs(),
        })
    }
}

fn subresources(r: &ResourceInfo) -> Vec<Subresource<'_>> {
    let mut subs: Vec<Subresource<'_>> = r
        .subresources
        .iter()
        .map(|name| {
            let (group, version, kind) = match name.as_str() {
                "scale" => ("autoscaling", "v1", "Scale"),
                "token" => ("authentication.k8s.io", "v1", "TokenRequest"),
                "binding" => ("", "", "Binding"),
                "eviction" => ("policy", "v1", "Eviction"),
                "exec" => ("", "", "PodExecOptions"),
                "attach" => ("", "", "PodAttachOptions"),
                "portforward" => ("", "", "PodPortForwardOptions"),
                "proxy" => ("", "", proxy_options(&r.kind)),
                // status (and anything unknown) answers with the parent object.
                _ => ("", "", r.kind.as_str()),
            };
            Subresource {
                name,
                group,
                version,
                kind,
            }
        })
        .collect();
    subs.sort_by_key(|s| s.name);
    subs
}

/// The options kind a `proxy` subresource answers with in discovery.
fn proxy_options(kind: &str) -> &'static str {
    match kind {
        "Pod" => "PodProxyOptions",
        "Node" => "NodeProxyOptions",
        _ => "ServiceProxyOptions",
    }
}

/// kube lists verbs sorted; the catalog promises no order.
fn sorted_verbs(r: &ResourceInfo) -> Vec<&str> {
    let mut verbs: Vec<&str> = r.verbs.iter().map(String::as_str).collect();
    verbs.sort_unstable();
    verbs.dedup();
    verbs
}

fn api_resource(r: &ResourceInfo) -> Value {
    json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": sorted_verbs(r),
        "shortNames": non_empty(&r.short_names),
        "categories": non_empty(&r.categories),
        "storageVersionHash": storage_version_hash(&r.storage_group, &r.storage_version, &r.kind),
    })
}

fn aggregated_group(cat: &CatalogSnapshot, routes: &Routes, group: &str) -> Value {
    let versions: Vec<Value> = preferred_versions(cat, routes, group)
        .iter()
        .map(|(v, remote)| {
            if let Some(r) = remote {
                return match (&r.discovery, r.available) {
                    (Some(entry), true) => entry.clone(),
                    _ => convert::stale_version(v),
                };
            }
            let resources: Vec<Value> = cat
                .group_version(group, v)
                .iter()
                .map(|r| aggregated_resource(r))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    // Since v1.33 kube omits the zero creationTimestamp, and the core
    // group's empty name is omitted as well, leaving `metadata: {}`.
    let name = (!group.is_empty()).then_some(group);
    json!({"metadata": {"name": name}, "versions": versions})
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let subs: Vec<Value> = subresources(r)
        .iter()
        .map(Subresource::aggregated)
        .collect();
    json!({
        "resource": r.plural,
        "responseKind": {"group": "", "version": "", "kind": r.kind},
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": sorted_verbs(r),
        "shortNames": non_empty(&r.short_names),
        "categories": non_empty(&r.categories),
        "subresources": if subs.is_empty() { Value::Null } else { subs.into() },
    })
}

/// kube's hash of the version a resource is stored at (the first eight
/// bytes of the sha256 of `group/version/kind`, base64): the same for every
/// version served from one storage version, and what clients such as the
/// storage migrator compare with kube's.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}"));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeshard_core::catalog::{builtin_resources, Catalog};

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).expect("valid JSON")
    }

    /// Exact text pins kube's field order, which Value equality ignores.
    fn find(list: &Value, key: &str, name: &str) -> String {
        let hit = list.as_array().unwrap().iter().find(|e| e[key] == name);
        hit.unwrap_or_else(|| panic!("{name} missing")).to_string()
    }

    fn names(list: &Value, pointer: &str) -> Vec<String> {
        let items = list.as_array().unwrap().iter();
        items
            .map(|e| e.pointer(pointer).unwrap().as_str().unwrap().into())
            .collect()
    }

    const ALL: &str =
        r#"["create","delete","deletecollection","get","list","patch","update","watch"]"#;
    const POD: &str = r#"{"group":"","version":"","kind":"Pod"}"#;
    const BINDING: &str = r#"{"group":"","version":"","kind":"Binding"}"#;
    const EVICTION: &str = r#"{"group":"policy","version":"v1","kind":"Eviction"}"#;
    const RW: &str = r#"["get","patch","update"]"#;
    /// The built-in named groups in kube-aggregator's priority order.
    const NAMED_GROUPS: [&str; 20] = [
        "apiregistration.k8s.io",
        "apps",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "resource.k8s.io",
        "flowcontrol.apiserver.k8s.io",
    ];

    #[test]
    fn api_versions_and_groups() {
        let text = String::from_utf8(api_versions("10.0.0.1:6443")).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:6443"}]}"#
        );
        let cat = Catalog::with_builtins().snapshot();
        let list = parse(&api_group_list(&cat, &Routes::default()));
        assert_eq!([&list["kind"], &list["apiVersion"]], ["APIGroupList", "v1"]);
        assert_eq!(names(&list["groups"], "/name"), NAMED_GROUPS);
        let apps = r#""name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}"#;
        assert_eq!(list["groups"][1].to_string(), format!("{{{apps}"));
        let group =
            String::from_utf8(api_group(&cat, &Routes::default(), "apps").unwrap()).unwrap();
        assert_eq!(
            group,
            format!(r#"{{"kind":"APIGroup","apiVersion":"v1",{apps}"#)
        );
        assert!(
            api_group(&cat, &Routes::default(), "").is_none()
                && api_group(&cat, &Routes::default(), "nope.example").is_none()
        );
    }

    #[test]
    fn resource_lists() {
        let cat = Catalog::with_builtins().snapshot();
        let core = parse(&api_resource_list(&cat, "", "v1").unwrap());
        assert_eq!(core["kind"], "APIResourceList");
        assert!(core.get("apiVersion").is_none(), "as kube's /api/v1");
        assert_eq!(core["groupVersion"], "v1");
        let res = &core["resources"];
        let hash = |name: &str| {
            find(res, "name", name)[..]
                .rsplit('"')
                .nth(1)
                .unwrap()
                .to_owned()
        };
        assert_eq!(hash("pods").len(), 12, "8 bytes, base64");
        assert_ne!(hash("pods"), hash("configmaps"));
        let pods = find(res, "name", "pods").replace(&hash("pods"), "H");
        let want = format!(
            r#"{{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":{ALL},"shortNames":["po"],"categories":["all"],"storageVersionHash":"H"}}"#
        );
        assert_eq!(pods, want);
        let want = format!(
            r#"{{"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":{RW}}}"#
        );
        assert_eq!(find(res, "name", "pods/status"), want);
        let ns = find(res, "name", "namespaces");
        assert!(ns.contains(r#""namespaced":false"#) && !ns.contains("deletecollection"));
        assert!(!find(res, "name", "configmaps").contains("categories"));
        let (listed, mut sorted) = (names(res, "/name"), names(res, "/name"));
        sorted.sort();
        assert_eq!(listed, sorted);
        assert!(api_resource_list(&cat, "", "v2").is_none());

        let apps = parse(&api_resource_list(&cat, "apps", "v1").unwrap());
        assert_eq!(
            [&apps["apiVersion"], &apps["groupVersion"]],
            ["v1", "apps/v1"]
        );
        assert_eq!(
            names(&apps["resources"], "/name"),
            [
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status"
            ]
        );
        assert_eq!(apps["resources"][3]["shortNames"], json!(["deploy"]));
        assert_eq!(apps["resources"][4]["kind"], "Scale");
        assert_eq!(apps["resources"][5]["kind"], "Deployment");
        assert!(api_resource_list(&cat, "batch", "v2").is_none());
    }

    #[test]
    fn aggregated() {
        let cat = Catalog::with_builtins().snapshot();
        let text = String::from_utf8(aggregated_discovery(&cat, &Routes::default(), true)).unwrap();
        assert!(text.starts_with(r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{},"versions":[{"version":"v1","resources":["#));
        let doc = parse(text.as_bytes());
        assert_eq!(doc["items"].as_array().unwrap().len(), 1);
        let v1 = &doc["items"][0]["versions"][0];
        assert_eq!(v1["freshness"], "Current");
        let want = format!(
            r#"{{"resource":"pods","responseKind":{POD},"scope":"Namespaced","singularResource":"pod","verbs":{ALL},"shortNames":["po"],"categories":["all"],"subresources":[{{"subresource":"attach","responseKind":{{"group":"","version":"","kind":"PodAttachOptions"}},"verbs":["create","get"]}},{{"subresource":"binding","responseKind":{BINDING},"verbs":["create"]}},{{"subresource":"ephemeralcontainers","responseKind":{POD},"verbs":{RW}}},{{"subresource":"eviction","responseKind":{EVICTION},"verbs":["create"]}},{{"subresource":"exec","responseKind":{{"group":"","version":"","kind":"PodExecOptions"}},"verbs":["create","get"]}},{{"subresource":"log","responseKind":{POD},"verbs":["get"]}},{{"subresource":"portforward","responseKind":{{"group":"","version":"","kind":"PodPortForwardOptions"}},"verbs":["create","get"]}},{{"subresource":"proxy","responseKind":{{"group":"","version":"","kind":"PodProxyOptions"}},"verbs":["create","delete","get","patch","update"]}},{{"subresource":"resize","responseKind":{POD},"verbs":{RW}}},{{"subresource":"status","responseKind":{POD},"verbs":{RW}}}]}}"#
        );
        assert_eq!(find(&v1["resources"], "resource", "pods"), want);
        assert!(find(&v1["resources"], "resource", "namespaces").contains(r#""scope":"Cluster""#));
        let cm = find(&v1["resources"], "resource", "configmaps");
        assert!(!cm.contains("subresources") && !cm.contains("categories"));

        let named = parse(&aggregated_discovery(&cat, &Routes::default(), false));
        // kube's priority table ranks apps above coordination.k8s.io.
        let order = names(&named["items"], "/metadata/name");
        assert_eq!(order, NAMED_GROUPS);
        let apps = &named["items"][1]["versions"][0]["resources"];
        let deploy = find(apps, "resource", "deployments");
        assert!(deploy.contains(r#""shortNames":["deploy"],"categories":["all"]"#));
    }

    #[test]
    fn scale_subresource_answers_autoscaling_scale() {
        let cat = Catalog::with_builtins();
        let snap = cat.snapshot();
        let doc = parse(&api_resource_list(&snap, "apps", "v1").unwrap());
        let want = format!(
            r#"{{"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":{RW}}}"#
        );
        assert_eq!(find(&doc["resources"], "name", "deployments/scale"), want);
        let agg = parse(&aggregated_discovery(&snap, &Routes::default(), false));
        let apps = &agg["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == "apps")
            .unwrap()["versions"][0]["resources"];
        let deployments = apps
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        let subs = &deployments["subresources"];
        assert_eq!(names(subs, "/subresource"), ["scale", "status"]);
        let kind = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        assert_eq!(subs[0]["responseKind"], kind);
    }

    #[test]
    fn unknown_groups_and_versions_order() {
        let cat = Catalog::with_builtins();
        let mut widget = builtin_resources().remove(0);
        (widget.group, widget.plural) = ("aaa.example.com".into(), "widgets".into());
        for v in ["v1", "v1beta1", "v2"] {
            widget.version = v.into();
            cat.register(widget.clone());
        }
        let doc = parse(&api_group_list(&cat.snapshot(), &Routes::default()));
        let crd = doc["groups"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(crd["name"], "aaa.example.com", "unknown groups go last");
        assert_eq!(names(&crd["versions"], "/version"), ["v2", "v1", "v1beta1"]);
        assert_eq!(crd["preferredVersion"]["version"], "v2");

        let mut v = [
            "v1alpha1", "foo", "v1", "v2beta1", "v10", "v1beta2", "v1beta1", "v2",
        ];
        v.sort_by_cached_key(|s| kubeshard_core::catalog::version_rank(s));
        let want = [
            "v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo",
        ];
        assert_eq!(v, want);
    }

    #[test]
    fn accept_negotiation() {
        let v2 = AGGREGATED_CONTENT_TYPE;
        let v2beta1 = v2.replace("v=v2", "v=v2beta1");
        assert!(wants_aggregated(&format!(
            "{v2},{v2beta1},application/json"
        )));
        let spaced = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, \
                      application/json; g=apidiscovery.k8s.io; v=v2; as=APIGroupDiscoveryList";
        assert!(wants_aggregated(spaced));
        assert!(!wants_aggregated(&format!("{v2beta1},application/json")));
        assert!(!wants_aggregated("application/json") && !wants_aggregated(""));
        assert!(!wants_aggregated(&format!("{v2};q=0")));
    }

    #[test]
    fn version_document() {
        let doc = parse(&version_info("0.1.0"));
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        let want = "major minor emulationMajor emulationMinor minCompatibilityMajor \
                    minCompatibilityMinor gitVersion gitCommit gitTreeState buildDate goVersion \
                    compiler platform";
        assert_eq!(keys, want.split_whitespace().collect::<Vec<_>>());
        assert_eq!(
            [&doc["major"], &doc["minor"], &doc["minCompatibilityMinor"]],
            ["1", "34", "33"]
        );
        assert_eq!(doc["gitVersion"], "v1.34.0-kubeshard.0.1.0");
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            assert_eq!(doc["platform"], "linux/amd64");
        }
    }
}
