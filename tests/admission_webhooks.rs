//! Admission webhooks (Mutating/ValidatingWebhookConfiguration v1)
//! against a real HTTPS webhook server started by the test: the
//! AdmissionReview kube sends, refusals, JSONPatch mutations (defaulted
//! again afterwards, reinvoked when a later webhook changes the object),
//! selectors, match conditions, dry run and side effects, failure
//! policies, timeouts, bad answers, and the configuration kinds webhooks
//! never see.

mod common;
use common::webhook::{Handler, Webhook};
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;

const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An AdmissionReview v1 answer to `review`.
fn answer(review: &Value, response: Value) -> Value {
    let mut response = response;
    response["uid"] = review["request"]["uid"].clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// A JSONPatch that sets label `key` to `value` on the review's object.
fn label_patch(review: &Value, key: &str, value: &str) -> Value {
    let labels = &review["request"]["object"]["metadata"]["labels"];
    let ops = if labels.is_object() {
        json!([{"op": "add", "path": format!("/metadata/labels/{}", key.replace('/', "~1")), "value": value}])
    } else {
        json!([{"op": "add", "path": "/metadata/labels", "value": {key: value}}])
    };
    json!({"allowed": true, "patchType": "JSONPatch", "patch": b64(ops.to_string().as_bytes())})
}

/// The test webhook: one path per behaviour.
fn handler() -> Arc<Handler> {
    Arc::new(|path: &str, review: Value| {
        let path = path.split('?').next().unwrap_or("");
        let name = review["request"]["name"].as_str().unwrap_or("").to_string();
        let labels = review["request"]["object"]["metadata"]["labels"].clone();
        match path {
            "/deny" if name.starts_with("deny-") => answer(
                &review,
                json!({"allowed": false, "warnings": ["refused by the validating webhook"],
                    "status": {"code": 403, "reason": "Forbidden",
                    "message": "names starting deny- are refused"}}),
            ),
            "/deny" => answer(
                &review,
                json!({"allowed": true, "warnings": ["seen by the validating webhook"],
                    "auditAnnotations": {"checked": "yes"}}),
            ),
            "/mutate" => {
                // A label, an annotation, and a container port with no
                // protocol (kube defaults it to TCP after the patch).
                let obj = &review["request"]["object"];
                let mut ops = vec![];
                if !obj["metadata"]["labels"].is_object() {
                    ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
                }
                ops.push(json!({"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}));
                if !obj["metadata"]["annotations"].is_object() {
                    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
                }
                ops.push(json!({"op": "add", "path": "/metadata/annotations/example.com~1webhook", "value": "seen"}));
                if obj["kind"] == "Pod" {
                    ops.push(json!({"op": "add", "path": "/spec/containers/0/ports",
                        "value": [{"containerPort": 8080}]}));
                }
                answer(
                    &review,
                    json!({"allowed": true, "patchType": "JSONPatch",
                        "patch": b64(Value::Array(ops).to_string().as_bytes())}),
                )
            }
            // Reinvocation: `first` records whether it saw `second`'s
            // label; `second` adds its label once.
            "/first" => {
                let saw = if labels["second"] == "yes" {
                    "yes"
                } else {
                    "no"
                };
                if labels["first-saw-second"] == saw {
                    answer(&review, json!({"allowed": true}))
                } else {
                    answer(&review, label_patch(&review, "first-saw-second", saw))
                }
            }
            "/second" if labels["second"] == "yes" => answer(&review, json!({"allowed": true})),
            "/second" => answer(&review, label_patch(&review, "second", "yes")),
            "/slow" => {
                std::thread::sleep(std::time::Duration::from_secs(3));
                answer(&review, json!({"allowed": true}))
            }
            "/wrong-uid" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": "not-the-request", "allowed": true}}),
            "/bad-patch" => answer(
                &review,
                json!({"allowed": true, "patchType": "JSONPatch",
                    "patch": b64(br#"[{"op": "remove", "path": "/spec/nothing"}]"#)}),
            ),
            _ => answer(&review, json!({"allowed": true})),
        }
    })
}

/// One webhook entry calling `path` on the test webhook.
fn hook(w: &Webhook, name: &str, path: &str, resources: &[&str], extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": {"url": format!("https://127.0.0.1:{}{path}", w.port), "caBundle": w.ca_bundle()},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": resources}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    h
}

fn configure(s: &Server, collection: &str, name: &str, hooks: Vec<Value>) {
    let kind = if collection == VALIDATING {
        "ValidatingWebhookConfiguration"
    } else {
        "MutatingWebhookConfiguration"
    };
    let (code, body) = s.post(
        collection,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks}),
    );
    assert_eq!(code, 201, "{body}");
}

fn cm_path(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

/// Creates probe ConfigMaps in `ns` until `done` says the webhooks are in
/// effect (informers pick configurations up asynchronously, as kube's).
fn until_in_effect(s: &Server, ns: &str, done: impl Fn(u16, &Value) -> bool) {
    let mut n = 0;
    eventually(10, "webhook configuration in effect", || {
        n += 1;
        let (code, body) = s.post(&cm_path(ns), &configmap(&format!("probe-{n}"), json!({})));
        done(code, &body).then_some(())
    });
}

fn requests_for(w: &Webhook, name: &str) -> Vec<(String, Value)> {
    w.requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["request"]["name"] == name)
        .cloned()
        .collect()
}

#[test]
fn validating_webhook_refuses_and_sees_kubes_review() {
    let s = Server::start(2);
    let w = Webhook::start(&[], handler());
    let ns = namespace(&s, "hooked");
    let (code, body) = s.patch(
        &format!("/api/v1/namespaces/{ns}"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"webhooks": "on"}}}),
    );
    assert_eq!(code, 200, "{body}");
    let quiet = namespace(&s, "quiet");
    configure(
        &s,
        VALIDATING,
        "deny-names",
        vec![hook(
            &w,
            "deny.example.com",
            "/deny",
            &["configmaps"],
            json!({"namespaceSelector": {"matchLabels": {"webhooks": "on"}}}),
        )],
    );
    until_in_effect(&s, &ns, |_, _| w.request_count() > 0);

    // Refused with the webhook's Status, its message prefixed, and its
    // warnings.
    let (code, warnings, body) = s.send_warned(
        "POST",
        &cm_path(&ns),
        "application/json",
        configmap("deny-me", json!({})).to_string().as_bytes(),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(warnings, ["refused by the validating webhook"]);
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "admission webhook \"deny.example.com\" denied the request: names starting deny- are refused"
    );
    assert_eq!(s.get(&format!("{}/deny-me", cm_path(&ns))).0, 404);

    // Admitted, with the webhook's warning passed on.
    let (code, warnings, body) = s.send_warned(
        "POST",
        &cm_path(&ns),
        "application/json",
        configmap("fine", json!({})).to_string().as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings.contains(&"seen by the validating webhook".to_string()),
        "{warnings:?}"
    );
    let (path, review) = requests_for(&w, "fine").pop().expect("webhook saw fine");
    assert_eq!(path, "/deny?timeout=10s");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    let r = &review["request"];
    assert!(r["uid"].as_str().is_some_and(|u| !u.is_empty()), "{r}");
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["requestResource"], r["resource"]);
    assert_eq!(r["namespace"], ns);
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert_eq!(r["object"]["metadata"]["name"], "fine");
    assert_eq!(r["oldObject"], Value::Null);
    assert!(
        r["userInfo"]["username"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "{r}"
    );

    // An update is sent with the old object.
    let (code, body) = s.put(
        &format!("{}/fine", cm_path(&ns)),
        &json!({"metadata": {"name": "fine", "namespace": ns}, "data": {"k2": "v2"}}),
    );
    assert_eq!(code, 200, "{body}");
    let (_, review) = requests_for(&w, "fine").pop().unwrap();
    assert_eq!(review["request"]["operation"], "UPDATE");
    assert_eq!(review["request"]["options"]["kind"], "UpdateOptions");
    assert_eq!(review["request"]["object"]["data"]["k2"], "v2");
    assert_eq!(review["request"]["oldObject"]["metadata"]["name"], "fine");
    assert!(
        review["request"]["oldObject"]["data"]["k2"].is_null(),
        "{review}"
    );

    // Dry run reaches a webhook without side effects, flagged as such.
    let (code, _) = s.post(
        &format!("{}?dryRun=All", cm_path(&ns)),
        &configmap("deny-dry", json!({})),
    );
    assert_eq!(code, 403);
    let (_, review) = requests_for(&w, "deny-dry").pop().unwrap();
    assert_eq!(review["request"]["dryRun"], true);

    // Outside the namespace selector the webhook is not called.
    let before = w.request_count();
    let (code, body) = s.post(&cm_path(&quiet), &configmap("deny-quiet", json!({})));
    assert_eq!(code, 201, "{body}");
    // Nor for a kind its rules do not name.
    let (code, _) = s.post(
        &format!("/api/v1/namespaces/{ns}/secrets"),
        &json!({"metadata": {"name": "deny-secret"}}),
    );
    assert_eq!(code, 201);
    assert_eq!(w.request_count(), before);

    // Nothing is sent for a create NamespaceLifecycle refuses first.
    let (code, _) = s.post(&cm_path("nowhere"), &configmap("deny-nowhere", json!({})));
    assert_eq!(code, 404);
    assert_eq!(w.request_count(), before);
}

#[test]
fn mutating_webhooks_patch_and_are_reinvoked() {
    let s = Server::start(2);
    let w = Webhook::start(&[], handler());
    let ns = namespace(&s, "mutated");
    configure(
        &s,
        MUTATING,
        "a-mutate",
        vec![hook(
            &w,
            "mutate.example.com",
            "/mutate",
            &["configmaps", "pods"],
            json!({}),
        )],
    );
    until_in_effect(&s, &ns, |code, body| {
        code == 201 && body["metadata"]["labels"]["mutated"] == "yes"
    });
    let (code, cm) = s.post(&cm_path(&ns), &configmap("patched", json!({"keep": "me"})));
    assert_eq!(code, 201, "{cm}");
    assert_eq!(
        cm["metadata"]["labels"],
        json!({"keep": "me", "mutated": "yes"})
    );
    assert_eq!(cm["metadata"]["annotations"]["example.com/webhook"], "seen");
    let (_, stored) = s.get(&format!("{}/patched", cm_path(&ns)));
    assert_eq!(stored["metadata"]["labels"]["mutated"], "yes");

    // The patched pod is defaulted again: the port the webhook added
    // gets its protocol.
    let (code, pod) = s.post(
        &format!("/api/v1/namespaces/{ns}/pods"),
        &json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(code, 201, "{pod}");
    assert_eq!(
        pod["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 8080, "protocol": "TCP"}])
    );
    // The webhook saw the pod already defaulted.
    let (_, review) = requests_for(&w, "p").pop().unwrap();
    assert_eq!(
        review["request"]["object"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );

    // Reinvocation: `first` (IfNeeded) runs before `second`, whose
    // change makes it run again, and then it sees `second`'s label.
    let ns2 = namespace(&s, "reinvoked");
    let only =
        |n: &str| json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": n}}});
    let mut first = hook(
        &w,
        "first.example.com",
        "/first",
        &["configmaps"],
        only(&ns2),
    );
    first["reinvocationPolicy"] = json!("IfNeeded");
    configure(&s, MUTATING, "b-first", vec![first]);
    configure(
        &s,
        MUTATING,
        "c-second",
        vec![hook(
            &w,
            "second.example.com",
            "/second",
            &["configmaps"],
            only(&ns2),
        )],
    );
    until_in_effect(&s, &ns2, |code, body| {
        code == 201 && body["metadata"]["labels"]["second"] == "yes"
    });
    let (code, cm) = s.post(&cm_path(&ns2), &configmap("twice", json!({})));
    assert_eq!(code, 201, "{cm}");
    assert_eq!(cm["metadata"]["labels"]["second"], "yes");
    assert_eq!(cm["metadata"]["labels"]["first-saw-second"], "yes", "{cm}");
    let calls: Vec<String> = requests_for(&w, "twice")
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let firsts = calls.iter().filter(|p| p.starts_with("/first")).count();
    let seconds = calls.iter().filter(|p| p.starts_with("/second")).count();
    assert_eq!((firsts, seconds), (2, 1), "{calls:?}");

    // Webhooks never see the configuration kinds: a mutating webhook
    // over everything leaves a webhook configuration alone.
    let mut all = hook(&w, "all.example.com", "/mutate", &["*"], json!({}));
    all["rules"] = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]);
    configure(&s, MUTATING, "d-everything", vec![all]);
    let (code, got) = s.get(&format!("{MUTATING}/d-everything"));
    assert_eq!(code, 200);
    assert!(got["metadata"]["labels"].is_null(), "{got}");
}

#[test]
fn failures_follow_the_failure_policy() {
    let s = Server::start(2);
    let w = Webhook::start(&[], handler());
    let ns = namespace(&s, "failing");
    // A port nothing listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let named = |n: &str| json!({"objectSelector": {"matchLabels": {"case": n}}});
    let mut closed = hook(
        &w,
        "closed.example.com",
        "/",
        &["configmaps"],
        named("closed"),
    );
    closed["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{dead_port}/"));
    let mut open = hook(&w, "open.example.com", "/", &["configmaps"], named("open"));
    open["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{dead_port}/"));
    open["failurePolicy"] = json!("Ignore");
    let mut slow = hook(
        &w,
        "slow.example.com",
        "/slow",
        &["configmaps"],
        named("slow"),
    );
    slow["timeoutSeconds"] = json!(1);
    let uid = hook(
        &w,
        "uid.example.com",
        "/wrong-uid",
        &["configmaps"],
        named("uid"),
    );
    let mut effects = hook(
        &w,
        "effects.example.com",
        "/",
        &["configmaps"],
        named("effects"),
    );
    effects["sideEffects"] = json!("NoneOnDryRun");
    let mut cond = hook(
        &w,
        "cond.example.com",
        "/deny",
        &["configmaps"],
        named("cond"),
    );
    cond["matchConditions"] = json!([
        {"name": "not-skipped", "expression": "object.metadata.name != 'deny-skip'"},
        {"name": "has-data", "expression": "object.data.k == 'v'"}]);
    configure(
        &s,
        VALIDATING,
        "failing",
        vec![closed, open, slow, uid, effects, cond],
    );
    let labelled = |name: &str, case: &str| json!({"metadata": {"name": name, "labels": {"case": case}}, "data": {"k": "v"}});
    until_in_effect(&s, &ns, |_, _| {
        s.post(&cm_path(&ns), &labelled("closed-probe", "closed")).0 == 500
    });

    // Fail: 500 naming the webhook and the failed call.
    let (code, body) = s.post(&cm_path(&ns), &labelled("c1", "closed"));
    assert_eq!(code, 500, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Internal error occurred: failed calling webhook \"closed.example.com\": failed to call webhook: Post \"https://127.0.0.1:"),
        "{msg}"
    );
    // Ignore: admitted.
    assert_eq!(s.post(&cm_path(&ns), &labelled("o1", "open")).0, 201);
    // Too slow: the timeout fails the call.
    let (code, body) = s.post(&cm_path(&ns), &labelled("s1", "slow"));
    assert_eq!(code, 500, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("slow.example.com"),
        "{body}"
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("deadline exceeded"),
        "{body}"
    );
    // An answer for another request is refused.
    let (code, body) = s.post(&cm_path(&ns), &labelled("u1", "uid"));
    assert_eq!(code, 500, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("received invalid webhook response: expected response.uid="),
        "{body}"
    );
    // Dry run reaches a NoneOnDryRun webhook.
    let (code, body) = s.post(
        &format!("{}?dryRun=All", cm_path(&ns)),
        &labelled("e1", "effects"),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(requests_for(&w, "e1").len(), 1);
    // Match conditions: false skips the webhook; an evaluation error
    // (no key) under Fail refuses with 403.
    let (code, body) = s.post(&cm_path(&ns), &labelled("deny-skip", "cond"));
    assert_eq!(code, 201, "{body}");
    assert!(requests_for(&w, "deny-skip").is_empty());
    let (code, body) = s.post(&cm_path(&ns), &labelled("deny-cond", "cond"));
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("denied the request"),
        "{body}"
    );
    let (code, body) = s.post(
        &cm_path(&ns),
        &json!({"metadata": {"name": "no-data", "labels": {"case": "cond"}}}),
    );
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("no such key"),
        "{body}"
    );

    // A broken webhook can always be removed: its configuration is exempt.
    let (code, body) = s.delete(&format!("{VALIDATING}/failing"));
    assert_eq!(code, 200, "{body}");
    eventually(10, "webhooks gone", || {
        (s.post(
            &cm_path(&ns),
            &labelled(&format!("after-{}", w.request_count()), "closed"),
        )
        .0 == 201)
            .then_some(())
    });
}

#[test]
fn a_patch_that_does_not_apply_is_an_internal_error() {
    let s = Server::start(1);
    let w = Webhook::start(&[], handler());
    let ns = namespace(&s, "badpatch");
    configure(
        &s,
        MUTATING,
        "bad-patch",
        vec![hook(
            &w,
            "bad.example.com",
            "/bad-patch",
            &["configmaps"],
            json!({"failurePolicy": "Ignore"}),
        )],
    );
    until_in_effect(&s, &ns, |code, _| code == 500);
    let (code, body) = s.post(&cm_path(&ns), &configmap("x", json!({})));
    assert_eq!(code, 500, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Internal error occurred:"),
        "{body}"
    );
}

#[test]
fn configurations_are_validated_and_services_resolve() {
    let s = Server::start(2);
    // kube's validation of the configuration itself: 422 with field paths.
    let (code, body) = s.post(
        VALIDATING,
        &json!({"metadata": {"name": "bad"}, "webhooks": [{
            "name": "a.b", "clientConfig": {"url": "http://127.0.0.1/x"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "admissionReviewVersions": ["v1"]}]}),
    );
    assert_eq!(code, 422, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid:"
        ),
        "{msg}"
    );
    for part in [
        "webhooks[0].name: Invalid value: \"a.b\": should be a domain with at least three segments separated by dots",
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme",
    ] {
        assert!(msg.contains(part), "{part} not in {msg}");
    }

    // A webhook behind a Service: found through its EndpointSlices, its
    // certificate checked for the Service's DNS name.
    let w = Webhook::start(&["hook.webhooks.svc"], handler());
    let ns = namespace(&s, "webhooks");
    let (code, svc) = s.post(
        &format!("/api/v1/namespaces/{ns}/services"),
        &json!({"metadata": {"name": "hook"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": w.port}]}}),
    );
    assert_eq!(code, 201, "{svc}");
    let (code, slice) = s.post(
        &format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"),
        &json!({"metadata": {"name": "hook-1", "labels": {"kubernetes.io/service-name": "hook"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": w.port, "protocol": "TCP"}]}),
    );
    assert_eq!(code, 201, "{slice}");
    let mut h = hook(&w, "svc.example.com", "/deny", &["configmaps"], json!({}));
    h["clientConfig"] = json!({"service": {"namespace": ns, "name": "hook", "path": "/deny"},
        "caBundle": w.ca_bundle()});
    configure(&s, VALIDATING, "by-service", vec![h]);
    until_in_effect(&s, &ns, |_, _| w.request_count() > 0);
    let (code, body) = s.post(&cm_path(&ns), &configmap("deny-svc", json!({})));
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("svc.example.com"),
        "{body}"
    );
    assert!(w
        .requests
        .lock()
        .unwrap()
        .iter()
        .all(|(p, _)| p == "/deny?timeout=10s"));
}

#[test]
fn deletions_reach_webhooks_with_the_old_object() {
    let s = Server::start(1);
    let w = Webhook::start(&[], handler());
    let ns = namespace(&s, "deleting");
    for name in ["deny-gone", "fine-gone"] {
        assert_eq!(s.post(&cm_path(&ns), &configmap(name, json!({}))).0, 201);
    }
    let mut h = hook(
        &w,
        "deletes.example.com",
        "/deny",
        &["configmaps"],
        json!({}),
    );
    h["rules"][0]["operations"] = json!(["DELETE"]);
    configure(&s, VALIDATING, "deletes", vec![h]);
    let (code, body) = eventually(10, "the delete webhook in effect", || {
        let r = s.delete(&format!("{}/deny-gone", cm_path(&ns)));
        (r.0 != 200).then_some(r)
    });
    assert_eq!(code, 403, "{body}");
    let (_, review) = requests_for(&w, "deny-gone").pop().unwrap();
    assert_eq!(review["request"]["operation"], "DELETE");
    assert_eq!(review["request"]["object"], Value::Null);
    assert_eq!(
        review["request"]["oldObject"]["metadata"]["name"],
        "deny-gone"
    );
    assert_eq!(review["request"]["options"]["kind"], "DeleteOptions");
    // An admitted deletion passes the webhook's warning on.
    let (code, warnings, _) = s.send_warned(
        "DELETE",
        &format!("{}/fine-gone", cm_path(&ns)),
        "application/json",
        b"",
    );
    assert_eq!(code, 200);
    assert_eq!(warnings, ["seen by the validating webhook"]);
}

/// The value of the sample `series` (name and labels as rendered) on
/// /metrics, if present.
fn sample(s: &Server, series: &str) -> Option<f64> {
    let (code, _, text) = s.get_with("/metrics", "text/plain");
    assert_eq!(code, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_failing_webhook_trips_its_circuit_and_recovers() {
    // One executor: one circuit.
    let s = Server::start(1);
    let broken = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = broken.clone();
    let w = Webhook::start(
        &[],
        Arc::new(move |_: &str, review: Value| {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                // An answer for another request: no valid answer.
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": {"uid": "someone-else", "allowed": true}})
            } else {
                answer(&review, json!({"allowed": true}))
            }
        }),
    );
    let ns = namespace(&s, "tripping");
    configure(
        &s,
        VALIDATING,
        "flaky",
        vec![hook(
            &w,
            "flaky.example.com",
            "/",
            &["configmaps"],
            json!({"objectSelector": {"matchLabels": {"case": "flaky"}}}),
        )],
    );
    let mut n = 0;
    let mut post = || {
        n += 1;
        s.post(
            &cm_path(&ns),
            &json!({"metadata": {"name": format!("cm-{n}"), "labels": {"case": "flaky"}}}),
        )
    };
    // The first refusal is the first failed call.
    eventually(10, "the webhook in effect", || {
        (post().0 == 500).then_some(())
    });
    for _ in 2..=5 {
        let (code, body) = post();
        assert_eq!(code, 500, "{body}");
        let msg = body["message"].as_str().unwrap();
        assert!(msg.contains("received invalid webhook response"), "{msg}");
        assert!(!msg.contains("not called"), "{msg}");
    }
    // Five in a row: the next write fails at once, naming the cause.
    let (code, body) = post();
    assert_eq!(code, 500, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Internal error occurred: failed calling webhook \"flaky.example.com\": received invalid webhook response"),
        "{msg}"
    );
    assert!(
        msg.contains("(not called: 5 consecutive calls failed; next attempt in"),
        "{msg}"
    );
    let hook_labels = r#"name="flaky.example.com",type="validating""#;
    assert_eq!(
        sample(
            &s,
            &format!("kubeshard_admission_webhook_circuit_open{{{hook_labels}}}")
        ),
        Some(1.0)
    );
    // Mended: after the open second one probe goes through and closes it.
    broken.store(false, std::sync::atomic::Ordering::SeqCst);
    eventually(10, "the circuit closed again", || {
        (post().0 == 201).then_some(())
    });
    assert_eq!(post().0, 201);

    let get = |series: &str| sample(&s, series).unwrap_or_else(|| panic!("no {series}"));
    assert_eq!(
        get(&format!(
            "kubeshard_admission_webhook_circuit_open{{{hook_labels}}}"
        )),
        0.0
    );
    assert_eq!(
        get(&format!(
            "kubeshard_admission_webhook_circuit_trips_total{{{hook_labels}}}"
        )),
        1.0
    );
    assert!(
        get(&format!(
            "kubeshard_admission_webhook_short_circuited_total{{{hook_labels}}}"
        )) >= 1.0
    );
    let calls = |code: u16, rejected: bool| {
        format!(
            r#"apiserver_admission_webhook_request_total{{{hook_labels},operation="CREATE",code="{code}",rejected="{rejected}"}}"#
        )
    };
    assert_eq!(get(&calls(0, true)), 5.0);
    assert!(get(&calls(200, false)) >= 2.0);
    assert!(
        get(&format!(
            r#"apiserver_admission_webhook_rejection_count_total{{{hook_labels},operation="CREATE",error_type="calling_webhook_error",rejection_code="0"}}"#
        )) >= 6.0
    );
    assert!(
        get(&format!(
            r#"apiserver_admission_webhook_admission_duration_seconds_count{{{hook_labels},operation="CREATE",rejected="false"}}"#
        )) >= 2.0
    );
}

#[test]
fn scale_writes_reach_webhooks_as_scales() {
    let s = Server::start(2);
    let w = Webhook::start(
        &[],
        Arc::new(|path: &str, review: Value| {
            let replicas = review["request"]["object"]["spec"]["replicas"]
                .as_i64()
                .unwrap_or(0);
            match path.split('?').next().unwrap_or("") {
                // Caps the replicas a Scale asks for at 3.
                "/cap" if replicas > 3 => answer(
                    &review,
                    json!({"allowed": true, "patchType": "JSONPatch", "patch": b64(
                        json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]).to_string().as_bytes())}),
                ),
                "/no-two" if replicas == 2 => answer(
                    &review,
                    json!({"allowed": false, "status": {"code": 403, "message": "two replicas are refused"}}),
                ),
                _ => answer(&review, json!({"allowed": true})),
            }
        }),
    );
    let ns = namespace(&s, "scaled");
    let scale_rule = json!({"rules": [{"operations": ["UPDATE"], "apiGroups": ["apps"],
        "apiVersions": ["v1"], "resources": ["deployments/scale"]}]});
    configure(
        &s,
        MUTATING,
        "cap",
        vec![hook(&w, "cap.example.com", "/cap", &[], scale_rule.clone())],
    );
    configure(
        &s,
        VALIDATING,
        "no-two",
        vec![hook(&w, "no-two.example.com", "/no-two", &[], scale_rule)],
    );
    let d = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let (code, body) = s.post(
        &d,
        &json!({"metadata": {"name": "web"}, "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    assert_eq!(code, 201, "{body}");
    let scale = format!("{d}/web/scale");
    let patch = |n: i64| {
        s.patch(
            &scale,
            "application/merge-patch+json",
            &json!({"spec": {"replicas": n}}),
        )
    };
    let (code, body) = eventually(10, "the webhooks in effect", || {
        let (code, body) = patch(2);
        (code != 200).then_some((code, body))
    });
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("two replicas are refused"),
        "{body}"
    );
    let (code, body) = patch(5);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "Scale");
    assert_eq!(
        body["spec"]["replicas"], 3,
        "capped by the mutating webhook"
    );
    let (_, stored) = s.get(&format!("{d}/web"));
    assert_eq!(stored["spec"]["replicas"], 3);
    // What the webhook saw: a Scale, old and new, of the deployment.
    let reviews = w.requests.lock().unwrap();
    let (_, review) = reviews
        .iter()
        .rev()
        .find(|(p, r)| p.starts_with("/cap") && r["request"]["object"]["spec"]["replicas"] == 5)
        .expect("the mutating webhook saw the write");
    let r = &review["request"];
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(r["subResource"], "scale");
    assert_eq!(r["object"]["kind"], "Scale");
    assert_eq!(r["object"]["metadata"]["name"], "web");
    assert_eq!(r["oldObject"]["kind"], "Scale");
    assert!(
        r["oldObject"]["spec"]["replicas"].as_i64().unwrap() < 5,
        "{r}"
    );
}

/// kube's SLI latency leaves webhook time out: writes that waited 2.5 s
/// on a slow webhook are above 2 s in `apiserver_request_duration_seconds`
/// and below it in `apiserver_request_sli_duration_seconds`.
#[test]
fn the_sli_latency_leaves_webhook_time_out() {
    let s = Server::start(1);
    let w = Webhook::start(
        &[],
        Arc::new(|_: &str, review: Value| {
            std::thread::sleep(std::time::Duration::from_millis(2500));
            answer(&review, json!({"allowed": true}))
        }),
    );
    let ns = namespace(&s, "slow-hook");
    configure(
        &s,
        VALIDATING,
        "slow",
        vec![hook(
            &w,
            "slow.example.com",
            "/",
            &["configmaps"],
            json!({}),
        )],
    );
    let mut n = 0;
    eventually(30, "the webhook in effect", || {
        n += 1;
        let (code, body) = s.post(
            &cm_path(&ns),
            &json!({"metadata": {"name": format!("cm-{n}")}}),
        );
        assert_eq!(code, 201, "{body}");
        (w.request_count() > 0).then_some(())
    });
    let slow = w.request_count() as f64;
    let labels = r#"component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1""#;
    let with_dry_run = r#"component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1""#;
    let get = |series: String| sample(&s, &series).unwrap_or_else(|| panic!("no {series}"));
    let total = get(format!(
        "apiserver_request_sli_duration_seconds_count{{{labels}}}"
    ));
    assert_eq!(total, n as f64);
    assert_eq!(
        get(format!(
            "apiserver_request_duration_seconds_bucket{{{with_dry_run},le=\"2\"}}"
        )),
        total - slow,
        "the webhook's time counts in the request's duration"
    );
    assert_eq!(
        get(format!(
            "apiserver_request_sli_duration_seconds_bucket{{{labels},le=\"2\"}}"
        )),
        total,
        "and not in its SLI latency"
    );
}
