//! kube-apiserver's request metrics, with its names, labels and buckets:
//! `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_response_sizes`, `apiserver_longrunning_requests`,
//! `apiserver_watch_events_total`/`_sizes` and `apiserver_audit_event_total`.
//!
//! Dashboards, alerts and SLO tooling read these series by name, so the
//! labels follow kube's rules (see [`Labels::of`]). Each executor records
//! into its own series behind a lock only a scrape ever contends for, and
//! a scrape sums the executors' series.

use super::{Query, RequestInfo};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// kube's buckets for `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];
/// kube's buckets for `apiserver_request_sli_duration_seconds`.
const SLI_BUCKETS: [f64; 21] = [
    0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0,
    30.0, 45.0, 60.0,
];
/// kube's buckets for `apiserver_response_sizes` (bytes).
const SIZE_BUCKETS: [f64; 7] = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
/// kube's buckets for `apiserver_watch_events_sizes` (bytes).
const WATCH_SIZE_BUCKETS: [f64; 8] = [
    1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0, 131072.0,
];

/// A request's labels as kube's request metrics name them, borrowed from
/// the request (`S = &str`) or kept with a series (`S = String`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Labels<S = String> {
    pub verb: &'static str,
    pub dry_run: &'static str,
    pub group: S,
    pub version: S,
    pub resource: S,
    pub subresource: S,
    pub scope: &'static str,
    pub component: &'static str,
}

impl<'a> Labels<&'a str> {
    /// kube's labels for a request, or None for requests kube does not
    /// instrument (paths outside the API, health and discovery, whose
    /// unbounded variety would make unbounded series).
    pub fn of(
        info: &'a RequestInfo,
        method: &http::Method,
        query: &Query,
        content_type: Option<&str>,
    ) -> Option<Self> {
        if !info.is_resource_request {
            let path = info.path.as_str();
            let health = ["/healthz", "/livez", "/readyz"].iter().any(|h| {
                path.strip_prefix(h)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            });
            let discovery = path == "/api"
                || path == "/api/v1"
                || path == "/apis"
                || (path.starts_with("/apis/") && path.matches('/').count() <= 3);
            if !health && !discovery {
                return None;
            }
            return Some(Labels {
                verb: verb_of(method.as_str(), "", query, content_type, ""),
                dry_run: "",
                group: "",
                version: "",
                resource: "",
                subresource: path,
                scope: "",
                component: if health { "" } else { "apiserver" },
            });
        }
        let scope = if !info.name.is_empty() || info.verb == "create" {
            "resource"
        } else if !info.namespace.is_empty() {
            "namespace"
        } else {
            "cluster"
        };
        Some(Labels {
            verb: verb_of(
                method.as_str(),
                scope,
                query,
                content_type,
                &info.subresource,
            ),
            dry_run: match query.get("dryRun") {
                None | Some("") => "",
                Some("All") => "All",
                Some(_) => "invalid",
            },
            group: &info.group,
            version: &info.version,
            resource: &info.resource,
            subresource: &info.subresource,
            scope,
            component: "apiserver",
        })
    }

    fn to_owned(&self) -> Labels {
        Labels {
            verb: self.verb,
            dry_run: self.dry_run,
            group: self.group.to_string(),
            version: self.version.to_string(),
            resource: self.resource.to_string(),
            subresource: self.subresource.to_string(),
            scope: self.scope,
            component: self.component,
        }
    }

    /// A hash of the labels (xxh3: the std hasher cost more than the rest
    /// of the recording on small requests).
    fn hash(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for part in [
            self.verb,
            self.dry_run,
            self.scope,
            self.component,
            self.group,
            self.version,
            self.resource,
            self.subresource,
        ] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        h.digest()
    }
}

impl Labels {
    fn borrowed(&self) -> Labels<&str> {
        Labels {
            verb: self.verb,
            dry_run: self.dry_run,
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
            scope: self.scope,
            component: self.component,
        }
    }

    /// Whether kube observes the response's size (GET and LIST routes).
    fn sizes_observed(&self) -> bool {
        matches!(self.verb, "GET" | "LIST")
    }
}

/// kube's `verb` label: the method, made LIST for collection reads, WATCH
/// for watches, APPLY for server-side apply and CONNECT for the streaming
/// subresources.
fn verb_of(
    method: &str,
    scope: &str,
    query: &Query,
    content_type: Option<&str>,
    subresource: &str,
) -> &'static str {
    if matches!(
        subresource,
        "log" | "exec" | "portforward" | "attach" | "proxy"
    ) {
        return "CONNECT";
    }
    let watch = query
        .get("watch")
        .is_some_and(|w| !w.is_empty() && w != "0" && w != "false");
    match method {
        "GET" | "HEAD" if watch => "WATCH",
        "GET" | "HEAD" if matches!(scope, "namespace" | "cluster") => "LIST",
        "GET" | "HEAD" => "GET",
        "PATCH" if content_type.is_some_and(|ct| ct.starts_with("application/apply-patch")) => {
            "APPLY"
        }
        "PATCH" => "PATCH",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        _ => "other",
    }
}

/// A histogram with fixed buckets (cumulative counts are made at render).
#[derive(Clone, Debug)]
pub(crate) struct Histogram<const N: usize> {
    counts: [u64; N],
    sum: f64,
    pub(crate) count: u64,
}

impl<const N: usize> Default for Histogram<N> {
    fn default() -> Self {
        Self {
            counts: [0; N],
            sum: 0.0,
            count: 0,
        }
    }
}

impl<const N: usize> Histogram<N> {
    pub(crate) fn observe(&mut self, bounds: &[f64; N], v: f64) {
        if let Some(i) = bounds.iter().position(|b| v <= *b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }

    pub(crate) fn add(&mut self, other: &Self) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.sum += other.sum;
        self.count += other.count;
    }
}

/// One label set's series on one executor.
#[derive(Clone, Debug, Default)]
struct Series {
    /// `apiserver_request_total` by status code.
    codes: Vec<(u16, u64)>,
    duration: Histogram<23>,
    /// The duration less webhook and flow-control queue time (dry runs
    /// left out, as kube leaves them).
    sli: Histogram<21>,
    sizes: Histogram<7>,
    longrunning: i64,
}

impl Series {
    fn count(&mut self, code: u16, n: u64) {
        match self.codes.iter_mut().find(|(c, _)| *c == code) {
            Some((_, m)) => *m += n,
            None => self.codes.push((code, n)),
        }
    }

    /// Adds another executor's series of the same labels.
    fn add(&mut self, other: &Series) {
        for &(code, n) in &other.codes {
            self.count(code, n);
        }
        self.duration.add(&other.duration);
        self.sli.add(&other.sli);
        self.sizes.add(&other.sizes);
        self.longrunning += other.longrunning;
    }
}

/// One executor's series, found by their labels' hash and kept in place,
/// so a request finds its series once and records into it by index.
#[derive(Default)]
struct Executor {
    index: HashMap<u64, Vec<usize>, std::hash::BuildHasherDefault<Prehashed>>,
    series: Vec<(Labels, Series)>,
}

/// The identity hasher for keys that are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A request's series on the executor that serves it.
#[derive(Clone, Copy, Debug)]
pub struct Slot(usize);

/// Every executor's series (registered on first use) and the shared ones.
struct Registry {
    executors: Mutex<Vec<Arc<Mutex<Executor>>>>,
    watch: Mutex<HashMap<[String; 3], Arc<WatchSeries>>>,
    audit_events: AtomicU64,
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| Registry {
    executors: Mutex::new(Vec::new()),
    watch: Mutex::new(HashMap::new()),
    audit_events: AtomicU64::new(0),
});

thread_local! {
    /// This thread's (executor's) series; only a scrape takes its lock
    /// from another thread.
    static MINE: Arc<Mutex<Executor>> = {
        let mine = Arc::new(Mutex::new(Executor::default()));
        REGISTRY.executors.lock().push(mine.clone());
        mine
    };
}

/// The series of a request's labels on this executor (made on first
/// sight: only then are the labels copied).
pub fn slot(labels: &Labels<&str>) -> Slot {
    let hash = labels.hash();
    MINE.with(|m| {
        let mut m = m.lock();
        let found = m.index.get(&hash).and_then(|slots| {
            slots
                .iter()
                .copied()
                .find(|&i| m.series[i].0.borrowed() == *labels)
        });
        Slot(found.unwrap_or_else(|| {
            let i = m.series.len();
            m.series.push((labels.to_owned(), Series::default()));
            m.index.entry(hash).or_default().push(i);
            i
        }))
    })
}

fn with_series(slot: Slot, f: impl FnOnce(&Labels, &mut Series)) {
    MINE.with(|m| {
        // A slot is only used on the executor that made it (requests and
        // their bodies never leave it); a stray one is ignored.
        if let Some((labels, series)) = m.lock().series.get_mut(slot.0) {
            f(labels, series)
        }
    });
}

/// Records a finished request: its status code, how long it took (of
/// which `waited` in flow control's queue and on admission webhooks)
/// and, when known, how many bytes it answered with.
pub fn record(slot: Slot, code: u16, took: Duration, waited: Duration, size: Option<u64>) {
    with_series(slot, |labels, s| {
        s.count(code, 1);
        s.duration.observe(&DURATION_BUCKETS, took.as_secs_f64());
        if labels.dry_run.is_empty() {
            s.sli
                .observe(&SLI_BUCKETS, took.saturating_sub(waited).as_secs_f64());
        }
        if let (Some(size), true) = (size, labels.sizes_observed()) {
            s.sizes.observe(&SIZE_BUCKETS, size as f64);
        }
    });
}

/// Counts a long-running request (a watch, a CONNECT) from its start
/// until the guard is dropped, when it is recorded as finished.
/// Dropped on the executor that started it (with the response body).
pub struct LongRunning {
    slot: Slot,
    code: u16,
    started: std::time::Instant,
    waited: Duration,
}

impl LongRunning {
    pub fn start(slot: Slot, code: u16, started: std::time::Instant, waited: Duration) -> Self {
        with_series(slot, |_, s| s.longrunning += 1);
        Self {
            slot,
            code,
            started,
            waited,
        }
    }
}

impl Drop for LongRunning {
    fn drop(&mut self) {
        with_series(self.slot, |_, s| s.longrunning -= 1);
        record(
            self.slot,
            self.code,
            self.started.elapsed(),
            self.waited,
            None,
        );
    }
}

/// Counts an audit event sent to a backend.
pub fn audit_event() {
    REGISTRY.audit_events.fetch_add(1, Ordering::Relaxed);
}

/// A watched resource's event series, shared by the executors (watchers
/// add what they sent once per chunk, not per event).
#[derive(Default)]
pub struct WatchSeries {
    events: AtomicU64,
    bytes: AtomicU64,
    buckets: [AtomicU64; 8],
}

/// What one watcher sent since it last reported.
#[derive(Default)]
pub struct WatchTally {
    events: u64,
    bytes: u64,
    buckets: [u64; 8],
}

impl WatchTally {
    pub fn event(&mut self, size: usize) {
        self.events += 1;
        self.bytes += size as u64;
        if let Some(i) = WATCH_SIZE_BUCKETS.iter().position(|b| size as f64 <= *b) {
            self.buckets[i] += 1;
        }
    }

    /// Adds the tally to `series` and starts over.
    pub fn flush(&mut self, series: &WatchSeries) {
        if self.events == 0 {
            return;
        }
        series.events.fetch_add(self.events, Ordering::Relaxed);
        series.bytes.fetch_add(self.bytes, Ordering::Relaxed);
        for (b, n) in series.buckets.iter().zip(self.buckets) {
            if n > 0 {
                b.fetch_add(n, Ordering::Relaxed);
            }
        }
        *self = WatchTally::default();
    }
}

/// The event series of a watched group/version/resource.
pub fn watch_series(group: &str, version: &str, resource: &str) -> Arc<WatchSeries> {
    let key = [group.to_string(), version.to_string(), resource.to_string()];
    REGISTRY.watch.lock().entry(key).or_default().clone()
}

/// Every series summed over the executors, in the OpenMetrics text
/// format (counters as families without `_total`).
pub fn render() -> String {
    let mut all: HashMap<Labels, Series> = HashMap::new();
    for e in REGISTRY.executors.lock().iter() {
        for (labels, s) in &e.lock().series {
            all.entry(labels.clone()).or_default().add(s);
        }
    }
    let mut sorted: Vec<(&Labels, &Series)> = all.iter().collect();
    sorted.sort_by_key(|(l, _)| {
        (
            l.group.as_str(),
            l.version.as_str(),
            l.resource.as_str(),
            l.subresource.as_str(),
            l.verb,
            l.scope,
            l.dry_run,
        )
    });
    let mut out = String::new();
    family(&mut out, "apiserver_request", "counter",
        "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.");
    for (l, s) in &sorted {
        let mut codes = s.codes.clone();
        codes.sort_unstable();
        for (code, n) in codes {
            // Labels sorted by name, as client_golang writes them.
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{code}\",{}}} {n}",
                l.render(true)
            );
        }
    }
    histograms(&mut out, &sorted, "apiserver_request_duration_seconds",
        "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
        true, &DURATION_BUCKETS, |s| &s.duration);
    histograms(&mut out, &sorted, "apiserver_request_sli_duration_seconds",
        "[ALPHA] Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
        false, &SLI_BUCKETS, |s| &s.sli);
    histograms(&mut out, &sorted, "apiserver_response_sizes",
        "[STABLE] Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
        false, &SIZE_BUCKETS, |s| &s.sizes);
    family(&mut out, "apiserver_longrunning_requests", "gauge",
        "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.");
    // Without dry_run: summed over it.
    let mut longrunning: Vec<(String, i64)> = Vec::new();
    for (l, s) in sorted.iter().filter(|(l, _)| l.is_long_running()) {
        let key = l.render(false);
        match longrunning.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += s.longrunning,
            None => longrunning.push((key, s.longrunning)),
        }
    }
    for (key, n) in longrunning {
        let _ = writeln!(out, "apiserver_longrunning_requests{{{key}}} {n}");
    }
    render_watch(&mut out);
    family(
        &mut out,
        "apiserver_audit_event",
        "counter",
        "[ALPHA] Counter of audit events generated and sent to the audit backend.",
    );
    let _ = writeln!(
        out,
        "apiserver_audit_event_total {}",
        REGISTRY.audit_events.load(Ordering::Relaxed)
    );
    #[cfg(feature = "etcd")]
    render_etcd(&mut out);
    out
}

/// kube's etcd client series (observed by the etcd backend's writer;
/// none without `--storage etcd`).
#[cfg(feature = "etcd")]
fn render_etcd(out: &mut String) {
    use kubeshard_shards::etcd::metrics::{snapshot, Observed, BUCKETS};
    let all = snapshot();
    let labelled: Vec<(String, _)> = all
        .iter()
        .map(|((op, group, resource), o)| {
            let labels = format!(
                "group=\"{}\",operation=\"{op}\",resource=\"{}\"",
                escape(group),
                escape(resource)
            );
            (labels, o)
        })
        .collect();
    let name = "etcd_request_duration_seconds";
    family(
        out,
        name,
        "histogram",
        "[ALPHA] Etcd request latency in seconds for each operation and object type.",
    );
    for (labels, o) in &labelled {
        let h = Histogram {
            counts: o.buckets,
            sum: o.sum,
            count: o.count,
        };
        histogram(out, name, labels, &BUCKETS, &h);
    }
    type Count = fn(&Observed) -> u64;
    let counters: [(&str, &str, Count); 2] = [
        (
            "etcd_requests",
            "[ALPHA] Etcd request counts for each operation and object type.",
            |o| o.count,
        ),
        (
            "etcd_request_errors",
            "[ALPHA] Etcd failed request counts for each operation and object type.",
            |o| o.errors,
        ),
    ];
    for (name, help, of) in counters {
        family(out, name, "counter", help);
        for (labels, o) in &labelled {
            let _ = writeln!(out, "{name}_total{{{labels}}} {}", of(o));
        }
    }
}

/// One histogram family of the request series: every series that
/// observed it, labelled with or without `dry_run`.
fn histograms<const N: usize>(
    out: &mut String,
    sorted: &[(&Labels, &Series)],
    name: &str,
    help: &str,
    with_dry_run: bool,
    buckets: &[f64; N],
    of: impl Fn(&Series) -> &Histogram<N>,
) {
    family(out, name, "histogram", help);
    for (l, s) in sorted.iter().filter(|(_, s)| of(s).count > 0) {
        histogram(out, name, &l.render(with_dry_run), buckets, of(s));
    }
}

fn render_watch(out: &mut String) {
    let watch = REGISTRY.watch.lock();
    let mut keys: Vec<&[String; 3]> = watch.keys().collect();
    keys.sort();
    family(
        out,
        "apiserver_watch_events",
        "counter",
        "[ALPHA] Number of events sent in watch clients",
    );
    for k in &keys {
        let n = watch[*k].events.load(Ordering::Relaxed);
        let _ = writeln!(out, "apiserver_watch_events_total{{{}}} {n}", gvr(k));
    }
    family(
        out,
        "apiserver_watch_events_sizes",
        "histogram",
        "[ALPHA] Watch event size distribution in bytes",
    );
    for k in &keys {
        let s = &watch[*k];
        let h = Histogram::<8> {
            counts: std::array::from_fn(|i| s.buckets[i].load(Ordering::Relaxed)),
            sum: s.bytes.load(Ordering::Relaxed) as f64,
            count: s.events.load(Ordering::Relaxed),
        };
        histogram(
            out,
            "apiserver_watch_events_sizes",
            &gvr(k),
            &WATCH_SIZE_BUCKETS,
            &h,
        );
    }
}

fn gvr(k: &[String; 3]) -> String {
    format!(
        "group=\"{}\",resource=\"{}\",version=\"{}\"",
        escape(&k[0]),
        escape(&k[2]),
        escape(&k[1])
    )
}

impl Labels {
    fn is_long_running(&self) -> bool {
        matches!(self.verb, "WATCH" | "CONNECT")
    }

    /// The label pairs, sorted by name as client_golang writes them;
    /// `with_dry_run` for the series that carry it.
    fn render(&self, with_dry_run: bool) -> String {
        let mut s = format!("component=\"{}\",", self.component);
        if with_dry_run {
            let _ = write!(s, "dry_run=\"{}\",", self.dry_run);
        }
        let _ = write!(
            s,
            "group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
            escape(&self.group),
            escape(&self.resource),
            self.scope,
            escape(&self.subresource),
            self.verb,
            escape(&self.version)
        );
        s
    }
}

pub(crate) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(crate) fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub(crate) fn histogram<const N: usize>(
    out: &mut String,
    name: &str,
    labels: &str,
    bounds: &[f64; N],
    h: &Histogram<N>,
) {
    let mut cumulative = 0;
    for (b, n) in bounds.iter().zip(h.counts) {
        cumulative += n;
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels},le=\"{}\"}} {cumulative}",
            go_float(*b)
        );
    }
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
}

/// A bucket bound as Go's `%g` prints it (`0.005`, `1`, `1e+06`).
fn go_float(v: f64) -> String {
    if v >= 1e6 {
        let exp = v.log10().floor() as i32;
        let mantissa = v / 10f64.powi(exp);
        return if mantissa == 1.0 {
            format!("1e+{exp:02}")
        } else {
            format!("{mantissa}e+{exp:02}")
        };
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(method: &str, path: &str, query: &str, ct: Option<&str>) -> Option<Labels> {
        let q = Query::parse(Some(query));
        let m = http::Method::from_bytes(method.as_bytes()).unwrap();
        let info = RequestInfo::parse(&m, path, &q);
        Labels::of(&info, &m, &q, ct).map(|l| l.to_owned())
    }

    fn slot_of(l: &Labels) -> Slot {
        slot(&l.borrowed())
    }

    #[test]
    fn verbs_and_scopes_follow_kube() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/d/pods",
                "",
                None,
                "LIST",
                "namespace",
            ),
            ("GET", "/api/v1/pods", "", None, "LIST", "cluster"),
            (
                "GET",
                "/api/v1/namespaces/d/pods/p",
                "",
                None,
                "GET",
                "resource",
            ),
            (
                "GET",
                "/api/v1/namespaces/d/pods",
                "watch=true",
                None,
                "WATCH",
                "namespace",
            ),
            (
                "GET",
                "/api/v1/namespaces/d/pods",
                "watch=false",
                None,
                "LIST",
                "namespace",
            ),
            (
                "POST",
                "/api/v1/namespaces/d/pods",
                "",
                None,
                "POST",
                "resource",
            ),
            (
                "PUT",
                "/api/v1/namespaces/d/pods/p",
                "",
                None,
                "PUT",
                "resource",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/d/pods/p",
                "",
                Some("application/apply-patch+yaml"),
                "APPLY",
                "resource",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/d/pods/p",
                "",
                Some("application/merge-patch+json"),
                "PATCH",
                "resource",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/d/pods",
                "",
                None,
                "DELETE",
                "namespace",
            ),
            (
                "GET",
                "/api/v1/namespaces/d/pods/p/log",
                "",
                None,
                "CONNECT",
                "resource",
            ),
            ("GET", "/api/v1/nodes", "", None, "LIST", "cluster"),
        ];
        for (method, path, query, ct, verb, scope) in cases {
            let l = labels(method, path, query, ct).unwrap();
            assert_eq!((l.verb, l.scope), (verb, scope), "{method} {path}?{query}");
            assert_eq!(l.component, "apiserver");
        }
        let l = labels(
            "POST",
            "/apis/apps/v1/namespaces/d/deployments",
            "dryRun=All",
            None,
        )
        .unwrap();
        assert_eq!((l.group.as_str(), l.dry_run), ("apps", "All"));
        let h = labels("GET", "/readyz", "", None).unwrap();
        assert_eq!(
            (h.subresource.as_str(), h.component, h.verb),
            ("/readyz", "", "GET")
        );
        assert!(labels("GET", "/no/such/path", "", None).is_none());
        assert!(labels("GET", "/apis/apps/v1", "", None).is_some());
    }

    #[test]
    fn renders_kube_series() {
        let l = labels(
            "GET",
            "/api/v1/namespaces/metricstest/configmaps/x",
            "",
            None,
        )
        .unwrap();
        let at = slot_of(&l);
        assert_eq!(slot_of(&l).0, at.0, "one series per label set");
        record(
            at,
            200,
            Duration::from_millis(3),
            Duration::ZERO,
            Some(1500),
        );
        record(
            at,
            404,
            Duration::from_millis(30),
            Duration::ZERO,
            Some(200),
        );
        // Two seconds, all but 10 ms of them queued or in webhooks.
        let (took, waited) = (Duration::from_secs(2), Duration::from_millis(1990));
        record(at, 200, took, waited, None);
        // A dry run has no SLI latency.
        let dry = labels(
            "POST",
            "/api/v1/namespaces/metricstest/configmaps",
            "dryRun=All",
            None,
        )
        .unwrap();
        record(slot_of(&dry), 201, took, Duration::ZERO, None);
        let text = render();
        assert!(text.contains("# TYPE apiserver_request counter"), "{text}");
        let series = "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"";
        let sizes = "component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"";
        for line in [
            format!("apiserver_request_total{{code=\"200\",{series}}} 2"),
            format!("apiserver_request_total{{code=\"404\",{series}}} 1"),
            format!("apiserver_request_duration_seconds_bucket{{{series},le=\"0.005\"}} 1"),
            format!("apiserver_request_duration_seconds_bucket{{{series},le=\"0.05\"}} 2"),
            format!("apiserver_request_duration_seconds_count{{{series}}} 3"),
            format!("apiserver_request_sli_duration_seconds_bucket{{{sizes},le=\"0.05\"}} 3"),
            format!("apiserver_request_sli_duration_seconds_count{{{sizes}}} 3"),
            format!("apiserver_response_sizes_bucket{{{sizes},le=\"1000\"}} 1"),
            format!("apiserver_response_sizes_bucket{{{sizes},le=\"1e+06\"}} 2"),
        ] {
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(
            !text.contains("apiserver_request_sli_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\""),
            "{text}"
        );
        assert_eq!(go_float(1e9), "1e+09");
        assert_eq!(go_float(0.005), "0.005");
    }
}
