//! kube's etcd client metrics: `etcd_request_duration_seconds`,
//! `etcd_requests_total` and `etcd_request_errors_total`, by operation,
//! group and resource — what kube's dashboards read to tell a slow etcd
//! from a slow API server.
//!
//! Each executor observes into its own table behind a lock only a scrape
//! contends for; a scrape sums the tables (the server renders them).

use hashbrown::{Equivalent, HashMap};
use kubeshard_core::catalog::ResourceInfo;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

/// kube's buckets for `etcd_request_duration_seconds` (the same as its
/// request latency's, so the two compare bucket by bucket).
pub const BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// kube's `operation` label: which store call made the request.
pub type Operation = &'static str;

/// `(operation, group, resource)`.
pub type Key = (Operation, Arc<str>, Arc<str>);

/// One key's observations (bucket counts not cumulative).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub buckets: [u64; BUCKETS.len()],
    pub sum: f64,
    pub count: u64,
    pub errors: u64,
}

impl Observed {
    fn observe(&mut self, seconds: f64, failed: bool) {
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
        self.errors += u64::from(failed);
    }

    fn add(&mut self, other: &Self) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets) {
            *a += b;
        }
        self.sum += other.sum;
        self.count += other.count;
        self.errors += other.errors;
    }
}

type Table = HashMap<Key, Observed>;

/// A [`Key`] by borrowed names: found without allocating (the key's
/// strings are made once, when first seen). Hashes as the key does: a
/// tuple hashes its parts in order, and `Arc<str>` hashes as its `str`.
#[derive(Hash)]
struct Lookup<'a>(&'a str, &'a str, &'a str);

impl Equivalent<Key> for Lookup<'_> {
    fn equivalent(&self, (op, group, resource): &Key) -> bool {
        self.0 == *op && self.1 == &**group && self.2 == &**resource
    }
}

static TABLES: LazyLock<Mutex<Vec<Arc<Mutex<Table>>>>> = LazyLock::new(Default::default);

thread_local! {
    static MINE: Arc<Mutex<Table>> = {
        let mine = Arc::new(Mutex::new(Table::new()));
        TABLES.lock().unwrap_or_else(|e| e.into_inner()).push(mine.clone());
        mine
    };
}

/// Notes one request to etcd for `info`, started at `started`.
pub fn record(operation: Operation, info: &ResourceInfo, started: Instant, failed: bool) {
    let seconds = started.elapsed().as_secs_f64();
    MINE.with(|mine| {
        let mut table = mine.lock().unwrap_or_else(|e| e.into_inner());
        let found = table.get_mut(&Lookup(operation, &info.storage_group, &info.plural));
        match found {
            Some(o) => o.observe(seconds, failed),
            None => {
                let key = (
                    operation,
                    info.storage_group.as_str().into(),
                    info.plural.as_str().into(),
                );
                table.entry(key).or_default().observe(seconds, failed);
            }
        }
    });
}

/// Every key's observations summed over the executors, sorted.
pub fn snapshot() -> Vec<(Key, Observed)> {
    let mut all: Table = HashMap::new();
    for table in TABLES.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        for (k, o) in table.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            all.entry(k.clone()).or_default().add(o);
        }
    }
    let mut sorted: Vec<_> = all.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_by_its_borrowed_names() {
        let mut table = Table::new();
        table.insert(
            ("update", "apps".into(), "deployments".into()),
            Observed::default(),
        );
        assert!(table
            .get(&Lookup("update", "apps", "deployments"))
            .is_some());
        assert!(table.get(&Lookup("update", "", "deployments")).is_none());
        assert!(table
            .get(&Lookup("create", "apps", "deployments"))
            .is_none());
    }

    #[test]
    fn observations_land_in_kubes_buckets_and_sum_over_threads() {
        let builtins = kubeshard_core::catalog::Catalog::with_builtins().snapshot();
        let mut info = (**builtins.lookup("apps", "v1", "deployments").unwrap()).clone();
        // Names no other test records under.
        info.storage_group = "metrics.test".into();
        info.plural = "probes".into();
        let started = Instant::now() - std::time::Duration::from_millis(30);
        record("create", &info, started, false);
        let info2 = info.clone();
        std::thread::spawn(move || record("create", &info2, Instant::now(), true))
            .join()
            .unwrap();
        let all = snapshot();
        let (_, o) = all
            .iter()
            .find(|((op, g, r), _)| *op == "create" && &**g == "metrics.test" && &**r == "probes")
            .expect("recorded");
        assert_eq!((o.count, o.errors), (2, 1));
        // 30 ms is past 0.025 and within 0.05; the fresh one within 0.005.
        assert_eq!(o.buckets[0], 1);
        assert_eq!(o.buckets[2], 1);
        assert!(o.sum >= 0.03);
    }
}
