//! kube's metrics on /metrics after a scripted sequence of requests: the
//! series names, types, labels (sorted as client_golang writes them) and
//! values dashboards and SLO tooling read, in Prometheus text (kube's
//! format) and in OpenMetrics for scrapers that ask for it.

mod common;
use common::*;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// The value of a sample written exactly as `series`, if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn request(verb: &str, scope: &str, code: u16, dry_run: &str) -> String {
    format!(
        "apiserver_request_total{{code=\"{code}\",component=\"apiserver\",dry_run=\"{dry_run}\",group=\"\",resource=\"configmaps\",scope=\"{scope}\",subresource=\"\",verb=\"{verb}\",version=\"v1\"}}"
    )
}

fn scrape(s: &Server) -> String {
    let (code, ct, text) = s.get_with("/metrics", "text/plain");
    assert_eq!(code, 200);
    assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
    text
}

#[test]
fn request_metrics_count_a_scripted_sequence_as_kube_does() {
    let s = Server::start(2);
    for i in 0..3 {
        assert_eq!(s.post(CMS, &configmap(&format!("m{i}"), json!({}))).0, 201);
    }
    assert_eq!(s.get(&format!("{CMS}/m0")).0, 200);
    assert_eq!(s.get(&format!("{CMS}/m0")).0, 200);
    assert_eq!(s.get(&format!("{CMS}/missing")).0, 404);
    assert_eq!(s.get(CMS).0, 200);
    assert_eq!(s.get("/api/v1/configmaps").0, 200);
    let (code, _) = s.post(&format!("{CMS}?dryRun=All"), &configmap("dry", json!({})));
    assert_eq!(code, 201);
    let (code, _) = s.apply_yaml(
        &format!("{CMS}/applied?fieldManager=t"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n",
    );
    assert_eq!(code, 201);
    let (_, list) = s.get(CMS);
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut w = s.watch(&format!(
        "{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=30"
    ));
    s.post(CMS, &configmap("seen", json!({})));
    w.next_event().unwrap();

    let text = scrape(&s);
    assert!(
        text.contains("# TYPE apiserver_request_total counter\n"),
        "{text}"
    );
    assert!(
        text.contains("# HELP apiserver_request_total [STABLE] "),
        "{text}"
    );
    for (verb, scope, code, dry_run, count) in [
        ("POST", "resource", 201, "", 4.0),
        ("POST", "resource", 201, "All", 1.0),
        ("GET", "resource", 200, "", 2.0),
        ("GET", "resource", 404, "", 1.0),
        ("LIST", "namespace", 200, "", 2.0),
        ("LIST", "cluster", 200, "", 1.0),
        ("APPLY", "resource", 201, "", 1.0),
    ] {
        assert_eq!(
            value(&text, &request(verb, scope, code, dry_run)),
            Some(count),
            "{verb} {scope} {code} {dry_run:?}: {text}"
        );
    }

    // Durations: every GET in a bucket, the +Inf bucket counting all.
    let get = "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"";
    assert!(text.contains("# TYPE apiserver_request_duration_seconds histogram\n"));
    assert_eq!(
        value(
            &text,
            &format!("apiserver_request_duration_seconds_bucket{{{get},le=\"60\"}}")
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            &format!("apiserver_request_duration_seconds_bucket{{{get},le=\"+Inf\"}}")
        ),
        Some(3.0)
    );
    assert_eq!(
        value(
            &text,
            &format!("apiserver_request_duration_seconds_count{{{get}}}")
        ),
        Some(3.0)
    );
    let sizes = "component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"";
    // kube's SLI latency (less queue and webhook time; no dry_run label,
    // dry runs left out), what clusterloader2's API responsiveness reads.
    assert!(text.contains("# TYPE apiserver_request_sli_duration_seconds histogram\n"));
    let sli = |verb: &str| {
        format!("apiserver_request_sli_duration_seconds_count{{component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"{verb}\",version=\"v1\"}}")
    };
    assert_eq!(value(&text, &sli("GET")), Some(3.0), "{text}");
    assert_eq!(
        value(&text, &sli("POST")),
        Some(4.0),
        "the dry run is not counted: {text}"
    );
    assert_eq!(
        value(
            &text,
            &format!("apiserver_request_sli_duration_seconds_bucket{{{sizes},le=\"60\"}}")
        ),
        Some(3.0),
        "{text}"
    );
    // Response sizes, for reads only (no dry_run label).
    assert_eq!(
        value(
            &text,
            &format!("apiserver_response_sizes_bucket{{{sizes},le=\"1000\"}}")
        ),
        Some(3.0),
        "{text}"
    );
    assert!(!text.contains("apiserver_response_sizes_bucket{component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"POST\""));

    // The open watch is long-running; its events are counted.
    let watch = "component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"";
    assert_eq!(
        value(&text, &format!("apiserver_longrunning_requests{{{watch}}}")),
        Some(1.0),
        "{text}"
    );
    let events = "group=\"\",resource=\"configmaps\",version=\"v1\"";
    assert!(
        value(&text, &format!("apiserver_watch_events_total{{{events}}}")).unwrap() >= 1.0,
        "{text}"
    );
    assert!(
        value(
            &text,
            &format!("apiserver_watch_events_sizes_count{{{events}}}")
        )
        .unwrap()
            >= 1.0
    );
    assert!(text.contains("# TYPE apiserver_watch_events_sizes histogram\n"));
    // Stored objects per resource (plural.group).
    assert!(
        value(&text, "apiserver_storage_objects{resource=\"configmaps\"}").unwrap() >= 5.0,
        "{text}"
    );
    assert!(value(
        &text,
        "apiserver_storage_objects{resource=\"deployments.apps\"}"
    )
    .is_some());
    assert_eq!(value(&text, "apiserver_audit_event_total"), Some(0.0));

    // When the watch ends it is no longer counted, and it is recorded.
    drop(w);
    eventually(10, "the watch to be counted as ended", || {
        let text = scrape(&s);
        (value(&text, &format!("apiserver_longrunning_requests{{{watch}}}")) == Some(0.0))
            .then_some(())
    });
    let text = scrape(&s);
    let finished = request("WATCH", "namespace", 200, "");
    assert_eq!(value(&text, &finished), Some(1.0), "{text}");
    // Health checks: the path as subresource, no component.
    s.get_with("/readyz", "*/*");
    let text = scrape(&s);
    assert!(text.contains("apiserver_request_total{code=\"200\",component=\"\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"/readyz\",verb=\"GET\",version=\"\"}"), "{text}");
}

#[test]
fn openmetrics_for_scrapers_that_ask_for_it() {
    let s = Server::start(1);
    s.post(CMS, &configmap("a", json!({})));
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let (code, ct, text) = s.get_with("/metrics", prometheus);
    assert_eq!(code, 200);
    assert!(
        ct.starts_with("application/openmetrics-text; version=1.0.0"),
        "{ct}"
    );
    assert!(
        text.contains("# TYPE apiserver_request counter\n"),
        "{text}"
    );
    assert!(
        text.contains("apiserver_request_total{code=\"201\","),
        "{text}"
    );
    assert!(text.trim_end().ends_with("# EOF"));
    let plain = scrape(&s);
    assert!(!plain.contains("# EOF"));
    assert!(!plain.contains("_created"));
}
