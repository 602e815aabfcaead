//! ResourceQuota (kube's plugin): a create (or an update that costs more)
//! in a namespace with ResourceQuotas is refused when it would take any
//! quota past its hard limit, and otherwise charged to the quotas'
//! `status.used` before it is stored. A quota counts once the quota
//! controller has written its `status.hard`; until then it is ignored.
//!
//! The charge is one atomic read-modify-write of each quota on the shard
//! that owns it (no retry loop): two writers racing for the last unit
//! cannot both get it. Writes refused after charging are taken back when
//! the controller recomputes usage.

use super::lister::Lister;
use super::plugins::PluginInit;
use super::{Attributes, Operation, Outcome, Validating};
use kubeshard_core::meta;
use kubeshard_core::quota::{self, Usage};
use kubeshard_core::status::ApiError;
use serde_json::Value;

mod charges;

pub const NAME: &str = "ResourceQuota";

/// Kinds quota never counts (kube's ignored resources).
const IGNORED: &[(&str, &str)] = &[
    ("", "events"),
    ("events.k8s.io", "events"),
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

pub struct ResourceQuota {
    quotas: Lister,
    /// Charges to each quota made on this executor, written together.
    batches: charges::Batches,
}

/// What one quota is charged for this write.
struct Charge {
    quota: String,
    requested: Usage,
}

impl ResourceQuota {
    pub fn start(init: &PluginInit<'_>) -> Self {
        Self {
            quotas: Lister::start(init, "", "resourcequotas"),
            batches: charges::Batches::default(),
        }
    }

    async fn admit(&self, a: &Attributes<'_>, obj: &Value) -> Result<(), ApiError> {
        let (group, plural) = (a.resource.group.as_str(), a.resource.plural.as_str());
        let mut quotas = self.quotas.list(a.namespace);
        quotas.sort_by(|x, y| meta::name(x).cmp(meta::name(y)));
        let new_usage = quota::usage(group, plural, obj);
        let old_usage = a.old_object.map(|o| quota::usage(group, plural, o));
        let refuse = |why: String| ApiError::forbidden(group, plural, a.name, &why);
        let mut charges = Vec::new();
        for q in &quotas {
            let name = meta::name(q);
            let hard = amounts(q, "/status/hard");
            let relevant: Vec<&str> = hard
                .keys()
                .map(String::as_str)
                .filter(|k| quota::covers(group, plural, k))
                .collect();
            if relevant.is_empty() || !quota::scopes_match(q, group, plural, obj) {
                continue;
            }
            if (group, plural) == ("", "pods") {
                let missing = quota::unspecified(&relevant, obj);
                if !missing.is_empty() {
                    let parts: Vec<String> = missing
                        .iter()
                        .map(|(r, cs)| format!("{r} for: {}", cs.join(",")))
                        .collect();
                    return Err(refuse(format!(
                        "failed quota: {name}: must specify {}",
                        parts.join("; ")
                    )));
                }
            }
            let used = amounts(q, "/status/used");
            let mut unknown: Vec<&str> = relevant
                .iter()
                .copied()
                .filter(|k| !used.contains_key(*k))
                .collect();
            if !unknown.is_empty() {
                unknown.sort();
                return Err(refuse(format!(
                    "status unknown for quota: {name}, resources: {}",
                    unknown.join(",")
                )));
            }
            // An update pays only for what it adds, to quotas the old
            // object was already under.
            let old_matched = a
                .old_object
                .is_some_and(|o| quota::scopes_match(q, group, plural, o));
            let requested: Usage = relevant
                .iter()
                .filter_map(|k| {
                    let new = new_usage.get(*k).copied().unwrap_or(0);
                    let old = match (&old_usage, old_matched) {
                        (Some(old), true) => old.get(*k).copied().unwrap_or(0),
                        _ => 0,
                    };
                    let delta = (new - old).max(0);
                    (delta > 0).then(|| (k.to_string(), delta))
                })
                .collect();
            if requested.is_empty() {
                continue;
            }
            check(name, &requested, &hard, &used).map_err(refuse)?;
            charges.push(Charge {
                quota: name.to_string(),
                requested,
            });
        }
        if a.dry_run || charges.is_empty() {
            return Ok(());
        }
        self.charge(a, &charges).await.map_err(|e| match e {
            Refusal::Exceeded(why) => refuse(why),
            Refusal::Other(e) => e,
        })
    }

    /// Adds each charge to its quota's `status.used`, checked again against
    /// the stored quota; a refused charge takes back the ones made.
    async fn charge(&self, a: &Attributes<'_>, charges: &[Charge]) -> Result<(), Refusal> {
        let catalog = a.api.catalog();
        let Some(info) = catalog.lookup("", "v1", "resourcequotas").cloned() else {
            return Ok(());
        };
        for (n, c) in charges.iter().enumerate() {
            let result = self
                .batches
                .charge(a, &info, &c.quota, c.requested.clone())
                .await;
            if let Err(e) = result {
                for done in &charges[..n] {
                    let back = vec![charges::Entry {
                        usage: done.requested.clone(),
                        sign: -1,
                    }];
                    let _ = charges::write(a, &info, &done.quota, back).await;
                }
                return Err(e);
            }
        }
        Ok(())
    }
}

#[derive(Clone)]
pub(super) enum Refusal {
    Exceeded(String),
    Other(ApiError),
}

/// kube's "exceeded quota" refusal when `requested` takes `used` past
/// `hard` for any key.
pub(super) fn check(
    name: &str,
    requested: &Usage,
    hard: &Amounts,
    used: &Amounts,
) -> Result<(), String> {
    let mut over: Vec<&String> = requested
        .iter()
        .filter(|(k, add)| {
            let limit = hard.get(*k).map_or(i128::MAX, |h| h.0);
            used.get(*k).map_or(0, |u| u.0) + **add > limit
        })
        .map(|(k, _)| k)
        .collect();
    if over.is_empty() {
        return Ok(());
    }
    over.sort();
    let list = |f: &dyn Fn(&str) -> String| {
        over.iter()
            .map(|k| format!("{k}={}", f(k)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let hard_text = |k: &str| hard[k].1.clone();
    Err(format!(
        "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
        list(&|k| quota::render(requested[k], &hard_text(k))),
        list(&|k| used.get(k).map_or_else(|| "0".to_string(), |u| u.1.clone())),
        list(&hard_text),
    ))
}

/// A quota's amounts at `path` (`status.hard`, `status.used`): nano
/// units, and as written.
pub(super) type Amounts = std::collections::BTreeMap<String, (i128, String)>;

pub(super) fn amounts(q: &Value, path: &str) -> Amounts {
    q.pointer(path)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| {
                    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    Some((k.clone(), (kubeshard_core::quantity::nanos(v)?, text)))
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Validating for ResourceQuota {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handles(&self, a: &Attributes<'_>) -> bool {
        if a.namespace.is_empty() || !self.quotas.any_in(a.namespace) {
            return false;
        }
        let gr = (a.resource.group.as_str(), a.resource.plural.as_str());
        if IGNORED.contains(&gr) || !a.subresource.is_empty() {
            return false;
        }
        match a.operation {
            Operation::Create => true,
            Operation::Update => matches!(gr, ("", "services") | ("", "persistentvolumeclaims")),
            Operation::Delete => false,
        }
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>, object: Option<&'a Value>) -> Outcome<'a> {
        match object {
            Some(obj) => Outcome::later(self.admit(a, obj)),
            None => Outcome::Ready(Ok(())),
        }
    }
}

/// The quota cache for tests of the plugin's arithmetic.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceeded_quota_reads_as_kubes() {
        let one = 1_000_000_000i128;
        let gi = 1024 * 1024 * 1024 * one;
        let hard: Amounts = [
            ("pods".to_string(), (2 * one, "2".to_string())),
            ("requests.memory".to_string(), (10 * gi, "10Gi".to_string())),
        ]
        .into();
        let used: Amounts = [
            ("pods".to_string(), (2 * one, "2".to_string())),
            ("requests.memory".to_string(), (9 * gi, "9Gi".to_string())),
        ]
        .into();
        let requested: Usage = [("pods".to_string(), one)].into();
        assert_eq!(
            check("q", &requested, &hard, &used).unwrap_err(),
            "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
        );
        let fits: Usage = [("requests.memory".to_string(), gi)].into();
        assert!(check("q", &fits, &hard, &used).is_ok());
        let over: Usage = [("requests.memory".to_string(), 2 * gi)].into();
        assert_eq!(
            check("q", &over, &hard, &used).unwrap_err(),
            "exceeded quota: q, requested: requests.memory=2Gi, used: requests.memory=9Gi, limited: requests.memory=10Gi"
        );
    }
}
