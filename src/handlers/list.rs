//! LIST: a consistent snapshot across all shards at one revision, sorted by
//! key, with selectors and limit/continue paging.

use super::{Api, HandlerResult, ResourceRequest};
use crate::render::response::{self, ListMeta};
use crate::storage::{Storage, StorageResult};
use base64::Engine;
use kubeshard_cache::{Filter, StoredObject};
use kubeshard_core::catalog::ResourceInfo;
use kubeshard_core::meta::parse_resource_version;
use kubeshard_core::selector::fields::{FieldRequirement, FieldSelector};
use kubeshard_core::selector::labels::LabelSelector;
use kubeshard_core::status::ApiError;
use kubeshard_shards::store::{ListRequest, NsName};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// How long a request waits for a future resourceVersion (kube: 3 s).
pub const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// Builds the filter from namespace and selectors, rejecting field labels
/// the kind does not support (kube: 400 "field label not supported").
///
/// A request that names an object (a watch of `…/secrets/s1`, or a
/// `metadata.name` field selector, which the request info turned into
/// that name) sees only that object: the name becomes the selector, and a
/// selector that names another object is refused, as kube does.
pub fn filter(
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    q: &crate::request::Query,
) -> Result<Filter, ApiError> {
    let labels = match q.get("labelSelector") {
        Some(s) => LabelSelector::parse(s).map_err(ApiError::bad_request)?,
        None => LabelSelector::everything(),
    };
    let mut fields = match q.get("fieldSelector") {
        Some(s) => FieldSelector::parse(s).map_err(|e| ApiError::bad_request(&e))?,
        None => FieldSelector::everything(),
    };
    if !name.is_empty() {
        if fields.is_empty() {
            fields = FieldSelector::from_requirements(vec![FieldRequirement {
                field: "metadata.name".into(),
                value: name.into(),
                negate: false,
            }]);
        } else if fields.exact_match("metadata.name") != Some(name) {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
    }
    for f in fields.fields() {
        if !info.supports_field(f) {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {f}"
            )));
        }
    }
    if !info.is_storage_version() {
        // Stored objects carry their fields under the storage version's
        // labels.
        fields = FieldSelector::from_requirements(
            fields
                .requirements()
                .iter()
                .map(|r| FieldRequirement {
                    field: info.stored_field_label(&r.field).to_string(),
                    ..r.clone()
                })
                .collect(),
        );
    }
    Ok(Filter {
        namespace: (info.namespaced && !namespace.is_empty()).then(|| namespace.to_string()),
        labels,
        fields,
    })
}

/// The revision a read without a resourceVersion is served at: every
/// write acknowledged before it, by any server sharing the storage.
pub async fn consistent_revision(api: &Api) -> Result<u64, ApiError> {
    api.storage()
        .consistent_revision(FUTURE_RV_WAIT)
        .await
        .or_status()
}

/// Waits until the closed revision reaches `n`, else kube's 504 "Too large
/// resource version".
pub async fn wait_not_older_than(api: &Api, n: u64) -> Result<(), ApiError> {
    if api.storage().wait_progress(n, FUTURE_RV_WAIT).await {
        return Ok(());
    }
    Err(ApiError::too_large_resource_version(
        n,
        api.storage().progress(),
        1,
    ))
}

/// The revision is signed in the token, as kube's is: a forged one past
/// i64 is refused as kube refuses it.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: i64,
    ns: String,
    name: String,
}

/// A token that goes on after `(ns, name)` at revision `rv`; -1 means at
/// the latest revision (what a list whose snapshot expired may continue
/// with, inconsistently, as kube allows).
fn encode_continue(rv: i64, ns: &str, name: &str) -> String {
    let t = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        ns: ns.to_string(),
        name: name.to_string(),
    };
    base64::engine::general_purpose::URL_SAFE.encode(serde_json::to_vec(&t).expect("serializes"))
}

/// The revision a token continues at (None: the latest) and the key it
/// continues after.
fn decode_continue(token: &str) -> Result<(Option<u64>, NsName), ApiError> {
    let bad = |why: &str| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
    };
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .map_err(|e| bad(&e.to_string()))?;
    let t: ContinueToken = serde_json::from_slice(&raw).map_err(|e| bad(&e.to_string()))?;
    if t.v != "meta.k8s.io/v1" {
        return Err(bad(&format!(
            "server does not recognize this encoded version {}",
            t.v
        )));
    }
    let rv = match t.rv {
        0 => {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ))
        }
        rv if rv < 0 => None,
        rv => Some(rv as u64),
    };
    Ok((rv, (t.ns.into(), t.name.into())))
}

/// Decides the snapshot revision from resourceVersion, resourceVersionMatch
/// and continue, following kube's rules and messages.
async fn snapshot_revision(
    api: &Api,
    q: &crate::request::Query,
) -> Result<(u64, Option<NsName>), ApiError> {
    let rv = q.get("resourceVersion").unwrap_or("");
    let rv_match = q.get("resourceVersionMatch").unwrap_or("");
    if let Some(token) = q.get("continue").filter(|c| !c.is_empty()) {
        if !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (rev, start) = decode_continue(token)?;
        let Some(rev) = rev else {
            return Ok((api.storage().progress(), Some(start)));
        };
        // A revision the server has not reached is waited for (kube: 504
        // "Too large resource version" after 3 s), never served.
        wait_not_older_than(api, rev).await?;
        return Ok((rev, Some(start)));
    }
    let closed = || api.storage().progress();
    match rv_match {
        "" => match rv {
            "" => Ok((consistent_revision(api).await?, None)),
            "0" => Ok((closed(), None)),
            n => {
                let n = parse_rv(n)?;
                wait_not_older_than(api, n).await?;
                Ok((closed(), None))
            }
        },
        "NotOlderThan" => {
            if rv.is_empty() {
                return Err(rv_match_forbidden());
            }
            let n = parse_rv(rv)?;
            wait_not_older_than(api, n).await?;
            Ok((closed(), None))
        }
        "Exact" => {
            if rv.is_empty() {
                return Err(rv_match_forbidden());
            }
            if rv == "0" {
                return Err(invalid_options(
                    "resourceVersionMatch",
                    "Exact",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            let n = parse_rv(rv)?;
            wait_not_older_than(api, n).await?;
            Ok((n, None))
        }
        other => Err(invalid_options(
            "resourceVersionMatch",
            other,
            "supported values: \"Exact\", \"NotOlderThan\"",
        )),
    }
}

fn rv_match_forbidden() -> ApiError {
    invalid_options(
        "resourceVersionMatch",
        "",
        "resourceVersionMatch is forbidden unless resourceVersion is provided",
    )
}

fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    parse_resource_version(rv)
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {rv}")))
}

/// The merged, sorted result of a list across shards.
pub struct Listed {
    pub items: Vec<Arc<StoredObject>>,
    pub meta: ListMeta,
}

/// Lists at the revision the query asks for.
pub async fn list_objects(
    api: &Api,
    rr: &ResourceRequest,
    filter: Filter,
) -> Result<Listed, ApiError> {
    let q = &rr.query;
    let limit: usize = match q.get("limit") {
        Some(l) if !l.is_empty() => l
            .parse::<i64>()
            .map(|l| l.max(0) as usize)
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?,
        _ => 0,
    };
    let (revision, start_after) = snapshot_revision(api, q).await?;
    // Gathering and joining a large list are done in one go each: under
    // a flood they wait for their turns like parts of body (see `lane`).
    crate::serving::lane::turn().await;
    let count_remaining = limit > 0 && !filter.has_selectors();
    let resume_after = start_after.clone();
    let req = ListRequest {
        resource: rr.resource.storage_key.clone(),
        filter: Arc::new(filter),
        revision,
        start_after,
        limit,
        count_remaining,
    };
    // A snapshot older than the history window has expired, as a
    // compacted revision has in kube, even if nothing it holds changed.
    let floor = api.revisions.floor(std::time::Instant::now());
    let listed = if revision < floor && rr.query.get("resourceVersion") != Some("0") {
        Err(ApiError::resource_expired(format!(
            "too old resource version: {revision} ({floor})"
        )))
    } else {
        api.storage().list(&req).await.or_status()
    };
    let chunks = listed.map_err(|e| match &resume_after {
        // The page's snapshot is gone: the client may go on from the same
        // key at the latest revision, with the token the Status carries.
        Some((ns, name)) if e.code == 410 => ApiError {
            list_continue: Some(encode_continue(-1, ns, name).into()),
            ..ApiError::resource_expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
        },
        _ => e,
    })?;
    crate::serving::lane::turn().await;
    let mut more = chunks.iter().any(|c| c.more);
    let mut remaining: usize = chunks.iter().map(|c| c.remaining).sum();
    let total: usize = chunks.iter().map(|c| c.items.len()).sum();
    let mut items = merge_sorted(
        chunks.into_iter().map(|c| c.items).collect(),
        if limit > 0 { limit } else { usize::MAX },
    );
    if limit > 0 && total > items.len() {
        more = true;
        remaining += total - items.len();
    }
    if limit == 0 {
        items.shrink_to_fit();
    }
    let continue_token = if more {
        items.last().map(|last| {
            let rv = i64::try_from(revision).expect("revisions stay below i64::MAX");
            encode_continue(rv, &last.namespace, &last.name)
        })
    } else {
        None
    };
    Ok(Listed {
        items,
        meta: ListMeta {
            resource_version: revision,
            continue_token,
            remaining: (count_remaining && more).then_some(remaining),
        },
    })
}

/// k-way merge of per-shard sorted runs, keeping the first `limit`.
fn merge_sorted(runs: Vec<Vec<Arc<StoredObject>>>, limit: usize) -> Vec<Arc<StoredObject>> {
    if runs.len() == 1 {
        let mut only = runs.into_iter().next().expect("one run");
        only.truncate(limit);
        return only;
    }
    let total: usize = runs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total.min(limit));
    let mut iters: Vec<std::vec::IntoIter<Arc<StoredObject>>> =
        runs.into_iter().map(Vec::into_iter).collect();
    let mut heap = BinaryHeap::new();
    for (i, it) in iters.iter_mut().enumerate() {
        if let Some(o) = it.next() {
            heap.push(Reverse(Head(o, i)));
        }
    }
    while let Some(Reverse(Head(o, i))) = heap.pop() {
        if out.len() >= limit {
            break;
        }
        out.push(o);
        if let Some(next) = iters[i].next() {
            heap.push(Reverse(Head(next, i)));
        }
    }
    out
}

struct Head(Arc<StoredObject>, usize);
impl Head {
    fn key(&self) -> (&str, &str) {
        (&self.0.namespace, &self.0.name)
    }
}
impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

pub async fn list(api: &Rc<Api>, rr: &ResourceRequest) -> HandlerResult {
    let filter = filter(&rr.resource, &rr.info.namespace, &rr.info.name, &rr.query)?;
    let listed = list_objects(api, rr, filter).await?;
    let items =
        crate::apiextensions::conversion::served_all(api, &rr.resource, listed.items).await?;
    Ok(response::list(&rr.resource, items, &listed.meta, rr.render))
}

/// kube validates list options as a `ListOptions.meta.k8s.io` object: bad
/// combinations are 422 Invalid with a field cause.
pub fn invalid_options(field: &str, value: &str, detail: &str) -> ApiError {
    let cause = if value.is_empty() {
        kubeshard_core::status::field_forbidden(field, detail)
    } else {
        kubeshard_core::status::field_invalid(field, value, detail)
    };
    ApiError::invalid("meta.k8s.io", "ListOptions", "", vec![cause])
}
