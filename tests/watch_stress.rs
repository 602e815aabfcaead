//! Concurrency property test against the real binary: many writers on all
//! shards (creates, updates, deletes, conflicts), watchers with random
//! selectors and start points, and paged lists. Every watch stream must be
//! exactly what the committed history implies (order, completeness, no
//! duplicates, selector transitions), and every list page must equal the
//! history's state at the page's revision.

mod common;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A tiny deterministic PRNG (xorshift) so failures replay.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMESPACES: [&str; 2] = ["s-a", "s-b"];
const TIERS: [&str; 3] = ["a", "b", "c"];

/// One committed change: the object's state after it (None = deleted).
#[derive(Clone, Debug)]
struct Change {
    rev: u64,
    ns: String,
    name: String,
    tier: Option<String>,
}

type Key = (String, String);

/// A paged list: its selector, its revision and the (key, rev) it returned.
type ListedPages = (Sel, u64, Vec<(Key, u64)>);

#[derive(Clone, Debug)]
enum Sel {
    All,
    Tier(&'static str),
    NotTier(&'static str),
    Namespace(&'static str),
}

impl Sel {
    fn query(&self) -> (String, String) {
        match self {
            Sel::All => ("/api/v1/serviceaccounts".into(), String::new()),
            Sel::Tier(t) => (
                "/api/v1/serviceaccounts".into(),
                format!("labelSelector=tier%3D{t}"),
            ),
            Sel::NotTier(t) => (
                "/api/v1/serviceaccounts".into(),
                format!("labelSelector=tier%21%3D{t}"),
            ),
            Sel::Namespace(ns) => (
                format!("/api/v1/namespaces/{ns}/serviceaccounts"),
                String::new(),
            ),
        }
    }
    fn matches(&self, key: &Key, tier: &str) -> bool {
        match self {
            Sel::All => true,
            Sel::Tier(t) => tier == *t,
            Sel::NotTier(t) => tier != *t,
            Sel::Namespace(ns) => key.0 == *ns,
        }
    }
}

fn random_sel(rng: &mut Rng) -> Sel {
    match rng.below(4) {
        0 => Sel::All,
        1 => Sel::Tier(TIERS[rng.below(3) as usize]),
        2 => Sel::NotTier(TIERS[rng.below(3) as usize]),
        _ => Sel::Namespace(NAMESPACES[rng.below(2) as usize]),
    }
}

/// The state after applying every change with rev ≤ `rev`.
fn state_at(history: &[Change], rev: u64) -> BTreeMap<Key, (u64, String)> {
    let mut state = BTreeMap::new();
    for c in history.iter().take_while(|c| c.rev <= rev) {
        let key = (c.ns.clone(), c.name.clone());
        match &c.tier {
            Some(t) => state.insert(key, (c.rev, t.clone())),
            None => state.remove(&key),
        };
    }
    state
}

/// The events a watcher with `sel` started at `from` must receive, as
/// (type, namespace, name, rev).
fn expected_events(
    history: &[Change],
    sel: &Sel,
    from: u64,
    until: u64,
) -> Vec<(String, String, String, u64)> {
    let mut state = state_at(history, from);
    let mut out = Vec::new();
    for c in history.iter().filter(|c| c.rev > from && c.rev <= until) {
        let key = (c.ns.clone(), c.name.clone());
        let before = state.get(&key).is_some_and(|(_, t)| sel.matches(&key, t));
        let after = c.tier.as_ref().is_some_and(|t| sel.matches(&key, t));
        let typ = match (before, after, c.tier.is_some()) {
            (false, true, _) => "ADDED",
            (true, true, _) => "MODIFIED",
            (true, false, _) => "DELETED",
            (false, false, _) => "",
        };
        if !typ.is_empty() {
            out.push((typ.to_string(), c.ns.clone(), c.name.clone(), c.rev));
        }
        match &c.tier {
            Some(t) => state.insert(key, (c.rev, t.clone())),
            None => state.remove(&key),
        };
    }
    out
}

fn run(shards: usize, seed: u64) {
    // The model is every write: no controller may add service accounts.
    let s = Server::start_with(
        shards,
        &[
            "--watch-bookmark-interval",
            "100ms",
            "--controllers=*,-serviceaccount,-root-ca-cert-publisher",
        ],
    );
    for ns in NAMESPACES {
        namespace(&s, ns);
    }
    let history: Arc<Mutex<Vec<Change>>> = Arc::new(Mutex::new(Vec::new()));
    let base = s.base.clone();

    // Watchers start at revisions taken from lists made while writes run.
    let mut rng = Rng(seed);
    let mut watchers = Vec::new();
    let (_, first) = s.get("/api/v1/serviceaccounts");
    let start_rev = rv(&first);
    for _ in 0..6 {
        let sel = random_sel(&mut rng);
        let (path, q) = sel.query();
        let w = s.watch(&format!(
            "{path}?watch=1&allowWatchBookmarks=true&resourceVersion={start_rev}&{q}"
        ));
        watchers.push((sel, start_rev, w));
    }

    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let (base, history) = (base.clone(), history.clone());
            std::thread::spawn(move || {
                let agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .new_agent();
                let mut rng = Rng(seed ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                for i in 0..120 {
                    let ns = NAMESPACES[rng.below(2) as usize];
                    let name = format!("sa-{}", rng.below(12));
                    let tier = TIERS[rng.below(3) as usize];
                    let url = format!("{base}/api/v1/namespaces/{ns}/serviceaccounts");
                    let op = rng.below(3);
                    let resp = match op {
                        0 => agent.post(&url).send_json(
                            json!({"metadata": {"name": name, "labels": {"tier": tier}}}),
                        ),
                        1 => {
                            let mut get = agent.get(format!("{url}/{name}")).call().unwrap();
                            if get.status() != 200 {
                                continue;
                            }
                            let mut cur: Value = get.body_mut().read_json().unwrap();
                            cur["metadata"]["labels"]["tier"] = json!(tier);
                            cur["metadata"]["annotations"] = json!({"w": format!("{t}-{i}")});
                            agent.put(format!("{url}/{name}")).send_json(cur)
                        }
                        _ => agent.delete(format!("{url}/{name}")).call(),
                    };
                    let mut resp = resp.unwrap();
                    let code = resp.status().as_u16();
                    let body: Value = resp.body_mut().read_json().unwrap();
                    match code {
                        200 | 201 => {}
                        404 | 409 => continue,
                        other => panic!("unexpected {other}: {body}"),
                    }
                    // A deletion answers with the object's last state,
                    // stamped with the deletion's revision.
                    let tier = if op == 2 {
                        None
                    } else {
                        body["metadata"]["labels"]["tier"]
                            .as_str()
                            .map(str::to_string)
                    };
                    history.lock().unwrap().push(Change {
                        rev: rv(&body),
                        ns: ns.to_string(),
                        name: name.clone(),
                        tier,
                    });
                }
            })
        })
        .collect();

    // Paged lists with random selectors while writes run; check them later.
    let mut lists: Vec<ListedPages> = Vec::new();
    for _ in 0..8 {
        let sel = random_sel(&mut rng);
        let (path, q) = sel.query();
        let limit = 1 + rng.below(5);
        let (_, page) = s.get(&format!("{path}?limit={limit}&{q}"));
        let page_rv = rv(&page);
        let mut items = Vec::new();
        let mut page = page;
        loop {
            for i in page["items"].as_array().unwrap() {
                items.push((
                    (
                        i["metadata"]["namespace"].as_str().unwrap().to_string(),
                        i["metadata"]["name"].as_str().unwrap().to_string(),
                    ),
                    rv(i),
                ));
            }
            let Some(token) = page["metadata"]["continue"]
                .as_str()
                .filter(|t| !t.is_empty())
                .map(str::to_string)
            else {
                break;
            };
            let (code, next) = s.get(&format!("{path}?limit={limit}&continue={token}&{q}"));
            assert_eq!(code, 200, "{next}");
            assert_eq!(rv(&next), page_rv);
            page = next;
        }
        lists.push((sel, page_rv, items));
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in writers {
        w.join().unwrap();
    }
    let mut history = history.lock().unwrap().clone();
    history.sort_by_key(|c| c.rev);
    let revs: Vec<u64> = history.iter().map(|c| c.rev).collect();
    assert!(revs.windows(2).all(|p| p[0] < p[1]), "revisions are unique");
    let final_rev = *revs.last().expect("some writes succeeded");

    for (sel, from, mut w) in watchers {
        let mut got = Vec::new();
        loop {
            let e = w.next_event().expect("watch stays open");
            let obj = &e["object"];
            let r = rv(obj);
            if e["type"] == "BOOKMARK" {
                if r >= final_rev {
                    break;
                }
                continue;
            }
            got.push((
                e["type"].as_str().unwrap().to_string(),
                obj["metadata"]["namespace"].as_str().unwrap().to_string(),
                obj["metadata"]["name"].as_str().unwrap().to_string(),
                r,
            ));
        }
        let want = expected_events(&history, &sel, from, final_rev);
        assert_eq!(got, want, "watcher {sel:?} from {from}");
    }
    for (sel, at, items) in lists {
        let want: Vec<(Key, u64)> = state_at(&history, at)
            .into_iter()
            .filter(|(k, (_, t))| sel.matches(k, t))
            .map(|(k, (r, _))| (k, r))
            .collect();
        assert_eq!(items, want, "list {sel:?} at {at}");
    }
}

#[test]
fn stress_one_shard() {
    run(1, 0x5eed_0001);
}

#[test]
fn stress_three_shards() {
    run(3, 0x5eed_0003);
}

#[test]
fn stress_four_shards() {
    run(4, 0x5eed_0004);
}
