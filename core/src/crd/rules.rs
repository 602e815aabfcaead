//! The rules a CRD's `openAPIV3Schema` must follow (kube's structural
//! schema): every node typed, no JSON-schema features kube does not
//! support, value validations (`allOf`/`anyOf`/`oneOf`/`not`) that only
//! validate, kube's extensions used consistently, metadata left to the
//! server, defaults that fit their schema, and CEL rules that compile.

use super::definition::{render, Findings};
use super::structural::Structural;
use crate::status::{
    field_forbidden, field_invalid, field_invalid_raw, field_not_supported, field_required,
};
use serde_json::{Map, Value};

/// Where a node sits, for the rules that depend on it.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    Root,
    Items,
    Field,
    /// Under a value validation (`anyOf[0]`…).
    Junctor,
}

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Fields allowed at the root when the status subresource is on.
const STATUS_ROOT_FIELDS: [&str; 22] = [
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
];

/// Checks `schema` (reported under `path`); `status` says whether the
/// version has the status subresource.
pub fn validate(schema: &Value, path: &str, status: bool, f: &mut Findings) {
    let Some(root) = schema.as_object() else {
        f.causes.push(field_invalid_raw(
            path,
            &render(schema),
            "must be an object",
        ));
        return;
    };
    if status {
        if let Some(t) = root.get("type").and_then(Value::as_str) {
            if t != "object" {
                f.causes.push(field_invalid(
                    &format!("{path}.type"),
                    t,
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                ));
            }
        }
        if let Some(extra) = root
            .keys()
            .find(|k| !STATUS_ROOT_FIELDS.contains(&k.as_str()))
        {
            let _ = extra;
            f.causes.push(field_invalid_raw(
                path,
                "",
                "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
            ));
        }
    }
    if root.get("nullable").and_then(Value::as_bool) == Some(true) {
        f.causes.push(field_forbidden(
            &format!("{path}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if root.contains_key("additionalProperties") {
        f.causes.push(field_forbidden(
            &format!("{path}.additionalProperties"),
            "must not be used at the root",
        ));
    }
    if let Some(t) = root.get("type").and_then(Value::as_str) {
        if t != "object" && TYPES.contains(&t) {
            f.causes.push(field_invalid(
                &format!("{path}.type"),
                t,
                "must be object at the root",
            ));
        }
    }
    node(root, path, Place::Root, f);
    envelope(root, path, true, f);
    if let Some(meta) = root.get("properties").and_then(|p| p.get("metadata")) {
        root_metadata(meta, &format!("{path}.properties[metadata]"), f);
    }
}

/// Checks one node and everything under it.
fn node(s: &Map<String, Value>, path: &str, place: Place, f: &mut Findings) {
    let p = |k: &str| format!("{path}.{k}");
    let flag = |k: &str| s.get(k).and_then(Value::as_bool);
    let preserve = flag("x-kubernetes-preserve-unknown-fields") == Some(true);
    let int_or_string = flag("x-kubernetes-int-or-string") == Some(true);
    let embedded = flag("x-kubernetes-embedded-resource") == Some(true);
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    match s.get("type") {
        Some(Value::Null) => f.causes.push(field_forbidden(
            &p("type"),
            "type cannot be set to null, use nullable as an alternative",
        )),
        Some(Value::String(t)) if !TYPES.contains(&t.as_str()) => {
            f.causes.push(field_not_supported(&p("type"), t, &TYPES))
        }
        _ => {}
    }
    if place == Place::Junctor {
        junctor_node(s, path, f);
    } else if ty.is_empty() && !preserve && !int_or_string {
        let detail = match place {
            Place::Root => "must not be empty at the root",
            Place::Items => "must not be empty for specified array items",
            _ => "must not be empty for specified object fields",
        };
        f.causes.push(field_required(&p("type"), detail));
    }
    for (key, detail) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if s.contains_key(key) {
            f.causes.push(field_forbidden(&p(key), detail));
        }
    }
    if flag("uniqueItems") == Some(true) {
        f.causes.push(field_forbidden(
            &p("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if s.get("items").is_some_and(Value::is_array) {
        f.causes.push(field_forbidden(
            &p("items"),
            "items must be a schema object and not an array",
        ));
    }
    let has_props = s
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    if has_props
        && s.get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(true))
    {
        f.causes.push(field_forbidden(
            &p("additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if flag("x-kubernetes-preserve-unknown-fields") == Some(false) {
        f.causes.push(field_invalid_raw(
            &p("x-kubernetes-preserve-unknown-fields"),
            "false",
            "must be true or undefined",
        ));
    }
    if ty == "array" && !s.contains_key("items") && place != Place::Junctor {
        f.causes
            .push(field_required(&p("items"), "must be specified"));
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        if let Err(e) = regex::Regex::new(pattern) {
            f.causes.push(field_invalid(
                &p("pattern"),
                pattern,
                &format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
    if int_or_string {
        if preserve {
            f.causes.push(field_invalid_raw(
                &p("x-kubernetes-preserve-unknown-fields"),
                "true",
                "must be false if x-kubernetes-int-or-string is true",
            ));
        }
        if embedded {
            f.causes.push(field_invalid_raw(
                &p("x-kubernetes-embedded-resource"),
                "true",
                "must be false if x-kubernetes-int-or-string is true",
            ));
        }
    }
    if embedded {
        if ty != "object" {
            f.causes.push(if ty.is_empty() {
                field_required(
                    &p("type"),
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            } else {
                field_invalid(
                    &p("type"),
                    ty,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            });
        }
        if s.contains_key("additionalProperties") {
            f.causes.push(field_forbidden(
                &p("additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            ));
        }
        if !has_props && !preserve {
            f.causes.push(field_required(
                &p("properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ));
        }
        envelope(s, path, false, f);
    }
    extensions(s, path, ty, f);
    if let Some(d) = s.get("default") {
        check_default(s, d, &p("default"), f);
    }
    rules(s, path, place, f);
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            if let Some(v) = v.as_object() {
                let child = if place == Place::Junctor {
                    Place::Junctor
                } else {
                    Place::Field
                };
                node(v, &format!("{path}.properties[{k}]"), child, f);
            }
        }
    }
    if let Some(Value::Object(items)) = s.get("items") {
        let child = if place == Place::Junctor {
            Place::Junctor
        } else {
            Place::Items
        };
        node(items, &p("items"), child, f);
    }
    if let Some(Value::Object(a)) = s.get("additionalProperties") {
        let child = if place == Place::Junctor {
            Place::Junctor
        } else {
            Place::Field
        };
        node(a, &p("additionalProperties"), child, f);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, v) in s
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(v) = v.as_object() {
                node(v, &format!("{path}.{key}[{i}]"), Place::Junctor, f);
            }
        }
    }
    if let Some(Value::Object(n)) = s.get("not") {
        node(n, &p("not"), Place::Junctor, f);
    }
}

/// What a value validation may not carry: it only validates.
fn junctor_node(s: &Map<String, Value>, path: &str, f: &mut Findings) {
    let p = |k: &str| format!("{path}.{k}");
    for key in ["type", "title", "description"] {
        if s.contains_key(key) {
            f.causes
                .push(field_forbidden(&p(key), "must be empty to be structural"));
        }
    }
    for key in [
        "additionalProperties",
        "default",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ] {
        if s.contains_key(key) {
            f.causes.push(field_forbidden(
                &p(key),
                "must be undefined to be structural",
            ));
        }
    }
    for key in [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if s.get(key).and_then(Value::as_bool) == Some(true) {
            f.causes
                .push(field_forbidden(&p(key), "must be false to be structural"));
        }
    }
    for key in ["x-kubernetes-list-map-keys", "x-kubernetes-validations"] {
        if s.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            f.causes
                .push(field_forbidden(&p(key), "must be empty to be structural"));
        }
    }
    if s.get("properties")
        .and_then(|p| p.get("metadata"))
        .is_some()
    {
        f.causes.push(field_forbidden(
            &format!("{path}.properties[metadata]"),
            "must not be specified in a nested context",
        ));
    }
}

/// The root and embedded resources: apiVersion and kind are strings,
/// metadata an object.
fn envelope(s: &Map<String, Value>, path: &str, _root: bool, f: &mut Findings) {
    let Some(props) = s.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, want) in [
        ("kind", "string"),
        ("apiVersion", "string"),
        ("metadata", "object"),
    ] {
        if let Some(t) = props
            .get(key)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
        {
            if t != want {
                f.causes.push(field_invalid(
                    &format!("{path}.properties[{key}].type"),
                    t,
                    &format!("must be {want}"),
                ));
            }
        }
    }
}

/// The root's metadata is the server's: a schema may only restrict its
/// name and generateName.
fn root_metadata(meta: &Value, path: &str, f: &mut Findings) {
    let Some(m) = meta.as_object() else {
        return;
    };
    let props_ok = m
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
    let others = m
        .keys()
        .any(|k| !matches!(k.as_str(), "type" | "default" | "properties"));
    if !props_ok || others {
        f.causes.push(field_forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `x-kubernetes-list-type`, `-list-map-keys` and `-map-type`.
fn extensions(s: &Map<String, Value>, path: &str, ty: &str, f: &mut Findings) {
    let p = |k: &str| format!("{path}.{k}");
    if let Some(mt) = s.get("x-kubernetes-map-type").and_then(Value::as_str) {
        if ty != "object" {
            let d = "must be object if x-kubernetes-map-type is specified";
            f.causes.push(if ty.is_empty() {
                field_required(&p("type"), d)
            } else {
                field_invalid(&p("type"), ty, d)
            });
        }
        if mt != "atomic" && mt != "granular" {
            f.causes.push(field_not_supported(
                &p("x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let keys: Vec<&str> = super::str_list(s.get("x-kubernetes-list-map-keys")).collect();
    let lt = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    if !keys.is_empty() && lt != Some("map") {
        let d = "must be map if x-kubernetes-list-map-keys is non-empty";
        f.causes.push(match lt {
            None => field_required(&p("x-kubernetes-list-type"), d),
            Some(t) => field_invalid(&p("x-kubernetes-list-type"), t, d),
        });
    }
    let Some(lt) = lt else {
        return;
    };
    if ty != "array" {
        let d = "must be array if x-kubernetes-list-type is specified";
        f.causes.push(if ty.is_empty() {
            field_required(&p("type"), d)
        } else {
            field_invalid(&p("type"), ty, d)
        });
    }
    let items = s.get("items").and_then(Value::as_object);
    match lt {
        "atomic" => {}
        "set" => {
            if let Some(items) = items {
                let it = items.get("type").and_then(Value::as_str).unwrap_or("");
                let d = "must be atomic as item of a list with x-kubernetes-list-type=set";
                if it == "array"
                    && items
                        .get("x-kubernetes-list-type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t != "atomic")
                {
                    f.causes
                        .push(field_invalid(&p("items.x-kubernetes-list-type"), "", d));
                }
                if it == "object"
                    && items.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic")
                {
                    f.causes
                        .push(field_invalid(&p("items.x-kubernetes-map-type"), "", d));
                }
                keyed_items(items, &keys, path, "set", f);
            }
        }
        "map" => {
            if keys.is_empty() {
                f.causes.push(field_required(
                    &p("x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match items {
                None => f.causes.push(field_required(
                    &p("items"),
                    "must have a schema if x-kubernetes-list-type is map",
                )),
                Some(items) => {
                    let it = items.get("type").and_then(Value::as_str).unwrap_or("");
                    if it != "object" {
                        f.causes.push(field_invalid(
                            &p("items.type"),
                            it,
                            "must be object if parent array's x-kubernetes-list-type is map",
                        ));
                    }
                    let props = items.get("properties").and_then(Value::as_object);
                    for (i, k) in keys.iter().enumerate() {
                        if keys[..i].contains(k) {
                            f.causes.push(field_invalid_raw(
                                &p("x-kubernetes-list-map-keys"),
                                &render(&s["x-kubernetes-list-map-keys"]),
                                "must not contain duplicate entries",
                            ));
                        }
                        match props.and_then(|m| m.get(*k)) {
                            None => f.causes.push(field_invalid_raw(
                                &p("x-kubernetes-list-map-keys"),
                                &render(&s["x-kubernetes-list-map-keys"]),
                                "entries must all be names of item properties",
                            )),
                            Some(kp) => {
                                let kt = kp.get("type").and_then(Value::as_str).unwrap_or("");
                                if kt == "array" || kt == "object" {
                                    f.causes.push(field_invalid(
                                        &p(&format!("items.properties[{k}].type")),
                                        kt,
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                        }
                    }
                    keyed_items(items, &keys, path, "map", f);
                }
            }
        }
        other => f.causes.push(field_not_supported(
            &p("x-kubernetes-list-type"),
            other,
            &["atomic", "set", "map"],
        )),
    }
}

/// Items of a set or map list may not be null, and map keys must always
/// be there (required or defaulted) and never null.
fn keyed_items(items: &Map<String, Value>, keys: &[&str], path: &str, lt: &str, f: &mut Findings) {
    if items.get("nullable").and_then(Value::as_bool) == Some(true) {
        f.causes.push(field_forbidden(
            &format!("{path}.items.nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    let required: Vec<&str> = super::str_list(items.get("required")).collect();
    for k in keys {
        let Some(kp) = items.get("properties").and_then(|p| p.get(*k)) else {
            continue;
        };
        if !required.contains(k) && kp.get("default").is_none() {
            f.causes.push(field_required(
                &format!("{path}.items.properties[{k}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if kp.get("nullable").and_then(Value::as_bool) == Some(true) {
            f.causes.push(field_forbidden(
                &format!("{path}.items.properties[{k}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

/// A default must validate against its own node and survive pruning.
fn check_default(s: &Map<String, Value>, d: &Value, path: &str, f: &mut Findings) {
    let schema = Structural::parse(&Value::Object(s.clone()));
    let mut causes = super::validate::value(&schema, d, path);
    let mut pruned = d.clone();
    if super::validate::prune(&mut pruned, &schema) {
        causes.push(field_invalid_raw(
            path,
            &render(d),
            "must not have unknown fields",
        ));
    }
    f.causes.extend(causes);
}

/// `x-kubernetes-validations`: each rule's fields, and that it compiles.
fn rules(s: &Map<String, Value>, path: &str, place: Place, f: &mut Findings) {
    let Some(list) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    for (i, r) in list.iter().enumerate() {
        let p = |k: &str| format!("{path}.x-kubernetes-validations[{i}].{k}");
        let get = |k: &str| r.get(k).and_then(Value::as_str);
        let rule = get("rule").unwrap_or("");
        if rule.trim().is_empty() {
            f.causes
                .push(field_required(&p("rule"), "rule is not specified"));
            continue;
        }
        if let Some(m) = get("message") {
            if m.trim().is_empty() {
                f.causes.push(field_invalid(
                    &p("message"),
                    m,
                    "must be non-empty if specified",
                ));
            } else if m.contains('\n') {
                f.causes.push(field_invalid(
                    &p("message"),
                    m,
                    "must not contain line breaks",
                ));
            }
        } else if rule.contains('\n') {
            f.causes.push(field_required(
                &p("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if let Some(m) = get("messageExpression") {
            if m.trim().is_empty() {
                f.causes.push(field_required(
                    &p("messageExpression"),
                    "messageExpression must be non-empty if specified",
                ));
            }
        }
        if let Some(reason) = get("reason") {
            const REASONS: [&str; 4] = [
                "FieldValueDuplicate",
                "FieldValueForbidden",
                "FieldValueInvalid",
                "FieldValueRequired",
            ];
            if !REASONS.contains(&reason) {
                f.causes
                    .push(field_not_supported(&p("reason"), reason, &REASONS));
            }
        }
        if let Err(e) = super::cel::check(r) {
            f.causes.push(field_invalid_raw(
                &p(e.field),
                &super::cel::go_rule(r),
                &e.message,
            ));
        } else if place != Place::Junctor && !f.kept_schema {
            type_check(s, r, place == Place::Root, &p, f);
        }
    }
}

/// kube's type check of a rule that compiles: `self` (and `oldSelf`) has
/// the type of the node the rule sits on, and the rule must be a boolean,
/// its message expression a string. What the check cannot type is open,
/// so only what kube refuses too is refused.
fn type_check(
    s: &Map<String, Value>,
    r: &Value,
    root: bool,
    p: &dyn Fn(&str) -> String,
    f: &mut Findings,
) {
    use super::cel_check::{check, Type};
    let this = Type::of_json_schema(&Value::Object(s.clone()), root);
    // An optional oldSelf is an optional of the type, which this check
    // leaves open.
    let old = match r.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(true) => Type::Dyn,
        _ => this.clone(),
    };
    let declared = [("self", this), ("oldSelf", old)];
    let fields: [(&str, &str); 2] = [("rule", "bool"), ("messageExpression", "string")];
    for (field, want) in fields {
        let Some(source) = r.get(field).and_then(Value::as_str) else {
            continue;
        };
        let what = if field == "rule" {
            "compilation failed"
        } else {
            "messageExpression compilation failed"
        };
        let message = match check(source, &declared) {
            Err(issues) => format!("{what}: {issues}"),
            Ok(Type::Dyn) => continue,
            Ok(Type::Bool) if want == "bool" => continue,
            Ok(Type::String) if want == "string" => continue,
            Ok(_) if field == "rule" => "cel expression must evaluate to a bool".to_string(),
            Ok(_) => "messageExpression must evaluate to a string".to_string(),
        };
        f.causes.push(field_invalid_raw(
            &p(field),
            &super::cel::go_rule(r),
            &message,
        ));
    }
}
