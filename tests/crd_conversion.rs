//! CRD conversion through a webhook (strategy `Webhook`): a test webhook
//! converts Gadgets between v1 (`spec.colour`, stored) and v2
//! (`spec.color`). Every served version is readable, writable and
//! watchable through it, lists convert in one call, the webhook is found
//! by URL or through a Service's EndpointSlices and verified with its
//! caBundle, and every failure (refusal, bad answer, unreachable, wrong
//! certificate, too slow) is a clear 500 naming the webhook.

mod common;
use common::webhook::{Handler, Webhook};
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com";
const V1: &str = "/apis/example.com/v1/namespaces/default/gadgets";
const V2: &str = "/apis/example.com/v2/namespaces/default/gadgets";

/// Renames the colour field between the versions; refuses objects
/// labelled `convert=refuse`, answers nonsense for `convert=garble`, and
/// takes its time on the `/slow` path.
fn converter() -> Arc<Handler> {
    Arc::new(|path: &str, review: Value| {
        if path == "/slow" {
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
        let req = &review["request"];
        let desired = req["desiredAPIVersion"].as_str().unwrap().to_string();
        let mut out = Vec::new();
        for o in req["objects"].as_array().unwrap() {
            let mut o = o.clone();
            match o["metadata"]["labels"]["convert"].as_str() {
                Some("refuse") => {
                    return json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                        "response": {"uid": req["uid"], "result": {"status": "Failure",
                            "message": "gadgets labelled refuse do not convert"}}});
                }
                Some("garble") => o["metadata"]["name"] = json!("someone-else"),
                _ => {}
            }
            let spec = o["spec"].as_object_mut().unwrap();
            let (from, to) = if desired.ends_with("/v2") {
                ("colour", "color")
            } else {
                ("color", "colour")
            };
            if let Some(v) = spec.remove(from) {
                spec.insert(to.into(), v);
            }
            o["apiVersion"] = json!(desired);
            o["metadata"]["labels"]["converted-to"] = json!(desired.replace('/', "."));
            out.push(o);
        }
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": req["uid"], "result": {"status": "Success"}, "convertedObjects": out}})
    })
}

fn gadget_crd(client_config: Value) -> Value {
    let version = |name: &str, field: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "string"}}}}}},
            "additionalPrinterColumns": [
                {"name": "Colour", "type": "string", "jsonPath": format!(".spec.{field}")}]})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [version("v1", "colour", true), version("v2", "color", false)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": ["v1"]}}}})
}

fn establish(s: &Server, crd: &Value) {
    let (code, body) = s.post(CRDS, crd);
    assert_eq!(code, 201, "{body}");
    eventually(5, "the CRD to be established and served", || {
        let (_, c) = s.get(CRD);
        let up = c["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
        (up && s.get(V2).0 == 200).then_some(())
    });
}

/// Points the CRD's webhook somewhere else and waits until it is used.
fn repoint(s: &Server, client_config: Value, probe: impl Fn(&Server) -> bool) {
    let (_, mut crd) = s.get(CRD);
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = client_config;
    let (code, body) = s.put(CRD, &crd);
    assert_eq!(code, 200, "{body}");
    eventually(5, "the new webhook configuration", || {
        probe(s).then_some(())
    });
}

fn gadget(version: &str, name: &str, field: &str, colour: &str) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Gadget",
        "metadata": {"name": name}, "spec": {field: colour}})
}

fn url(hook: &Webhook, path: &str) -> Value {
    json!({"url": format!("https://127.0.0.1:{}{path}", hook.port), "caBundle": hook.ca_bundle()})
}

#[test]
fn every_version_reads_writes_and_watches_through_the_webhook() {
    let hook = Webhook::start(&[], converter());
    let s = Server::start(2);
    establish(&s, &gadget_crd(url(&hook, "/convert")));

    // Written at v2, stored at v1 (converted by the webhook), read at both.
    let (code, created) = s.post(V2, &gadget("v2", "a", "color", "red"));
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "example.com/v2");
    assert_eq!(created["spec"], json!({"color": "red"}));
    let (_, stored) = s.get(&format!("{V1}/a"));
    assert_eq!(stored["spec"], json!({"colour": "red"}), "{stored}");
    assert_eq!(
        stored["metadata"]["labels"]["converted-to"],
        "example.com.v1"
    );
    let (_, read) = s.get(&format!("{V2}/a"));
    assert_eq!(read["spec"], json!({"color": "red"}));
    assert_eq!(
        read["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"],
        "the webhook's metadata changes beyond labels are not kept"
    );
    let first = hook.request_count();
    assert!(
        first >= 2,
        "the create and the read at v2 called the webhook"
    );
    let review = hook.requests.lock().unwrap()[0].1.clone();
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v1");
    assert!(!review["request"]["uid"].as_str().unwrap().is_empty());

    // Reads at the storage version never call it.
    s.get(&format!("{V1}/a"));
    assert_eq!(hook.request_count(), first);

    // A list converts all its objects in one call.
    for n in ["b", "c"] {
        assert_eq!(s.post(V1, &gadget("v1", n, "colour", "blue")).0, 201);
    }
    let before = hook.request_count();
    let (code, list) = s.get(V2);
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["apiVersion"], "example.com/v2");
    assert_eq!(names(&list), ["a", "b", "c"]);
    assert!(list["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["apiVersion"] == "example.com/v2" && i["spec"].get("color").is_some()));
    assert_eq!(hook.request_count(), before + 1, "one call for the list");

    // Patches and updates at v2 are made at v2 and stored at v1.
    let (code, patched) = s.patch(
        &format!("{V2}/b"),
        "application/merge-patch+json",
        &json!({"spec": {"color": "green"}}),
    );
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"color": "green"}));
    assert_eq!(
        s.get(&format!("{V1}/b")).1["spec"],
        json!({"colour": "green"})
    );
    let (_, mut c) = s.get(&format!("{V2}/c"));
    c["spec"]["color"] = json!("black");
    let (code, put) = s.put(&format!("{V2}/c"), &c);
    assert_eq!(code, 200, "{put}");
    assert_eq!(
        s.get(&format!("{V1}/c")).1["spec"],
        json!({"colour": "black"})
    );
    // Optimistic concurrency still holds at a converted version.
    let (code, stale) = s.put(&format!("{V2}/c"), &c);
    assert_eq!(code, 409, "{stale}");

    // Watched at v2: initial events and changes arrive converted.
    let mut watch = s.watch(&format!("{V2}?watch=true"));
    let initial = watch.until(|e| e["object"]["metadata"]["name"] == "c");
    assert!(initial
        .iter()
        .all(|e| e["object"]["apiVersion"] == "example.com/v2"));
    assert_eq!(
        s.patch(
            &format!("{V1}/a"),
            "application/merge-patch+json",
            &json!({"spec": {"colour": "white"}})
        )
        .0,
        200
    );
    let changed = watch.until(|e| e["type"] == "MODIFIED");
    let last = changed.last().unwrap();
    assert_eq!(last["object"]["spec"], json!({"color": "white"}), "{last}");

    // Watched as a Table at v2: rows come from the converted objects,
    // by v2's columns.
    let resp = ureq::get(&s.url(&format!("{V2}?watch=true")))
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .call()
        .unwrap();
    let mut rows = std::io::BufReader::new(resp.into_body().into_reader());
    let first: Value = {
        use std::io::BufRead;
        let mut line = String::new();
        rows.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    assert_eq!(first["object"]["kind"], "Table", "{first}");
    assert_eq!(first["object"]["columnDefinitions"][1]["name"], "Colour");
    let row = &first["object"]["rows"][0];
    assert_eq!(row["cells"][0], "a", "{first}");
    assert_eq!(row["cells"][1], "white", "{first}");

    // A deletion kept by a finalizer answers the object at v2.
    assert_eq!(
        s.patch(
            &format!("{V1}/b"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": ["example.com/keep"]}})
        )
        .0,
        200
    );
    let (code, kept) = s.delete(&format!("{V2}/b"));
    assert_eq!(code, 200, "{kept}");
    assert_eq!(kept["apiVersion"], "example.com/v2");
    assert_eq!(kept["spec"], json!({"color": "green"}));
    assert!(kept["metadata"]["deletionTimestamp"].is_string());

    // The webhook's connection is kept between calls.
    assert!(
        hook.connections.load(std::sync::atomic::Ordering::SeqCst) <= 3,
        "connections are reused: {} opened for {} calls",
        hook.connections.load(std::sync::atomic::Ordering::SeqCst),
        hook.request_count()
    );
}

#[test]
fn webhook_failures_are_clear_errors() {
    let hook = Webhook::start(&[], converter());
    let s = Server::start_with(2, &["--conversion-webhook-timeout", "1s"]);
    establish(&s, &gadget_crd(url(&hook, "/convert")));
    let mut refused = gadget("v1", "refused", "colour", "red");
    refused["metadata"]["labels"] = json!({"convert": "refuse"});
    assert_eq!(s.post(V1, &refused).0, 201);

    let (code, err) = s.get(&format!("{V2}/refused"));
    assert_eq!(code, 500, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains(
            "conversion webhook for example.com/v1, Kind=Gadget failed: gadgets labelled refuse do not convert"
        ),
        "{err}"
    );
    // The stored version still reads.
    assert_eq!(s.get(&format!("{V1}/refused")).0, 200);
    // A create that cannot be converted is not stored.
    let mut new = gadget("v2", "new", "color", "red");
    new["metadata"]["labels"] = json!({"convert": "refuse"});
    let (code, err) = s.post(V2, &new);
    assert_eq!(code, 500, "{err}");
    assert_eq!(s.get(&format!("{V1}/new")).0, 404);

    let mut garbled = gadget("v1", "garbled", "colour", "red");
    garbled["metadata"]["labels"] = json!({"convert": "garble"});
    assert_eq!(s.post(V1, &garbled).0, 201);
    let (code, err) = s.get(&format!("{V2}/garbled"));
    assert_eq!(code, 500, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains(
            "returned invalid converted object at index 0: must have the same name: garbled != someone-else"
        ),
        "{err}"
    );

    // Another CA than the webhook's: its certificate is not trusted.
    let other = Webhook::start(&[], converter());
    let mut wrong_ca = url(&hook, "/convert");
    wrong_ca["caBundle"] = json!(other.ca_bundle());
    repoint(&s, wrong_ca, |s| {
        let (code, e) = s.get(&format!("{V2}/garbled"));
        code == 500 && e["message"].as_str().unwrap().contains("certificate")
    });
    let (_, err) = s.get(&format!("{V2}/garbled"));
    assert!(
        err["message"].as_str().unwrap().contains(&format!(
            "failed: Post \"https://127.0.0.1:{}/convert\"",
            hook.port
        )),
        "{err}"
    );

    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = closed.local_addr().unwrap().port();
    drop(closed);
    repoint(
        &s,
        json!({"url": format!("https://127.0.0.1:{dead}/convert"), "caBundle": hook.ca_bundle()}),
        |s| {
            let (_, e) = s.get(&format!("{V2}/garbled"));
            e["message"].as_str().unwrap().contains(&dead.to_string())
        },
    );

    // Too slow: the request fails at the timeout, not when the webhook
    // finally answers.
    repoint(&s, url(&hook, "/slow"), |s| {
        let (_, e) = s.get(&format!("{V2}/garbled"));
        e["message"].as_str().unwrap().contains("/slow")
    });
    let started = std::time::Instant::now();
    let (code, err) = s.get(&format!("{V2}/garbled"));
    assert_eq!(code, 500, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("deadline exceeded"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_millis(2900));
}

#[test]
fn a_webhook_is_found_through_its_services_endpoint_slices() {
    let hook = Webhook::start(&["conv.default.svc"], converter());
    let s = Server::start(2);
    let (code, svc) = s.post(
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.port}]}}),
    );
    assert_eq!(code, 201, "{svc}");
    let service_ref = json!({"service": {"namespace": "default", "name": "conv", "path": "/convert"},
        "caBundle": hook.ca_bundle()});
    establish(&s, &gadget_crd(service_ref));
    assert_eq!(s.post(V1, &gadget("v1", "a", "colour", "red")).0, 201);

    // No endpoints yet.
    let (code, err) = s.get(&format!("{V2}/a"));
    assert_eq!(code, 500, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("Post \"https://conv.default.svc:443/convert\": no endpoints available for service \"conv\""),
        "{err}"
    );
    let (code, slice) = s.post(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "conv-1", "labels": {"kubernetes.io/service-name": "conv"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": hook.port, "protocol": "TCP"}]}),
    );
    assert_eq!(code, 201, "{slice}");
    let (code, read) = s.get(&format!("{V2}/a"));
    assert_eq!(code, 200, "{read}");
    assert_eq!(read["spec"], json!({"color": "red"}));
    assert!(hook
        .requests
        .lock()
        .unwrap()
        .iter()
        .any(|(path, _)| path == "/convert"));
}

#[test]
fn a_write_whose_object_changes_during_conversion_starts_again() {
    // The webhook, converting a `race` Gadget back to v1 for the first
    // time, writes to that same object itself: the update converted
    // against the old object must not overwrite the change.
    let base: Arc<std::sync::Mutex<String>> = Arc::default();
    let raced = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let inner = converter();
    let (b, r) = (base.clone(), raced.clone());
    let hook = Webhook::start(
        &[],
        Arc::new(move |path: &str, review: Value| {
            let to_v1 = review["request"]["desiredAPIVersion"] == "example.com/v1";
            let race = review["request"]["objects"][0]["metadata"]["name"] == "race";
            if to_v1 && race && !r.swap(true, std::sync::atomic::Ordering::SeqCst) {
                let url = format!("{}{V1}/race", b.lock().unwrap());
                let code = ureq::agent()
                    .patch(url)
                    .header("Content-Type", "application/merge-patch+json")
                    .send(r#"{"metadata":{"annotations":{"meanwhile":"yes"}}}"#)
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                assert_eq!(code, 200);
            }
            inner(path, review)
        }),
    );
    let s = Server::start(2);
    *base.lock().unwrap() = s.base.clone();
    establish(&s, &gadget_crd(url(&hook, "/convert")));
    assert_eq!(s.post(V1, &gadget("v1", "race", "colour", "red")).0, 201);
    let (code, patched) = s.patch(
        &format!("{V2}/race"),
        "application/merge-patch+json",
        &json!({"spec": {"color": "blue"}}),
    );
    assert_eq!(code, 200, "{patched}");
    assert!(raced.load(std::sync::atomic::Ordering::SeqCst));
    let (_, stored) = s.get(&format!("{V1}/race"));
    assert_eq!(stored["spec"], json!({"colour": "blue"}), "{stored}");
    assert_eq!(
        stored["metadata"]["annotations"]["meanwhile"], "yes",
        "the change made during the conversion is kept: {stored}"
    );
}
