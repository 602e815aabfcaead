//! CustomResourceDefinitions end to end: a CRD is accepted or refused as
//! kube does, becomes Established and served (discovery, OpenAPI,
//! tables), its custom resources are pruned, defaulted and validated by
//! the schema and its CEL rules, keep status and scale apart, are
//! watched, listed by selectable fields and converted between served
//! versions, and go away with the CRD — their finalizers honoured, a
//! restart in the middle included.

mod common;
use common::*;
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A CRD with everything the server acts on: two versions (v1 stored),
/// status and scale, printer columns, a selectable field, defaults, value
/// validations and CEL rules (one a transition rule).
fn widget_crd() -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.maxReplicas", "message": "replicas may not exceed maxReplicas"},
                {"rule": "!has(oldSelf.size) || self.size == oldSelf.size", "message": "size is immutable"}],
            "properties": {
                "size": {"type": "string", "enum": ["S", "M", "L"]},
                "color": {"type": "string", "default": "blue"},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "maxReplicas": {"type": "integer", "default": 10},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "port": {"type": "integer"}}}}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"type": "string"},
            "phase": {"type": "string"}}}}});
    let version = |name: &str, storage: bool, deprecated: bool| {
        json!({"name": name, "served": true, "storage": storage, "deprecated": deprecated,
            "schema": {"openAPIV3Schema": schema.clone()},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
            "selectableFields": [{"jsonPath": ".spec.color"}]})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                "shortNames": ["wd"], "categories": ["all"]},
            "versions": [version("v1", true, false), version("v1beta1", false, true)]}})
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

/// Creates `crd` and waits until its kind is served.
fn establish(s: &Server, crd: &Value) -> Value {
    let (code, created) = s.post(CRDS, crd);
    assert_eq!(code, 201, "{created}");
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    eventually(5, "the CRD to be established", || {
        let (_, c) = s.get(&format!("{CRDS}/{name}"));
        let established = c["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
        established.then_some(c)
    })
}

fn causes(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_crd_is_established_with_kubes_status_and_served_everywhere() {
    let s = Server::start(2);
    let crd = establish(&s, &widget_crd());
    let status = &crd["status"];
    assert_eq!(status["acceptedNames"]["kind"], "Widget");
    assert_eq!(status["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(status["storedVersions"], json!(["v1"]));
    let names = status["conditions"].as_array().unwrap();
    let accepted = names.iter().find(|c| c["type"] == "NamesAccepted").unwrap();
    assert_eq!(
        (&accepted["reason"], &accepted["message"]),
        (&json!("NoConflicts"), &json!("no conflicts found"))
    );
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));

    // Discovery: the group, both versions, short names and categories.
    let (code, group) = s.get("/apis/example.com");
    assert_eq!(code, 200, "{group}");
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let (_, v1) = s.get("/apis/example.com/v1");
    let widgets = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "widgets")
        .unwrap()
        .clone();
    assert_eq!(widgets["shortNames"], json!(["wd"]));
    assert_eq!(widgets["categories"], json!(["all"]));
    assert_eq!(widgets["namespaced"], true);
    let subs: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        subs.contains(&"widgets/status") && subs.contains(&"widgets/scale"),
        "{subs:?}"
    );
    // OpenAPI v3 for the group version documents the schema.
    let (code, doc) = s.get("/openapi/v3/apis/example.com/v1");
    assert_eq!(code, 200, "{doc}");
    let def = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        def["properties"]["spec"]["properties"]["size"]["enum"],
        json!(["S", "M", "L"]),
        "{def}"
    );

    // Table columns from additionalPrinterColumns.
    let (code, _) = s.post(WIDGETS, &widget("a", json!({"size": "S"})));
    assert_eq!(code, 201);
    let (table, columns) = table(&s, WIDGETS);
    assert_eq!(columns, ["Name", "Size", "Replicas"]);
    assert_eq!(table["rows"][0]["cells"], json!(["a", "S", 1]));

    // A second CRD of the group that wants a taken short name is told so.
    let mut gadget = widget_crd();
    gadget["metadata"]["name"] = json!("gadgets.example.com");
    gadget["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget", "shortNames": ["wd"]});
    let (code, _) = s.post(CRDS, &gadget);
    assert_eq!(code, 201);
    let conflict = eventually(5, "the names conflict", || {
        let (_, c) = s.get(&format!("{CRDS}/gadgets.example.com"));
        c["status"]["conditions"].as_array().and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == "NamesAccepted" && c["status"] == "False")
                .cloned()
        })
    });
    assert_eq!(conflict["reason"], "ShortNamesConflict");
    assert_eq!(conflict["message"], "\"wd\" is already in use");
}

#[test]
fn crd_definitions_are_refused_with_kubes_messages() {
    let s = Server::start(1);
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|c| c["metadata"]["name"] = json!("wrong.example.com")),
            "metadata.name: Invalid value: \"wrong.example.com\": must be spec.names.plural+\".\"+spec.group"),
        (Box::new(|c| c["spec"]["group"] = json!("nodots")),
            "spec.group: Invalid value: \"nodots\": should be a domain with at least one dot"),
        (Box::new(|c| c["spec"]["versions"][1]["storage"] = json!(true)),
            "spec.versions: Invalid value:"),
        (Box::new(|c| c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["x"] = json!({})),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: Required value: must not be empty for specified object fields"),
        (Box::new(|c| c["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("text")),
            "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string"),
        (Box::new(|c| c["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = json!(".status.replicas")),
            "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec"),
        (Box::new(|c| c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = json!([{"rule": "self.spec.size =="}])),
            "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.spec.size ==\""),
        (Box::new(|c| c["spec"]["conversion"] = json!({"strategy": "Webhook"})),
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"),
    ];
    for (edit, want) in cases {
        let mut crd = widget_crd();
        edit(&mut crd);
        let (code, body) = s.post(CRDS, &crd);
        assert_eq!(code, 422, "{want}: {body}");
        let got = causes(&body);
        assert!(
            got.iter().any(|c| c.starts_with(want)),
            "want {want:?} in {got:#?}"
        );
    }
}

#[test]
fn custom_resources_are_pruned_defaulted_and_validated() {
    let s = Server::start(2);
    establish(&s, &widget_crd());
    // Unknown fields: dropped with a warning, a 400 with Strict.
    let body = serde_json::to_vec(&widget("w", json!({"size": "M", "extra": 1}))).unwrap();
    let (code, warnings, created) = s.send_warned("POST", WIDGETS, "application/json", &body);
    assert_eq!(code, 201, "{created}");
    assert_eq!(warnings, ["unknown field \"spec.extra\""]);
    assert_eq!(
        created["spec"],
        json!({"size": "M", "color": "blue", "replicas": 1, "maxReplicas": 10})
    );
    assert_eq!(created["metadata"]["generation"], 1);
    let body = serde_json::to_vec(&widget("strict", json!({"size": "M", "extra": 1}))).unwrap();
    let (code, _, refused) = s.send_warned(
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        "application/json",
        &body,
    );
    assert_eq!(code, 400);
    assert_eq!(refused["message"], "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.extra\"");

    // Schema errors: kube's 422 with every cause.
    let (code, refused) = s.post(
        WIDGETS,
        &widget(
            "bad",
            json!({"size": "XL", "replicas": "3", "ports": [{"name": "a"}, {"name": "a"}]}),
        ),
    );
    assert_eq!(code, 422, "{refused}");
    let got = causes(&refused);
    for want in [
        "spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\", \"L\"",
        "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        "spec.ports[1]: Duplicate value: {\"name\":\"a\"}",
    ] {
        assert!(got.contains(&want.to_string()), "want {want:?} in {got:#?}");
    }
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .starts_with("Widget.example.com \"bad\" is invalid: ["));
    let (code, refused) = s.post(WIDGETS, &widget("bad", json!({})));
    assert_eq!(code, 422);
    assert_eq!(
        causes(&refused),
        [
            "spec.size: Required value",
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
        ]
    );

    // CEL rules, then a transition rule on update.
    let (code, refused) = s.post(
        WIDGETS,
        &widget("big", json!({"size": "S", "replicas": 11})),
    );
    assert_eq!(code, 422);
    assert_eq!(
        causes(&refused),
        ["spec: Invalid value: \"object\": replicas may not exceed maxReplicas"]
    );
    let one = format!("{WIDGETS}/w");
    let (code, refused) = s.patch(
        &one,
        "application/merge-patch+json",
        &json!({"spec": {"size": "L"}}),
    );
    assert_eq!(code, 422);
    assert_eq!(
        causes(&refused),
        ["spec: Invalid value: \"object\": size is immutable"]
    );

    // A spec change bumps the generation; a metadata change does not.
    let (_, patched) = s.patch(
        &one,
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 2}}),
    );
    assert_eq!(patched["metadata"]["generation"], 2);
    let (_, patched) = s.patch(
        &one,
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"a": "b"}}}),
    );
    assert_eq!(patched["metadata"]["generation"], 2);
}

#[test]
fn status_and_scale_are_their_own_subresources() {
    let s = Server::start(2);
    establish(&s, &widget_crd());
    let mut w = widget("w", json!({"size": "S"}));
    w["status"] = json!({"phase": "set by create"});
    let (_, created) = s.post(WIDGETS, &w);
    assert!(
        created.get("status").is_none(),
        "status is dropped on create: {created}"
    );
    let one = format!("{WIDGETS}/w");
    // The main resource ignores status; /status ignores the spec.
    let (_, updated) = s.patch(
        &one,
        "application/merge-patch+json",
        &json!({"status": {"phase": "ignored"}}),
    );
    assert!(updated.get("status").is_none(), "{updated}");
    let (code, updated) = s.patch(&format!("{one}/status"), "application/merge-patch+json",
        &json!({"spec": {"size": "L"}, "status": {"phase": "Ready", "replicas": 1, "selector": "app=w"}}));
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["size"], "S");
    assert_eq!(updated["status"]["phase"], "Ready");
    assert_eq!(
        updated["metadata"]["generation"], 1,
        "status writes keep the generation"
    );
    // Scale reads and writes the CRD's paths.
    let (code, scale) = s.get(&format!("{one}/scale"));
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=w"}));
    let mut scale = scale.clone();
    scale["spec"]["replicas"] = json!(4);
    let (code, scaled) = s.put(&format!("{one}/scale"), &scale);
    assert_eq!(code, 200, "{scaled}");
    let (_, w) = s.get(&one);
    assert_eq!(w["spec"]["replicas"], 4);
    assert_eq!(w["metadata"]["generation"], 2);
    // What scale reads must fit a Scale, whatever the schema allows.
    let (code, refused) = s.patch(
        &format!("{one}/status"),
        "application/merge-patch+json",
        &json!({"status": {"replicas": -1}}),
    );
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        causes(&refused),
        [".status.replicas: Invalid value: -1: should be a non-negative integer"]
    );
    let (code, refused) = s.patch(
        &one,
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 3_000_000_000_i64, "maxReplicas": 4_000_000_000_i64}}),
    );
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        causes(&refused),
        [".spec.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647"]
    );
}

/// kube warns about finalizer names another controller could also pick
/// (no path), on the write that adds them only.
#[test]
fn unqualified_finalizers_of_custom_resources_are_warned_about() {
    let s = Server::start(2);
    establish(&s, &widget_crd());
    let mut w = widget("f", json!({"size": "S"}));
    w["metadata"]["finalizers"] = json!([
        "example.com/cleanup",
        "cleanup",
        "kubernetes",
        "cleanup.example.com"
    ]);
    let body = serde_json::to_vec(&w).unwrap();
    let (code, warnings, created) = s.send_warned("POST", WIDGETS, "application/json", &body);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        [
            "metadata.finalizers: \"cleanup\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
            "metadata.finalizers: \"cleanup.example.com\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
        ]
    );
    let patch = |finalizers: Value| {
        let body = serde_json::to_vec(&json!({"metadata": {"finalizers": finalizers}})).unwrap();
        s.send_warned(
            "PATCH",
            &format!("{WIDGETS}/f"),
            "application/merge-patch+json",
            &body,
        )
    };
    let (code, warnings, _) = patch(json!(["cleanup", "other"]));
    assert_eq!(code, 200);
    assert_eq!(warnings.len(), 1, "only the added name: {warnings:?}");
    assert!(warnings[0].contains("\"other\""), "{warnings:?}");
    let (code, warnings, _) = patch(json!([]));
    assert_eq!(code, 200);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn custom_resources_are_watched_selected_and_served_at_every_version() {
    let s = Server::start(4);
    establish(&s, &widget_crd());
    let (_, list) = s.get(WIDGETS);
    let mut watch = s.watch(&format!(
        "{WIDGETS}?watch=true&resourceVersion={}",
        list["metadata"]["resourceVersion"].as_str().unwrap()
    ));
    for (name, color) in [("red", "red"), ("blue", "blue"), ("also-red", "red")] {
        let (code, _) = s.post(WIDGETS, &widget(name, json!({"size": "S", "color": color})));
        assert_eq!(code, 201);
    }
    let events = watch.until(|e| e["object"]["metadata"]["name"] == "also-red");
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e["type"] == "ADDED"));
    let (code, reds) = s.get(&format!("{WIDGETS}?fieldSelector=spec.color%3Dred"));
    assert_eq!(code, 200, "{reds}");
    assert_eq!(names(&reds), ["also-red", "red"]);
    let (code, refused) = s.get(&format!("{WIDGETS}?fieldSelector=spec.size%3DS"));
    assert_eq!(code, 400, "{refused}");

    // v1beta1 (deprecated) reads and writes the same objects, converted by
    // apiVersion; storage stays v1.
    let beta = "/apis/example.com/v1beta1/namespaces/default/widgets";
    let (code, warnings, old) = s.send_warned("GET", &format!("{beta}/red"), "", b"");
    assert_eq!(code, 200, "{old}");
    assert_eq!(old["apiVersion"], "example.com/v1beta1");
    assert_eq!(
        warnings,
        ["example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"]
    );
    let mut b = widget("beta", json!({"size": "M"}));
    b["apiVersion"] = json!("example.com/v1beta1");
    let (code, created) = s.post(beta, &b);
    assert_eq!(code, 201, "{created}");
    let (_, stored) = s.get(&format!("{WIDGETS}/beta"));
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(stored["spec"]["color"], "blue");
}

#[test]
fn deleting_a_crd_deletes_its_instances_first() {
    let s = Server::start(2);
    establish(&s, &widget_crd());
    for i in 0..50 {
        let (code, _) = s.post(WIDGETS, &widget(&format!("w{i}"), json!({"size": "S"})));
        assert_eq!(code, 201);
    }
    let mut held = widget("held", json!({"size": "S"}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(s.post(WIDGETS, &held).0, 201);
    let crd = format!("{CRDS}/widgets.example.com");
    let (code, deleting) = s.delete(&crd);
    assert_eq!(code, 200, "{deleting}");
    assert!(deleting["metadata"]["finalizers"]
        .as_array()
        .unwrap()
        .contains(&json!("customresourcecleanup.apiextensions.k8s.io")));
    // The instance with its own finalizer keeps the CRD; creates are refused.
    eventually(10, "the other instances to go", || {
        let (_, list) = s.get(WIDGETS);
        (names(&list) == ["held"]).then_some(())
    });
    let (code, refused) = s.post(WIDGETS, &widget("late", json!({"size": "S"})));
    assert_eq!(code, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "create not allowed while custom resource definition is terminating"
    );
    let (_, c) = s.get(&crd);
    let cond = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Terminating")
        .unwrap()
        .clone();
    assert_eq!(
        (&cond["status"], &cond["reason"]),
        (&json!("True"), &json!("InstanceDeletionInProgress"))
    );
    let (code, _) = s.patch(
        &format!("{WIDGETS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(code, 200);
    s.wait_gone(&crd);
    // The kind is no longer served once the controller saw the CRD go.
    s.wait_gone(WIDGETS);
    s.wait_gone("/apis/example.com/v1");
}

#[test]
fn crds_survive_a_restart_and_cleanup_resumes_after_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut s = Server::launch(2, &data, &[]).unwrap();
    establish(&s, &widget_crd());
    for i in 0..2000 {
        let (code, _) = s.post(WIDGETS, &widget(&format!("w{i}"), json!({"size": "S"})));
        assert_eq!(code, 201);
    }
    s.stop();
    let mut s = Server::launch(2, &data, &[]).unwrap();
    // Served as soon as the server is ready.
    let (code, list) = s.get(WIDGETS);
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["items"].as_array().unwrap().len(), 2000);
    // Delete, and stop in the middle of the cleanup.
    let crd = format!("{CRDS}/widgets.example.com");
    assert_eq!(s.delete(&crd).0, 200);
    s.stop();
    let s = Server::launch(2, &data, &[]).unwrap();
    s.wait_gone(&crd);
    // The kind goes once the controller has seen the CRD go (as on kube,
    // a moment after).
    s.wait_gone(WIDGETS);
    // The same kind can be defined again, empty.
    establish(&s, &widget_crd());
    let (_, list) = s.get(WIDGETS);
    assert_eq!(list["items"], json!([]));
}

#[test]
fn kubectl_works_with_custom_resources() {
    let s = Server::start(1);
    let k = common::kubectl::Kubectl::new(&s);
    let crd = k.file("crd.json", &widget_crd().to_string());
    k.ok(&["apply", "-f", &crd]);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);
    let w = k.file(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: M\n",
    );
    k.ok(&["apply", "-f", &w]);
    let out = k.ok(&["get", "wd"]);
    assert!(out.starts_with("NAME   SIZE   REPLICAS"), "{out}");
    assert!(out.contains("w      M      1"), "{out}");
    k.ok(&["scale", "widget/w", "--replicas=3"]);
    assert_eq!(
        k.ok(&["get", "widget", "w", "-o", "jsonpath={.spec.replicas}"]),
        "3"
    );
    assert!(k.ok(&["get", "all"]).contains("widget.example.com/w"));
    assert!(k
        .ok(&["api-resources", "--api-group=example.com"])
        .contains("widgets"));
    // The envelope is documented as a built-in kind's is.
    let explained = k.ok(&["explain", "widgets"]);
    assert!(
        explained.contains("APIVersion defines the versioned schema"),
        "{explained}"
    );
    let explained = k.ok(&["explain", "widgets.metadata"]);
    assert!(
        explained.contains("Standard object's metadata") && explained.contains("creationTimestamp"),
        "{explained}"
    );
    let explained = k.ok(&["explain", "widget.spec"]);
    assert!(
        explained.contains("size") && explained.contains("replicas"),
        "{explained}"
    );
    let bad = k.file(
        "bad.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  size: XL\n",
    );
    let err = k.fails(&["apply", "-f", &bad]);
    assert!(
        err.contains("spec.size: Unsupported value: \"XL\""),
        "{err}"
    );
    k.ok(&[
        "delete",
        "crd",
        "widgets.example.com",
        "--wait=true",
        "--timeout=30s",
    ]);
}

#[test]
fn defaults_added_later_are_filled_on_read() {
    let s = Server::start(2);
    let mut crd = widget_crd();
    let spec_props = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    crd.pointer_mut(spec_props).unwrap()["color"] = json!({"type": "string"});
    crd["spec"]["versions"][1] = json!({"name": "v1beta1", "served": false, "storage": false,
        "schema": crd["spec"]["versions"][0]["schema"].clone()});
    let crd = establish(&s, &crd);
    assert_eq!(s.post(WIDGETS, &widget("old", json!({"size": "S"}))).0, 201);
    let (_, before) = s.get(&format!("{WIDGETS}/old"));
    assert!(before["spec"].get("color").is_none(), "{before}");
    // The schema gains a default: objects stored before it read with it.
    let mut changed = crd.clone();
    changed.pointer_mut(spec_props).unwrap()["color"] =
        json!({"type": "string", "default": "green"});
    let (code, body) = s.put(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        &changed,
    );
    assert_eq!(code, 200, "{body}");
    let got = eventually(5, "the default on read", || {
        let (_, w) = s.get(&format!("{WIDGETS}/old"));
        (w["spec"]["color"] == "green").then_some(w)
    });
    assert_eq!(
        got["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "a read writes nothing"
    );
    let (_, list) = s.get(WIDGETS);
    assert_eq!(list["items"][0]["spec"]["color"], "green");
    // A watch's initial events are read from storage too.
    let mut watch = s.watch(&format!("{WIDGETS}?watch=true"));
    let added = watch.next_event().expect("the initial event");
    assert_eq!(added["object"]["spec"]["color"], "green", "{added}");
}

#[test]
fn server_side_apply_merges_list_map_items_by_their_keys() {
    let s = Server::start(1);
    establish(&s, &widget_crd());
    let apply = |manager: &str, ports: &str| {
        let yaml = format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: S\n  ports:\n{ports}");
        s.apply_yaml(&format!("{WIDGETS}/w?fieldManager={manager}"), &yaml)
    };
    let (code, body) = apply("a", "  - name: http\n    port: 80\n");
    assert_eq!(code, 201, "{body}");
    let (code, body) = apply("b", "  - name: https\n    port: 443\n");
    assert_eq!(code, 200, "{body}");
    // Each manager owns its own item: both stay.
    let ports: Vec<&str> = body["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(ports, ["http", "https"]);
    let owned = body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "b")
        .unwrap()["fieldsV1"]
        .to_string();
    assert!(owned.contains("k:{\\\"name\\\":\\\"https\\\"}"), "{owned}");
    // A conflicting value for a shared field is refused.
    let (code, body) = apply("b", "  - name: http\n    port: 8080\n");
    assert_eq!(code, 409, "{body}");
}

/// `schema` with every `$ref` into `defs` inlined, as controller-gen
/// writes operators' CRDs, and the patch extensions a CRD cannot carry
/// dropped.
fn inline(schema: &Value, defs: &serde_json::Map<String, Value>, depth: usize) -> Value {
    assert!(depth < 40, "recursive schema");
    match schema {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                let name = r.rsplit('/').next().unwrap();
                if name.ends_with("ObjectMeta") {
                    // controller-gen's generateEmbeddedObjectMeta form
                    // (without it kube prunes the labels too).
                    let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
                    return json!({"type": "object", "properties": {
                        "name": {"type": "string"}, "labels": map, "annotations": map}});
                }
                return inline(&defs[name], defs, depth + 1);
            }
            if let Some(Value::Array(all)) = m.get("allOf") {
                if all.len() == 1 {
                    let mut inner = inline(&all[0], defs, depth + 1);
                    for (k, v) in m {
                        if k != "allOf" && k != "default" {
                            inner[k] = inline(v, defs, depth + 1);
                        }
                    }
                    return inner;
                }
            }
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                // Scalar defaults stay (`protocol: TCP` keys a list map).
                let object_default = k == "default" && (v.is_object() || v.is_array());
                if k.starts_with("x-kubernetes-patch")
                    || k == "x-kubernetes-unions"
                    || object_default
                    || k == "x-kubernetes-group-version-kind"
                {
                    continue;
                }
                out.insert(
                    k.clone(),
                    if k == "enum" || k == "required" {
                        v.clone()
                    } else {
                        inline(v, defs, depth)
                    },
                );
            }
            // controller-gen's form of a quantity or an IntOrString.
            if out.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
                out.remove("type");
                out.remove("format");
                out.remove("oneOf");
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| inline(v, defs, depth)).collect()),
        other => other.clone(),
    }
}

#[test]
fn an_operator_crd_embedding_a_whole_pod_template_works_as_on_kube() {
    let s = Server::start(2);
    let (code, doc) = s.get("/openapi/v3/api/v1");
    assert_eq!(code, 200);
    let defs = doc["components"]["schemas"].as_object().unwrap().clone();
    let mut template = inline(&defs["io.k8s.api.core.v1.PodTemplateSpec"], &defs, 0);
    // kube's own OpenAPI (and controller-gen) default a port's protocol,
    // which keys the ports list map.
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let pointer = format!(
            "/properties/spec/properties/{list}/items/properties/ports/items/properties/protocol"
        );
        template.pointer_mut(&pointer).expect(&pointer)["default"] = json!("TCP");
    }
    let size = template.to_string().len();
    assert!(size > 100_000, "a generated-size schema ({size} bytes)");
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["template"],
        "properties": {
            "replicas": {"type": "integer", "format": "int32", "minimum": 0},
            "strategy": {"type": "string", "enum": ["Canary", "BlueGreen"]},
            "template": template,
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "x-kubernetes-validations": [{"rule": "self.template.spec.containers.all(c, c.name.size() <= 63)",
            "message": "container names are DNS labels"}]},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "rollouts.ops.example.io"},
        "spec": {"group": "ops.example.io", "scope": "Namespaced",
            "names": {"plural": "rollouts", "kind": "Rollout"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}});
    establish(&s, &crd);
    let path = "/apis/ops.example.io/v1alpha1/namespaces/default/rollouts";
    let rollout = |container: Value| {
        json!({"apiVersion": "ops.example.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "r"},
            "spec": {"replicas": 2, "strategy": "Canary", "extra": {"anything": [1, {"goes": true}]},
                "template": {"metadata": {"labels": {"app": "r"}},
                    "spec": {"containers": [container]}}}})
    };
    let good = json!({"name": "app", "image": "nginx",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m", "memory": 1048576}},
        "livenessProbe": {"httpGet": {"port": "http", "path": "/"}}});
    let (code, created) = s.post(path, &rollout(good.clone()));
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["extra"],
        json!({"anything": [1, {"goes": true}]})
    );
    assert_eq!(
        created["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"],
        1048576
    );
    // What kube refuses in such a schema, it refuses here.
    let mut bad = good.clone();
    bad["ports"][0]["containerPort"] = json!("eighty");
    let mut r = rollout(bad);
    r["metadata"]["name"] = json!("bad");
    let (code, refused) = s.post(path, &r);
    assert_eq!(code, 422, "{refused}");
    let got = causes(&refused);
    let port = "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: \"string\": spec.template.spec.containers[0].ports[0].containerPort in body must be of type integer: \"string\"";
    assert!(got.contains(&port.to_string()), "{got:#?}");
    let mut long = rollout(json!({"name": "a".repeat(70), "image": "nginx"}));
    long["metadata"]["name"] = json!("long");
    let (code, refused) = s.post(path, &long);
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        causes(&refused),
        ["spec: Invalid value: \"object\": container names are DNS labels"]
    );
    let mut r = rollout(json!({"name": "app", "image": "nginx", "bogus": 1}));
    r["metadata"]["name"] = json!("pruned");
    let body = serde_json::to_vec(&r).unwrap();
    let (code, warnings, created) = s.send_warned("POST", path, "application/json", &body);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        ["unknown field \"spec.template.spec.containers[0].bogus\""]
    );
}
