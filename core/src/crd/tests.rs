//! A rich custom resource schema, checked keyword by keyword against
//! kube's messages, plus CEL rules and CRD definitions accepted and
//! refused.

use super::definition::{validate_create, validate_update};
use super::CustomRules;
use serde_json::{json, Value};

fn rules() -> CustomRules {
    CustomRules::new(
        &json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"],
                "x-kubernetes-validations": [
                    {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"},
                    {"rule": "!has(self.mode) || self.mode != 'b' || has(self.color)",
                     "messageExpression": "'mode b needs a color, got ' + string(self.replicas)",
                     "fieldPath": ".color", "reason": "FieldValueRequired"},
                    {"rule": "self.replicas >= oldSelf.replicas", "message": "replicas may not shrink"}],
                "properties": {
                "size": {"type": "string", "enum": ["S", "M", "L"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "minReplicas": {"type": "integer", "default": 0},
                "ratio": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": true, "maximum": 2},
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "color": {"type": "string", "nullable": true},
                "mode": {"type": "string"},
                "when": {"type": "string", "format": "date-time"},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "maxItems": 3, "minItems": 1,
                    "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "port": {"type": "integer"}},
                        "x-kubernetes-validations": [{"rule": "self.port > 0", "message": "port must be positive"}]}},
                "labels": {"type": "object", "maxProperties": 2,
                    "additionalProperties": {"type": "string"}},
                "choice": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                "limit": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "quantity(self).isLessThan(quantity('1Gi'))", "message": "limit too large"}]},
                "items": {"type": "array", "items": {"type": "integer"},
                    "x-kubernetes-validations": [{"rule": "self.all(x, x >= 0) && self.isSorted()", "message": "sorted, non-negative"}]},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true}}}}}),
        false,
        None,
    )
}

fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let r = rules();
    let mut obj = obj.clone();
    r.default(&mut obj);
    r.validate(&obj, old)
        .iter()
        .map(|c| c.error_string())
        .collect()
}

fn cr(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

#[test]
fn a_valid_object_passes_and_is_defaulted() {
    let r = rules();
    let mut obj = cr(json!({"size": "M", "color": null, "tags": ["a"],
        "ports": [{"name": "http", "port": 80}], "choice": {"a": "x"},
        "limit": "512Mi", "items": [1, 2, 3], "port": "http",
        "template": {"apiVersion": "v1", "kind": "Pod", "spec": {}}}));
    r.default(&mut obj);
    assert_eq!(obj["spec"]["replicas"], 1);
    assert_eq!(obj["spec"]["color"], Value::Null, "nullable keeps its null");
    assert_eq!(r.validate(&obj, None), vec![], "{obj}");
}

#[test]
fn every_keyword_is_refused_with_kubes_message() {
    let cases: &[(Value, &str)] = &[
        (json!({"size": "XL"}), "spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\", \"L\""),
        (json!({}), "spec.size: Required value"),
        (json!({"size": "S", "replicas": "x"}), "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""),
        (json!({"size": "S", "replicas": 11}), "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"),
        (json!({"size": "S", "replicas": -1}), "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"),
        (json!({"size": "S", "ratio": 2}), "spec.ratio: Invalid value: 2: spec.ratio in body should be less than 2"),
        (json!({"size": "S", "ratio": 0.7}), "spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"),
        (json!({"size": "S", "name": "abcdef"}), "spec.name: Too long: may not be more than 5 bytes"),
        (json!({"size": "S", "name": "a"}), "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"),
        (json!({"size": "S", "name": "AB"}), "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
        (json!({"size": "S", "when": "soon"}), "spec.when: Invalid value: \"soon\": spec.when in body must be of type date-time: \"soon\""),
        (json!({"size": "S", "port": true}), "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""),
        (json!({"size": "S", "tags": ["a", "b", "c", "d"]}), "spec.tags: Too many: 4: must have at most 3 items"),
        (json!({"size": "S", "tags": []}), "spec.tags: Invalid value: []: spec.tags in body should have at least 1 items"),
        (json!({"size": "S", "tags": ["a", "a"]}), "spec.tags[1]: Duplicate value: \"a\""),
        (json!({"size": "S", "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}), "spec.ports[1]: Duplicate value: {\"name\":\"a\"}"),
        (json!({"size": "S", "labels": {"a": "1", "b": "2", "c": "3"}}), "spec.labels: Too many: 3: must have at most 2 items"),
        (json!({"size": "S", "choice": {}}), "<nil>: Invalid value: \"\": \"spec.choice\" must validate one and only one schema (oneOf). Found none valid"),
        (json!({"size": "S", "choice": {"a": "x", "b": "y"}}), "<nil>: Invalid value: \"\": \"spec.choice\" must validate one and only one schema (oneOf). Found 2 valid alternatives"),
        (json!({"size": "S", "template": {"spec": {}}}), "spec.template.apiVersion: Required value: must not be empty"),
    ];
    for (spec, want) in cases {
        let got = messages(&cr(spec.clone()), None);
        assert!(
            got.iter().any(|m| m == want),
            "{spec}: want {want:?}, got {got:?}"
        );
    }
}

#[test]
fn cel_rules_run_with_messages_paths_and_reasons() {
    let got = messages(
        &cr(json!({"size": "S", "replicas": 1, "minReplicas": 2})),
        None,
    );
    assert_eq!(
        got,
        ["spec: Invalid value: \"object\": replicas must be at least minReplicas"]
    );
    let got = messages(&cr(json!({"size": "S", "mode": "b", "replicas": 3})), None);
    assert_eq!(
        got,
        ["spec.color: Required value: mode b needs a color, got 3"]
    );
    let got = messages(
        &cr(json!({"size": "S", "ports": [{"name": "a", "port": 0}]})),
        None,
    );
    assert_eq!(
        got,
        ["spec.ports[0]: Invalid value: \"object\": port must be positive"]
    );
    let mut got = messages(
        &cr(json!({"size": "S", "limit": "2Gi", "items": [2, 1]})),
        None,
    );
    got.sort();
    assert_eq!(
        got,
        [
            "spec.items: Invalid value: \"array\": sorted, non-negative",
            "spec.limit: Invalid value: \"string\": limit too large"
        ]
    );
}

#[test]
fn schema_errors_block_the_rules() {
    let got = messages(
        &cr(json!({"size": "XL", "replicas": 1, "minReplicas": 2})),
        None,
    );
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[1].starts_with("<nil>: Invalid value: null: some validation rules were not checked")
    );
}

#[test]
fn transition_rules_see_the_old_object_and_unchanged_values_ratchet() {
    let old = cr(json!({"size": "S", "replicas": 5}));
    let got = messages(&cr(json!({"size": "S", "replicas": 4})), Some(&old));
    assert_eq!(
        got,
        ["spec: Invalid value: \"object\": replicas may not shrink"]
    );
    assert!(
        messages(&cr(json!({"size": "S", "replicas": 4})), None).is_empty(),
        "no old object: transition rules skip"
    );
    // A rule the stored object breaks does not stop an update that
    // leaves the ruled value alone.
    let broken = cr(json!({"size": "S", "replicas": 1, "minReplicas": 2}));
    let mut relabelled = broken.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert!(messages(&relabelled, Some(&broken)).is_empty());
    let mut changed = broken.clone();
    changed["spec"]["mode"] = json!("a");
    assert_eq!(
        messages(&changed, Some(&broken)),
        ["spec: Invalid value: \"object\": replicas must be at least minReplicas"]
    );
    // A stored value the schema now refuses stays writable while unchanged.
    let stored = cr(json!({"size": "S", "replicas": 5, "name": "TOOLONGNAME"}));
    assert!(messages(
        &cr(json!({"size": "S", "replicas": 6, "name": "TOOLONGNAME"})),
        Some(&stored)
    )
    .is_empty());
}

#[test]
fn a_rule_over_its_cost_limit_is_stopped() {
    let r = CustomRules::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "integer"}}},
            "x-kubernetes-validations": [{"rule": "self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))"}]}}}),
        false,
        None,
    );
    let l: Vec<i64> = (0..120).collect();
    let got: Vec<String> = r
        .validate(&cr(json!({"l": l})), None)
        .iter()
        .map(|c| c.error_string())
        .collect();
    assert_eq!(got.len(), 1);
    assert!(
        got[0].contains("call cost exceeds limit for rule"),
        "{got:?}"
    );
}

/// One rule per library function on a string field; each case is a
/// value and whether the rule holds for it.
#[test]
fn url_ip_cidr_and_format_libraries_answer_as_kubes() {
    let cases: &[(&str, &str, bool)] = &[
        ("isURL(self)", "https://example.com:8443/a?b=c", true),
        ("isURL(self)", "not a url", false),
        (
            "url(self).getScheme() == 'https'",
            "https://example.com/x",
            true,
        ),
        (
            "url(self).getHost() == 'example.com:8443'",
            "https://example.com:8443/x",
            true,
        ),
        (
            "url(self).getHostname() == '::1'",
            "https://[::1]:80/x",
            true,
        ),
        (
            "url(self).getPort() == '443'",
            "https://example.com:443/x",
            true,
        ),
        ("url(self).getPort() == ''", "https://example.com/x", true),
        (
            "url(self).getEscapedPath() == '/a%20b'",
            "https://example.com/a%20b",
            true,
        ),
        (
            "url(self).getQuery()['k'] == ['1', '2']",
            "https://example.com/?k=1&k=2",
            true,
        ),
        ("url(self).getScheme() == ''", "/only/a/path", true),
        ("isIP(self)", "10.0.0.1", true),
        ("isIP(self)", "::ffff:10.0.0.1", false),
        ("isIP(self)", "10.0.0", false),
        ("ip.isCanonical(self)", "2001:db8::1", true),
        ("ip.isCanonical(self)", "2001:DB8::1", false),
        ("ip(self).family() == 6", "fe80::1", true),
        ("ip(self).isLoopback()", "127.0.0.2", true),
        ("ip(self).isLinkLocalUnicast()", "fe80::1", true),
        ("ip(self).isLinkLocalMulticast()", "224.0.0.251", true),
        ("ip(self).isGlobalUnicast()", "10.1.2.3", true),
        ("ip(self).isUnspecified()", "0.0.0.0", true),
        ("ip(self) == ip('10.0.0.1')", "10.0.0.1", true),
        ("isCIDR(self)", "10.0.0.0/8", true),
        ("isCIDR(self)", "10.0.0.0/33", false),
        (
            "cidr(self).containsIP('192.168.1.7')",
            "192.168.0.0/16",
            true,
        ),
        (
            "cidr(self).containsIP(ip('10.0.0.1'))",
            "192.168.0.0/16",
            false,
        ),
        (
            "cidr(self).containsCIDR('192.168.4.0/24')",
            "192.168.0.0/16",
            true,
        ),
        (
            "cidr(self).containsCIDR(cidr('192.0.0.0/8'))",
            "192.168.0.0/16",
            false,
        ),
        ("cidr(self).prefixLength() == 16", "192.168.0.0/16", true),
        (
            "cidr(self).ip() == ip('192.168.3.4')",
            "192.168.3.4/16",
            true,
        ),
        (
            "cidr(self).masked() == cidr('192.168.0.0/16')",
            "192.168.3.4/16",
            true,
        ),
        (
            "!format.dns1123Label().validate(self).hasValue()",
            "web-1",
            true,
        ),
        (
            "!format.dns1123Label().validate(self).hasValue()",
            "Web_1",
            false,
        ),
        (
            "format.named('labelValue').value().validate(self).hasValue()",
            "-bad-",
            true,
        ),
        ("!format.named('nope').hasValue()", "x", true),
        (
            "format.uuid().validate(self).value()[0] == 'does not match the UUID format'",
            "x",
            true,
        ),
    ];
    for (rule, value, holds) in cases {
        let r = CustomRules::new(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "v": {"type": "string", "x-kubernetes-validations": [{"rule": rule}]}}}}}),
            false,
            None,
        );
        let errors = r.validate(&cr(json!({"v": value})), None);
        assert_eq!(
            errors.is_empty(),
            *holds,
            "{rule} for {value:?}: {errors:?}"
        );
    }
}

/// Two-variable comprehensions, list positions and semantic versions,
/// each a rule over `spec` (a list `l`, a map `m`, a version `v`) that
/// holds or not.
#[test]
fn comprehension_list_and_semver_libraries_answer_as_kubes() {
    let spec = json!({"l": ["a", "b", "a"], "m": {"x": 1, "y": 2}, "v": "1.2.3-rc.1"});
    let cases: &[(&str, bool)] = &[
        ("self.l.all(i, v, i < 3 && v != '')", true),
        ("self.l.all(i, v, i == 0)", false),
        ("self.l.exists(i, v, i == 1 && v == 'b')", true),
        ("self.l.existsOne(i, v, v == 'a')", false),
        ("self.l.exists_one(i, v, v == 'b')", true),
        ("self.m.all(k, v, v > 0 && k.size() == 1)", true),
        ("self.m.exists(k, v, k == 'y' && v == 2)", true),
        ("self.l.transformList(i, v, v + string(i)) == ['a0', 'b1', 'a2']", true),
        ("self.l.transformList(i, v, i > 0, v) == ['b', 'a']", true),
        ("self.m.transformMap(k, v, v * 10) == {'x': 10, 'y': 20}", true),
        ("self.m.transformMap(k, v, v > 1, k) == {'y': 'y'}", true),
        ("self.m.transformMapEntry(k, v, {v: k}) == {1: 'x', 2: 'y'}", true),
        ("self.l.transformList(i, v, self.m.transformList(k, w, w).size()) == [2, 2, 2]", true),
        ("self.l.indexOf('a') == 0 && self.l.lastIndexOf('a') == 2", true),
        ("self.l.indexOf('z') == -1", true),
        ("'banana'.indexOf('an') == 1 && 'banana'.lastIndexOf('an') == 3", true),
        ("isSemver(self.v) && !isSemver('1.2') && isSemver('v1.2', true)", true),
        ("semver(self.v).major() == 1 && semver(self.v).minor() == 2 && semver(self.v).patch() == 3", true),
        ("semver(self.v).isLessThan(semver('1.2.3'))", true),
        ("semver('1.10.0').isGreaterThan(semver('1.9.0'))", true),
        ("semver('1.0.0+a') == semver('1.0.0+b') && semver('1.0.0').compareTo(semver('2.0.0')) == -1", true),
        ("semver('v01.2', true) == semver('1.2.0')", true),
        ("sets.contains(self.l, ['a']) && sets.intersects(self.l, ['b', 'z'])", true),
        ("!sets.equivalent(self.l, ['a'])", true),
        ("optional.of(self.v).hasValue() && !optional.none().hasValue()", true),
        ("strings.quote(self.v) == '\"1.2.3-rc.1\"'", true),
    ];
    for (rule, holds) in cases {
        let r = CustomRules::new(
            &json!({"type": "object", "properties": {"spec": {"type": "object",
                "x-kubernetes-validations": [{"rule": rule}],
                "properties": {
                    "l": {"type": "array", "items": {"type": "string"}},
                    "m": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "v": {"type": "string"}}}}}),
            false,
            None,
        );
        let errors = r.validate(&cr(spec.clone()), None);
        assert_eq!(errors.is_empty(), *holds, "{rule}: {errors:?}");
    }
    // A duplicate key is an error, not a silent overwrite.
    let r = CustomRules::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.l.transformMapEntry(i, v, {v: i}).size() > 0"}],
            "properties": {"l": {"type": "array", "items": {"type": "string"}}}}}}),
        false,
        None,
    );
    let errors = r.validate(&cr(json!({"l": ["a", "a"]})), None);
    assert!(
        errors
            .iter()
            .any(|e| e.error_string().contains("already exists")),
        "{errors:?}"
    );
}

/// Loops that build lists append in place: a `map`, `filter` or
/// `transformList` over 200,000 items finishes in linear time (copying
/// the accumulated list each step would take minutes), and a map grown
/// step by step is charged for its copies.
#[test]
fn list_building_loops_are_linear_and_map_building_is_charged() {
    let l: Vec<i64> = (0..200_000).collect();
    for rule in [
        "self.l.map(x, x + 1).size() == 200000",
        "self.l.filter(x, x % 2 == 0).size() == 100000",
        "self.l.transformList(i, v, v == i).all(b, b)",
        "self.l.transformList(i, v, i < 5, v).size() == 5",
    ] {
        let r = CustomRules::new(
            &json!({"type": "object", "properties": {"spec": {"type": "object",
                "x-kubernetes-validations": [{"rule": rule}],
                "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}}}),
            false,
            None,
        );
        let started = std::time::Instant::now();
        let errors = r.validate(&cr(json!({"l": l})), None);
        assert!(errors.is_empty(), "{rule}: {errors:?}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{rule}"
        );
    }
    let r = CustomRules::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.l.transformMap(i, v, v).size() > 0"}],
            "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}}}),
        false,
        None,
    );
    let errors = r.validate(&cr(json!({"l": (0..5000).collect::<Vec<i64>>()})), None);
    assert!(
        errors
            .iter()
            .any(|e| e.error_string().contains("call cost exceeds limit")),
        "{errors:?}"
    );
    let errors = r.validate(&cr(json!({"l": (0..500).collect::<Vec<i64>>()})), None);
    assert!(errors.is_empty(), "{errors:?}");
}

fn crd(schema: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]}})
}

fn refusals(c: &Value) -> Vec<String> {
    validate_create(c)
        .causes
        .iter()
        .map(|c| c.error_string())
        .collect()
}

#[test]
fn definitions_are_accepted_and_refused_as_kube() {
    assert_eq!(
        refusals(&crd(json!({"type": "object"}))),
        Vec::<String>::new()
    );
    const S: &str = "spec.validation.openAPIV3Schema";
    let cases: Vec<(Value, String)> = vec![
        (json!({"type": "object", "properties": {"a": {}}}), format!("{S}.properties[a].type: Required value: must not be empty for specified object fields")),
        (json!({"type": "object", "properties": {"a": {"type": "array"}}}), format!("{S}.properties[a].items: Required value: must be specified")),
        (json!({"type": "string"}), format!("{S}.type: Invalid value: \"string\": must be object at the root")),
        (json!({"type": "object", "properties": {"a": {"type": "string", "uniqueItems": true}}}), format!("{S}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")),
        (json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}}), format!("{S}.properties[a].$ref: Forbidden: $ref is not supported")),
        (json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}), format!("{S}.properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")),
        (json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}), format!("{S}.properties[a].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: ")),
        (json!({"type": "object", "properties": {"a": {"type": "string", "default": 5}}}), format!("{S}.properties[a].default: Invalid value: \"integer\": {S}.properties[a].default in body must be of type string: \"integer\"")),
        (json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}), format!("{S}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")),
        (json!({"type": "object", "anyOf": [{"type": "object"}]}), format!("{S}.anyOf[0].type: Forbidden: must be empty to be structural")),
        (json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.x >"}]}), format!("{S}.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.x >\"")),
        (json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}}), format!("{S}.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")),
    ];
    for (schema, want) in cases {
        let got = refusals(&crd(schema.clone()));
        assert!(
            got.iter().any(|m| m.starts_with(&want)),
            "{schema}: want {want:?}, got {got:?}"
        );
    }
    let mut bad = crd(json!({"type": "object"}));
    bad["metadata"]["name"] = json!("gadgets.example.com");
    bad["spec"]["scope"] = json!("Global");
    bad["spec"]["names"]["kind"] = json!("WidgetList");
    bad["spec"]["versions"][0]["storage"] = json!(false);
    let got = refusals(&bad);
    for want in [
        "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group",
        "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
        "spec.names.listKind: Invalid value: \"WidgetList\": kind and listKind may not be the same",
    ] {
        assert!(got.iter().any(|m| m == want), "want {want:?}, got {got:?}");
    }
    assert!(
        got.iter()
            .any(|m| m.starts_with("spec.versions: Invalid value:")
                && m.ends_with("must have exactly one version marked as storage version")),
        "{got:?}"
    );
}

#[test]
fn established_crds_keep_their_kind_and_scope() {
    let mut old = crd(json!({"type": "object"}));
    old["status"] = json!({"storedVersions": ["v1"], "conditions": [{"type": "Established", "status": "True"}]});
    let mut new = old.clone();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["group"] = json!("other.com");
    let got: Vec<String> = validate_update(&new, &old)
        .causes
        .iter()
        .map(|c| c.error_string())
        .collect();
    assert!(
        got.contains(&"spec.scope: Invalid value: \"Cluster\": field is immutable".to_string()),
        "{got:?}"
    );
    assert!(
        got.contains(&"spec.group: Invalid value: \"other.com\": field is immutable".to_string()),
        "{got:?}"
    );
}

#[test]
fn a_stored_crd_with_a_non_structural_schema_says_so() {
    let mut old = crd(json!({"type": "object", "properties": {
        "spec": {"properties": {"size": {"type": "string"}}}}}));
    assert!(super::set_structural_condition(
        &mut old,
        "2026-01-01T00:00:00Z"
    ));
    let c = old["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "NonStructuralSchema")
        .cloned()
        .unwrap();
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "Violations");
    let message = c["message"].as_str().unwrap();
    assert!(
        message.contains(
            "properties[spec].type: Required value: must not be empty for specified object fields"
        ),
        "{message}"
    );
    // Fixed: the condition goes.
    old["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["type"] =
        json!("object");
    assert!(super::set_structural_condition(
        &mut old,
        "2026-01-01T00:00:00Z"
    ));
    assert!(!old["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "NonStructuralSchema"));
}

#[test]
fn zero_values_go_clients_send_count_as_absent() {
    let mut c = crd(
        json!({"type": "object", "id": "", "nullable": false, "description": "",
        "required": [], "properties": {"spec": {"type": "object", "id": "", "pattern": "",
            "properties": {"a": {"type": "string", "x-kubernetes-int-or-string": false,
                "allOf": []}}}}}),
    );
    c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    super::set_defaults(&mut c);
    assert_eq!(
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}}}}})
    );
    assert!(refusals(&c).is_empty(), "{:?}", refusals(&c));
}

#[test]
fn rules_are_type_checked_against_their_node_as_kube_does() {
    let with_rules = |rules: Value| {
        crd(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": rules,
            "properties": {
                "replicas": {"type": "integer"},
                "ratio": {"type": "number"},
                "name": {"type": "string"},
                "since": {"type": "string", "format": "date-time"},
                "size": {"x-kubernetes-int-or-string": true},
                "items": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}),
        )
    };
    // What kube accepts.
    let ok = with_rules(json!([
        {"rule": "self.replicas >= 0 && self.ratio > 0.5 && self.ratio < 2"},
        {"rule": "self.name.startsWith('a') && size(self.items) < 10"},
        {"rule": "self.items.all(i, i.size() > 0) && self.labels.all(k, self.labels[k] != '')"},
        {"rule": "!has(self.since) || self.since < timestamp('2030-01-01T00:00:00Z')"},
        {"rule": "self.free.anything.goes == 1 && self.size == self.size"},
        {"rule": "self.replicas >= oldSelf.replicas", "message": "no scaling down"},
        {"rule": "self.replicas < 10", "messageExpression": "'too many: ' + string(self.replicas)"},
        {"rule": "!has(oldSelf.name) || self.name == oldSelf.name", "optionalOldSelf": true}]));
    assert_eq!(refusals(&ok), Vec::<String>::new());
    // What kube refuses.
    let bad = with_rules(json!([
        {"rule": "self.replicas > '1'"},
        {"rule": "self.maxRetries < 10"},
        {"rule": "self.replicas"},
        {"rule": "true", "messageExpression": "self.replicas"}]));
    let found = refusals(&bad);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(found[0].contains("x-kubernetes-validations[0].rule: Invalid value: ")
        && found[0].contains("compilation failed: ERROR: <input>:1:15: found no matching overload for '_>_' applied to '(int, string)'"),
        "{found:#?}");
    assert!(
        found[1].contains("undefined field 'maxRetries'"),
        "{found:#?}"
    );
    assert!(
        found[2].ends_with("cel expression must evaluate to a bool"),
        "{found:#?}"
    );
    assert!(
        found[3].contains("x-kubernetes-validations[3].messageExpression")
            && found[3].ends_with("messageExpression must evaluate to a string"),
        "{found:#?}"
    );
    // An update that keeps the schema does not judge its rules again.
    let kept: Vec<String> = validate_update(&bad, &bad)
        .causes
        .iter()
        .map(|c| c.error_string())
        .collect();
    assert!(
        !kept.iter().any(|c| c.contains("x-kubernetes-validations")),
        "{kept:#?}"
    );
    // The root's envelope is open, and rules see it.
    let root = crd(json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.size() < 20 && self.kind == 'Widget'"}],
        "properties": {"spec": {"type": "object"}}}));
    assert_eq!(refusals(&root), Vec::<String>::new());
}
