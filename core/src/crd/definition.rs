//! Validation of a CustomResourceDefinition itself, as kube's CRD
//! strategy runs it on create and update: names, group, scope, versions,
//! the structural-schema rules, subresources, printer columns, selectable
//! fields, conversion and stored versions.
//!
//! kube validates its internal form, where a value every version shares
//! (always so with one version) moves to the top level; error paths
//! follow that (`spec.validation.openAPIV3Schema…` for the schema of a
//! single-version CRD).

use super::structural::Structural;
use crate::status::{
    field_duplicate, field_forbidden, field_invalid, field_invalid_raw, field_not_supported,
    field_required, StatusCause,
};
use crate::validation::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::Value;

/// What validating a CRD found: refusals and warnings.
#[derive(Debug, Default)]
pub struct Findings {
    pub causes: Vec<StatusCause>,
    pub warnings: Vec<String>,
    /// The schema being checked is the one the CRD already has (an update
    /// that keeps it): its rules are not type-checked again, as kube
    /// compiles kept rules in its lenient stored-expression environment.
    pub kept_schema: bool,
}

/// The most selectable fields a version may declare.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// kube's checks of a CRD on create.
pub fn validate_create(crd: &Value) -> Findings {
    let mut f = Findings::default();
    validate(crd, None, &mut f);
    f
}

/// kube's checks of a CRD update: everything a create checks, plus the
/// fields that may not change.
pub fn validate_update(crd: &Value, old: &Value) -> Findings {
    let mut f = Findings::default();
    validate(crd, Some(old), &mut f);
    let established = super::is_established(old);
    let mut immutable = |pointer: &str, path: &str| {
        if crd.pointer(pointer) != old.pointer(pointer) {
            let v = crd.pointer(pointer).cloned().unwrap_or(Value::Null);
            f.causes
                .push(field_invalid_raw(path, &render(&v), "field is immutable"));
        }
    };
    immutable("/spec/group", "spec.group");
    immutable("/spec/names/plural", "spec.names.plural");
    if established {
        immutable("/spec/scope", "spec.scope");
        immutable("/spec/names/kind", "spec.names.kind");
    }
    f
}

fn validate(crd: &Value, old: Option<&Value>, f: &mut Findings) {
    let empty = Value::Null;
    let spec = crd.get("spec").unwrap_or(&empty);
    let s = |key: &str| spec.get(key).and_then(Value::as_str).unwrap_or("");
    let group = s("group");
    let plural = spec
        .pointer("/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = crate::meta::name(crd);
    if !name.is_empty() && name != format!("{plural}.{group}") {
        f.causes.push(field_invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        f.causes.push(field_required("spec.group", ""));
    } else {
        let errs = is_dns1123_subdomain(group);
        if !errs.is_empty() {
            f.causes
                .push(field_invalid("spec.group", group, &errs.join(",")));
        } else if group.split('.').count() < 2 {
            f.causes.push(field_invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
        validate_approval(crd, group, f);
    }
    match s("scope") {
        "" => f.causes.push(field_required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => f.causes.push(field_not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    validate_names(spec.get("names").unwrap_or(&empty), "spec.names", true, f);
    if spec.get("preserveUnknownFields").and_then(Value::as_bool) == Some(true) {
        f.causes.push(field_invalid_raw(
            "spec.preserveUnknownFields",
            "true",
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    let versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    validate_versions(&versions, spec, old, f);
    validate_conversion(spec.get("conversion"), f);
    if let Some(names) = crd.pointer("/status/acceptedNames") {
        validate_names(names, "status.acceptedNames", false, f);
    }
    validate_stored_versions(crd, &versions, f);
}

/// Groups kube keeps for itself need an approval annotation.
fn validate_approval(crd: &Value, group: &str, f: &mut Findings) {
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|p| group == *p || group.ends_with(&format!(".{p}")));
    if !protected {
        return;
    }
    const KEY: &str = "api-approved.kubernetes.io";
    let path = format!("metadata.annotations[{KEY}]");
    match crd
        .pointer(&format!("/metadata/annotations/{KEY}"))
        .and_then(Value::as_str)
    {
        None => f.causes.push(field_required(
            &path,
            &format!("protected groups must have approval annotation {KEY:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        Some(v) if v.starts_with("unapproved") || is_url_with_host(v) => {}
        Some(v) => f.causes.push(field_invalid(
            &path,
            v,
            &format!("protected groups must have approval annotation {KEY:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
    }
}

fn is_url_with_host(v: &str) -> bool {
    v.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/')
    })
}

fn validate_names(names: &Value, path: &str, required: bool, f: &mut Findings) {
    let get = |k: &str| names.get(k).and_then(Value::as_str).unwrap_or("");
    for key in ["plural", "singular"] {
        let v = get(key);
        if v.is_empty() {
            if required {
                f.causes.push(field_required(&format!("{path}.{key}"), ""));
            }
        } else {
            dns1035(v, &format!("{path}.{key}"), f);
        }
    }
    for key in ["shortNames", "categories"] {
        for (i, v) in names
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            dns1035(v.as_str().unwrap_or(""), &format!("{path}.{key}[{i}]"), f);
        }
    }
    for key in ["kind", "listKind"] {
        let v = get(key);
        if v.is_empty() {
            if required {
                f.causes.push(field_required(&format!("{path}.{key}"), ""));
            }
            continue;
        }
        let errs = is_dns1035_label(&v.to_lowercase());
        if !errs.is_empty() {
            f.causes.push(field_invalid(
                &format!("{path}.{key}"),
                v,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                ),
            ));
        }
    }
    if !get("kind").is_empty() && get("kind") == get("listKind") {
        f.causes.push(field_invalid(
            &format!("{path}.listKind"),
            get("listKind"),
            "kind and listKind may not be the same",
        ));
    }
}

fn dns1035(v: &str, path: &str, f: &mut Findings) {
    let errs = is_dns1035_label(v);
    if !errs.is_empty() {
        f.causes.push(field_invalid(path, v, &errs.join(",")));
    }
}

/// Where kube reports a per-version field: at the top level when every
/// version has the same value, otherwise per version.
fn shared_path(versions: &[&Value], pointer: &str, top: &str, per: &str, i: usize) -> String {
    let first = versions.first().and_then(|v| v.pointer(pointer));
    if versions.iter().all(|v| v.pointer(pointer) == first) {
        top.to_string()
    } else {
        format!("spec.versions[{i}].{per}")
    }
}

/// The schema the old CRD gave the version `v` names.
fn old_schema<'a>(old: Option<&'a Value>, v: &Value) -> Option<&'a Value> {
    old?.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|o| o.get("name") == v.get("name"))?
        .pointer("/schema/openAPIV3Schema")
}

fn validate_versions(versions: &[&Value], spec: &Value, old: Option<&Value>, f: &mut Findings) {
    let mut seen: Vec<&str> = Vec::new();
    let mut storage = 0;
    // Paths whose shared value was checked already (once for all versions).
    let mut done: Vec<String> = Vec::new();
    let old_had_schemas = old.is_none_or(|o| {
        o.pointer("/spec/versions")
            .and_then(Value::as_array)
            .is_some_and(|vs| {
                vs.iter()
                    .all(|v| v.pointer("/schema/openAPIV3Schema").is_some())
            })
    });
    for (i, v) in versions.iter().enumerate() {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        let errs = is_dns1035_label(name);
        if !errs.is_empty() {
            f.causes.push(field_invalid(
                &format!("spec.versions[{i}].name"),
                name,
                &errs.join(","),
            ));
        }
        if seen.contains(&name) {
            f.causes.push(field_invalid_raw(
                "spec.versions",
                &render(&spec["versions"]),
                "must contain unique version names",
            ));
        }
        seen.push(name);
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        if let Some(w) = v.get("deprecationWarning").and_then(Value::as_str) {
            let path = format!("spec.versions[{i}].deprecationWarning");
            if v.get("deprecated").and_then(Value::as_bool) != Some(true) {
                f.causes.push(field_invalid(
                    &path,
                    w,
                    "can only be set for deprecated versions",
                ));
            } else if w.len() > 256 {
                f.causes
                    .push(field_invalid(&path, w, "must be <= 256 characters long"));
            } else if w.is_empty() {
                f.causes
                    .push(field_invalid(&path, w, "must not be an empty string"));
            }
        }
        let once = |path: String, done: &mut Vec<String>| {
            (!done.contains(&path)).then(|| {
                done.push(path.clone());
                path
            })
        };
        let status = v.pointer("/subresources/status").is_some();
        match v.pointer("/schema/openAPIV3Schema") {
            None if old_had_schemas => f.causes.push(field_required(
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "",
            )),
            None => {}
            Some(schema) => {
                let path = shared_path(
                    versions,
                    "/schema",
                    "spec.validation.openAPIV3Schema",
                    "schema.openAPIV3Schema",
                    i,
                );
                if let Some(path) = once(path, &mut done) {
                    let unchanged = old_schema(old, v).is_some_and(|o| o == schema);
                    f.kept_schema = unchanged;
                    super::rules::validate(schema, &path, status, f);
                    f.kept_schema = false;
                    super::cel_cost::check(schema, &path, unchanged, f);
                }
            }
        }
        let path = shared_path(
            versions,
            "/subresources",
            "spec.subresources",
            "subresources",
            i,
        );
        if let Some(path) = once(path, &mut done) {
            validate_subresources(v.get("subresources"), &path, f);
        }
        let path = shared_path(
            versions,
            "/additionalPrinterColumns",
            "spec.additionalPrinterColumns",
            "additionalPrinterColumns",
            i,
        );
        if let Some(path) = once(path, &mut done) {
            validate_columns(v.get("additionalPrinterColumns"), &path, f);
        }
        let path = shared_path(
            versions,
            "/selectableFields",
            "spec.selectableFields",
            "selectableFields",
            i,
        );
        if let Some(path) = once(path, &mut done) {
            validate_selectable(
                v.get("selectableFields"),
                v.pointer("/schema/openAPIV3Schema"),
                &path,
                f,
            );
        }
    }
    if storage != 1 {
        f.causes.push(field_invalid_raw(
            "spec.versions",
            &render(spec.get("versions").unwrap_or(&Value::Null)),
            "must have exactly one version marked as storage version",
        ));
    }
}

fn validate_subresources(sub: Option<&Value>, path: &str, f: &mut Findings) {
    let Some(scale) = sub.and_then(|s| s.get("scale")) else {
        return;
    };
    let base = format!("{path}.scale");
    let mut check = |key: &str, required: bool, under: &[&str], detail: &str| {
        let p = format!("{base}.{key}");
        let v = scale.get(key).and_then(Value::as_str).unwrap_or("");
        if v.is_empty() {
            if required {
                f.causes.push(field_required(&p, ""));
            }
            return;
        }
        if !is_simple_path(v) {
            f.causes.push(field_invalid(
                &p,
                v,
                "must be a simple json path starting with .",
            ));
        } else if !under.iter().any(|u| v.starts_with(u)) {
            f.causes.push(field_invalid(&p, v, detail));
        }
    };
    check(
        "specReplicasPath",
        true,
        &[".spec."],
        "should be a json path under .spec",
    );
    check(
        "statusReplicasPath",
        true,
        &[".status."],
        "should be a json path under .status",
    );
    check(
        "labelSelectorPath",
        false,
        &[".spec.", ".status."],
        "should be a json path under either .spec or .status",
    );
}

/// `.a.b.c`: dotted keys, no brackets.
fn is_simple_path(p: &str) -> bool {
    p.starts_with('.')
        && p[1..]
            .split('.')
            .all(|k| !k.is_empty() && !k.contains(['[', ']', ' ']))
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

fn validate_columns(cols: Option<&Value>, path: &str, f: &mut Findings) {
    for (i, c) in cols
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = |k: &str| format!("{path}[{i}].{k}");
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        if s("name").is_empty() {
            f.causes.push(field_required(&p("name"), ""));
        }
        match s("type") {
            "" => f.causes.push(field_required(
                &p("type"),
                &format!("must be one of {COLUMN_TYPES}"),
            )),
            t if !COLUMN_TYPES.split(',').any(|x| x == t) => f.causes.push(field_invalid(
                &p("type"),
                t,
                &format!("must be one of {COLUMN_TYPES}"),
            )),
            _ => {}
        }
        let format = s("format");
        if !format.is_empty() && !COLUMN_FORMATS.split(',').any(|x| x == format) {
            f.causes.push(field_invalid(
                &p("format"),
                format,
                &format!("must be one of {COLUMN_FORMATS}"),
            ));
        }
        match s("jsonPath") {
            "" => f.causes.push(field_required(&p("JSONPath"), "")),
            j if !j.starts_with('.') => f.causes.push(field_invalid(
                &p("JSONPath"),
                j,
                "must be a simple json path starting with .",
            )),
            _ => {}
        }
    }
}

fn validate_selectable(
    fields: Option<&Value>,
    schema: Option<&Value>,
    path: &str,
    f: &mut Findings,
) {
    let Some(fields) = fields.and_then(Value::as_array) else {
        return;
    };
    let Some(schema) = schema else {
        f.causes.push(field_invalid(
            path,
            "",
            "may only be set when validations.schema is included",
        ));
        return;
    };
    let schema = Structural::parse(schema);
    let mut seen: Vec<&str> = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let p = format!("{path}[{i}].jsonPath");
        let j = field.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if j.is_empty() {
            f.causes.push(field_required(&p, ""));
            continue;
        }
        match resolve(&schema, j) {
            Err(e) => f.causes.push(field_invalid(&p, j, &format!("is an invalid path: {e}"))),
            Ok(_) if j.trim_start_matches('.').split('.').next() == Some("metadata") => {
                f.causes.push(field_invalid(&p, j, "must not point to fields in metadata"))
            }
            Ok(node) if !matches!(
                node.ty,
                Some(super::structural::Type::String)
                    | Some(super::structural::Type::Integer)
                    | Some(super::structural::Type::Boolean)
            ) => f.causes.push(field_invalid(
                &p,
                j,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            )),
            Ok(_) if seen.contains(&j) => f.causes.push(field_duplicate(&p, j)),
            Ok(_) => seen.push(j),
        }
    }
    if seen.len() > MAX_SELECTABLE_FIELDS {
        f.causes.push(crate::status::StatusCause {
            reason: "FieldValueTooMany".into(),
            field: path.to_string(),
            message: format!(
                "Too many: {}: must have at most {MAX_SELECTABLE_FIELDS} items",
                seen.len()
            ),
        });
    }
}

/// The schema node a simple path points at.
fn resolve<'a>(schema: &'a Structural, path: &str) -> Result<&'a Structural, String> {
    if path.contains('[') {
        return Err("array notation is not allowed".into());
    }
    let Some(rest) = path.strip_prefix('.') else {
        return Err(format!(
            "expected [ or . but got: {}",
            path.chars().next().unwrap_or(' ')
        ));
    };
    let mut node = schema;
    for key in rest.split('.') {
        if key.is_empty() {
            return Err("unexpected end of JSON path".into());
        }
        node = node.member(key).ok_or("does not refer to a valid field")?;
    }
    Ok(node)
}

fn validate_conversion(conversion: Option<&Value>, f: &mut Findings) {
    let Some(c) = conversion else {
        return;
    };
    let strategy = c.get("strategy").and_then(Value::as_str).unwrap_or("");
    let webhook = c.get("webhook");
    match strategy {
        "" => f
            .causes
            .push(field_required("spec.conversion.strategy", "")),
        "None" => {
            if webhook.and_then(|w| w.get("clientConfig")).is_some() {
                f.causes.push(field_forbidden(
                    "spec.conversion.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .is_some()
            {
                f.causes.push(field_forbidden(
                    "spec.conversion.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            let base = "spec.conversion.webhookClientConfig";
            match webhook.and_then(|w| w.get("clientConfig")) {
                None => f.causes.push(field_required(
                    base,
                    "required when strategy is set to Webhook",
                )),
                Some(cc) => validate_client_config(cc, base, f),
            }
            let versions = webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(Value::as_array);
            let path = "spec.conversion.conversionReviewVersions";
            match versions {
                None => f.causes.push(field_required(path, "")),
                Some(vs) if vs.is_empty() => f.causes.push(field_required(path, "")),
                Some(vs) => {
                    let names: Vec<&str> = vs.iter().filter_map(Value::as_str).collect();
                    for (i, v) in names.iter().enumerate() {
                        if names[..i].contains(v) {
                            f.causes.push(field_invalid(
                                &format!("{path}[{i}]"),
                                v,
                                "duplicate version",
                            ));
                        }
                    }
                    if !names.iter().any(|v| *v == "v1" || *v == "v1beta1") {
                        f.causes.push(field_invalid_raw(
                            path,
                            &format!(
                                "[]string{{{}}}",
                                names
                                    .iter()
                                    .map(|n| format!("{n:?}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                            "must include at least one of v1, v1beta1",
                        ));
                    }
                }
            }
        }
        other => f.causes.push(field_not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
}

/// A webhook client config (conversion here; admission webhooks share the
/// rules): exactly one of an https URL or a service reference.
pub fn validate_client_config(cc: &Value, base: &str, f: &mut Findings) {
    match (cc.get("url").and_then(Value::as_str), cc.get("service")) {
        (Some(_), Some(_)) | (None, None) => f.causes.push(field_required(
            base,
            "exactly one of url or service is required",
        )),
        (Some(url), None) => {
            let p = format!("{base}.url");
            let format = "desired format: https://host[/path]";
            match url.split_once("://") {
                Some(("https", rest)) => {
                    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
                    if host.is_empty() {
                        f.causes.push(field_invalid(
                            &p,
                            url,
                            &format!("host must be specified; {format}"),
                        ));
                    } else if host.contains('@') {
                        f.causes.push(field_invalid(
                            &p,
                            url,
                            "user information is not permitted in the URL",
                        ));
                    }
                    if rest.contains('#') {
                        f.causes.push(field_invalid(
                            &p,
                            url,
                            "fragments are not permitted in the URL",
                        ));
                    }
                    if rest.contains('?') {
                        f.causes.push(field_invalid(
                            &p,
                            url,
                            "query parameters are not permitted in the URL",
                        ));
                    }
                }
                _ => f.causes.push(field_invalid(
                    &p,
                    url,
                    &format!("'https' is the only allowed URL scheme; {format}"),
                )),
            }
        }
        (None, Some(svc)) => {
            let p = |k: &str| format!("{base}.service.{k}");
            for key in ["name", "namespace"] {
                if svc
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    f.causes.push(field_required(&p(key), ""));
                }
            }
            if let Some(port) = svc.get("port").and_then(Value::as_i64) {
                if !(1..=65535).contains(&port) {
                    f.causes.push(field_invalid_raw(
                        &p("port"),
                        &port.to_string(),
                        "port is not valid: must be between 1 and 65535, inclusive",
                    ));
                }
            }
            if let Some(path) = svc.get("path").and_then(Value::as_str) {
                if !path.is_empty() && !path.starts_with('/') {
                    f.causes
                        .push(field_invalid(&p("path"), path, "must start with a '/'"));
                }
            }
        }
    }
}

fn validate_stored_versions(crd: &Value, versions: &[&Value], f: &mut Findings) {
    let Some(stored) = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
    else {
        return;
    };
    let names: Vec<&str> = versions
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    if stored.is_empty() {
        f.causes.push(field_invalid_raw(
            "status.storedVersions",
            "[]string{}",
            "must have at least one stored version",
        ));
        return;
    }
    for (i, s) in stored.iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        if !names.contains(&s) {
            f.causes.push(field_invalid(
                &format!("status.storedVersions[{i}]"),
                s,
                &format!("missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"),
            ));
        }
    }
}

/// A value as kube's field errors print a non-string value.
pub(super) fn render(v: &Value) -> String {
    match v {
        Value::String(s) => crate::status::go_quote(s),
        other => other.to_string(),
    }
}
