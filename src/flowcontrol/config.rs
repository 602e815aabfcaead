//! The FlowSchemas and PriorityLevelConfigurations of one moment, read
//! out of their stored JSON into the shapes classification and
//! dispatching use, and the classification itself: the first schema in
//! precedence order (ties broken by name) whose rules match the request
//! names its flow and its priority level.

use crate::request::RequestInfo;
use kubeshard_core::authn::UserInfo;
use serde_json::Value;
use std::sync::Arc;

/// How a schema splits its requests into flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distinguisher {
    /// One flow for the whole schema.
    None,
    ByUser,
    ByNamespace,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

#[derive(Debug, Clone, Default)]
struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    namespaces: Vec<String>,
    cluster_scope: bool,
}

#[derive(Debug, Clone, Default)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

#[derive(Debug, Clone, Default)]
struct Rules {
    subjects: Vec<Subject>,
    resource: Vec<ResourceRule>,
    non_resource: Vec<NonResourceRule>,
}

#[derive(Debug, Clone)]
pub struct FlowSchema {
    pub name: Arc<str>,
    pub uid: Arc<str>,
    pub precedence: i64,
    pub level: Arc<str>,
    pub distinguisher: Distinguisher,
    rules: Vec<Rules>,
}

/// What a limited level does with a request it has no seat for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitResponse {
    Reject,
    Queue {
        queues: usize,
        hand_size: usize,
        queue_length_limit: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct PriorityLevel {
    pub name: Arc<str>,
    pub uid: Arc<str>,
    pub exempt: bool,
    pub shares: u64,
    pub lendable_percent: u64,
    /// None: borrows without limit.
    pub borrowing_limit_percent: Option<u64>,
    pub response: LimitResponse,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn uint_at(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .map(|n| n.max(0) as u64)
}

/// The items of the list at `key`, read by `f` (those it cannot read
/// are left out).
fn each<T>(v: &Value, key: &str, f: impl FnMut(&Value) -> Option<T>) -> Vec<T> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(f).collect())
        .unwrap_or_default()
}

fn subject(v: &Value) -> Option<Subject> {
    match str_at(v, "/kind") {
        "User" => Some(Subject::User(str_at(v, "/user/name").into())),
        "Group" => Some(Subject::Group(str_at(v, "/group/name").into())),
        "ServiceAccount" => Some(Subject::ServiceAccount {
            namespace: str_at(v, "/serviceAccount/namespace").into(),
            name: str_at(v, "/serviceAccount/name").into(),
        }),
        _ => None,
    }
}

impl FlowSchema {
    pub fn from_value(v: &Value) -> Self {
        let spec = v.get("spec").cloned().unwrap_or(Value::Null);
        let rules = each(&spec, "rules", |r| {
            Some(Rules {
                subjects: each(r, "subjects", subject),
                resource: each(r, "resourceRules", |rr| {
                    Some(ResourceRule {
                        verbs: strings(rr, "verbs"),
                        groups: strings(rr, "apiGroups"),
                        resources: strings(rr, "resources"),
                        namespaces: strings(rr, "namespaces"),
                        cluster_scope: rr
                            .get("clusterScope")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    })
                }),
                non_resource: each(r, "nonResourceRules", |nr| {
                    Some(NonResourceRule {
                        verbs: strings(nr, "verbs"),
                        urls: strings(nr, "nonResourceURLs"),
                    })
                }),
            })
        });
        Self {
            name: str_at(v, "/metadata/name").into(),
            uid: str_at(v, "/metadata/uid").into(),
            precedence: spec
                .get("matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(1000),
            level: str_at(&spec, "/priorityLevelConfiguration/name").into(),
            distinguisher: match str_at(&spec, "/distinguisherMethod/type") {
                "ByUser" => Distinguisher::ByUser,
                "ByNamespace" => Distinguisher::ByNamespace,
                _ => Distinguisher::None,
            },
            rules,
        }
    }

    /// Whether one of the schema's rules covers the request.
    pub fn matches(&self, user: &UserInfo, info: &RequestInfo) -> bool {
        self.rules.iter().any(|r| {
            r.subjects.iter().any(|s| subject_matches(s, user))
                && if info.is_resource_request {
                    r.resource.iter().any(|rr| resource_matches(rr, info))
                } else {
                    r.non_resource
                        .iter()
                        .any(|nr| non_resource_matches(nr, info))
                }
        })
    }

    /// The flow's distinguisher value: the user's name, the request's
    /// namespace, or nothing.
    pub fn flow_of<'a>(&self, user: &'a UserInfo, info: &'a RequestInfo) -> &'a str {
        match self.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => &user.name,
            Distinguisher::ByNamespace => &info.namespace,
        }
    }
}

/// Membership, where a list of exactly `["*"]` holds everything (a `*`
/// beside other entries is only a literal).
fn has(list: &[String], value: &str) -> bool {
    matches!(list, [only] if only == "*") || list.iter().any(|v| v == value)
}

fn subject_matches(s: &Subject, user: &UserInfo) -> bool {
    match s {
        Subject::User(name) => name == "*" || *name == user.name,
        Subject::Group(name) => name == "*" || user.in_group(name),
        Subject::ServiceAccount { namespace, name } => user
            .name
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.strip_prefix(namespace.as_str()))
            .and_then(|rest| rest.strip_prefix(':'))
            .is_some_and(|n| name == "*" || name == n),
    }
}

fn resource_matches(r: &ResourceRule, info: &RequestInfo) -> bool {
    let resource_ok = if info.subresource.is_empty() {
        has(&r.resources, &info.resource)
    } else {
        has(
            &r.resources,
            &format!("{}/{}", info.resource, info.subresource),
        )
    };
    has(&r.verbs, &info.verb)
        && has(&r.groups, &info.group)
        && resource_ok
        && if info.namespace.is_empty() {
            r.cluster_scope
        } else {
            has(&r.namespaces, &info.namespace)
        }
}

/// A URL pattern is `*`, an exact path, or a prefix: one trailing `*`
/// dropped and a `/` ensured, so `/healthz/*` covers `/healthz/etcd` but
/// not `/healthz` (and, as in kube, `/healthz` also covers `/healthz/x`).
fn non_resource_matches(r: &NonResourceRule, info: &RequestInfo) -> bool {
    has(&r.verbs, &info.verb)
        && r.urls.iter().any(|u| {
            if u == "*" || *u == info.path {
                return true;
            }
            let prefix = u.strip_suffix('*').unwrap_or(u);
            if prefix.ends_with('/') {
                info.path.starts_with(prefix)
            } else {
                info.path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('/'))
            }
        })
}

impl PriorityLevel {
    pub fn from_value(v: &Value) -> Self {
        let exempt = str_at(v, "/spec/type") == "Exempt";
        let base = if exempt {
            "/spec/exempt"
        } else {
            "/spec/limited"
        };
        let at = |field: &str| uint_at(v, &format!("{base}/{field}"));
        let response = match str_at(v, "/spec/limited/limitResponse/type") {
            "Queue" => LimitResponse::Queue {
                queues: uint_at(v, "/spec/limited/limitResponse/queuing/queues").unwrap_or(64)
                    as usize,
                hand_size: uint_at(v, "/spec/limited/limitResponse/queuing/handSize").unwrap_or(8)
                    as usize,
                queue_length_limit: uint_at(
                    v,
                    "/spec/limited/limitResponse/queuing/queueLengthLimit",
                )
                .unwrap_or(50) as usize,
            },
            _ => LimitResponse::Reject,
        };
        Self {
            name: str_at(v, "/metadata/name").into(),
            uid: str_at(v, "/metadata/uid").into(),
            exempt,
            shares: at("nominalConcurrencyShares").unwrap_or(if exempt { 0 } else { 30 }),
            lendable_percent: at("lendablePercent").unwrap_or(0),
            borrowing_limit_percent: if exempt {
                Some(0)
            } else {
                at("borrowingLimitPercent")
            },
            response,
        }
    }
}

/// Schemas in the order they are tried: precedence, then name.
pub fn ordered(mut schemas: Vec<FlowSchema>) -> Vec<FlowSchema> {
    schemas.sort_by(|a, b| {
        a.precedence
            .cmp(&b.precedence)
            .then_with(|| a.name.cmp(&b.name))
    });
    schemas
}
