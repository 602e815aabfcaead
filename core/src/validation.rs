//! Name and metadata validation with kube's exact error texts.
//!
//! The checks work on bytes, not chars, because kube measures lengths with
//! Go's `len` and matches ASCII-only regular expressions: any non-ASCII
//! byte simply fails the pattern, and lengths count UTF-8 bytes.

use crate::status::{
    field_invalid, field_invalid_raw, field_required, field_too_long, StatusCause,
};
use rand::Rng;
use serde_json::{Map, Value};

#[cfg(test)]
mod tests;

pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Sum of key and value bytes over all annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;
/// kube truncates a `generateName` prefix to this before appending the
/// random suffix, so generated names stay DNS-label sized.
pub const MAX_GENERATED_NAME_LENGTH: usize = 63 - GENERATED_SUFFIX_LENGTH;
pub const GENERATED_SUFFIX_LENGTH: usize = 5;
/// Consonants and digits only, so generated suffixes never spell words.
pub const GENERATED_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const EMPTY_ERROR: &str = "must be non-empty";

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// kube's `RegexError`, including its doubled space before each ` or `.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut s = String::from(msg);
    if examples.is_empty() {
        s.push_str(" (regex used for validation is '");
    } else {
        s.push_str(" (e.g. ");
        for (i, ex) in examples.iter().enumerate() {
            if i > 0 {
                s.push_str(" or ");
            }
            s.push('\'');
            s.push_str(ex);
            s.push_str("', ");
        }
        s.push_str("regex used for validation is '");
    }
    s.push_str(re);
    s.push_str("')");
    s
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
fn matches_dns_label(b: &[u8]) -> bool {
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f)
                && is_lower_alnum(l)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Dot-separated DNS labels, without a per-label length limit (as kube).
fn matches_dns_subdomain(b: &[u8]) -> bool {
    b.split(|&c| c == b'.').all(matches_dns_label)
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn matches_qualified_part(b: &[u8]) -> bool {
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn dns1123_label_errors(b: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if b.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns_label(b) {
        if matches_dns_subdomain(b) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

fn dns1123_subdomain_errors(b: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if b.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns_subdomain(b) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// kube's `IsDNS1123Label`; empty result means valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    dns1123_label_errors(value.as_bytes())
}

/// kube's `IsDNS1123Subdomain`; empty result means valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain_errors(value.as_bytes())
}

/// kube's `IsDNS1035Label` (CRD plurals, version names); empty result
/// means valid.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let mut errs = Vec::new();
    if b.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !(matches_dns_label(b) && b[0].is_ascii_lowercase()) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// kube's `IsQualifiedName` (label keys, annotation keys, finalizers).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {EMPTY_ERROR}"));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {EMPTY_ERROR}"));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_part(name.as_bytes()) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// kube's `IsValidLabelValue`; the empty string is a valid value.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_part(value.as_bytes()) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// kube's `IsValidPathSegmentName`: names become URL path segments and
/// storage keys, so these would be ambiguous or unroutable.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// kube's `IsValidPathSegmentPrefix`: a suffix will follow, so `.`/`..` are
/// fine here.
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Which of kube's `ValidateNameFunc`s a resource uses for `metadata.name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameRule {
    /// Most resources (ConfigMap, Secret, Deployment, ...).
    Dns1123Subdomain,
    /// Namespaces, Services and other names that end up in DNS labels.
    Dns1123Label,
    /// Names that only have to survive being a URL path segment (CRs whose
    /// CRD does not say otherwise, RBAC objects).
    PathSegment,
    /// An IP address in its canonical form (networking.k8s.io IPAddresses
    /// are named by the address they reserve).
    IpAddress,
    /// A DNS-1035 label (starts with a letter): CEL's `format.dns1035Label`.
    Dns1035Label,
}

/// kube's name check for a rule. With `prefix` (a `generateName`), a
/// trailing dash is tolerated the way kube tolerates it: the last two bytes
/// are replaced by `a` before checking, since random characters will follow.
pub fn validate_name(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    match rule {
        NameRule::PathSegment if prefix => is_valid_path_segment_prefix(name),
        NameRule::PathSegment => is_valid_path_segment_name(name),
        NameRule::IpAddress => match name.parse::<std::net::IpAddr>() {
            Ok(ip) if ip.to_string() == name => vec![],
            Ok(ip) => vec![format!("must be in canonical form (\"{ip}\")")],
            Err(_) => vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()],
        },
        NameRule::Dns1123Subdomain | NameRule::Dns1123Label | NameRule::Dns1035Label => {
            let masked: Vec<u8>;
            let bytes = if prefix && name.len() > 1 && name.ends_with('-') {
                masked = [&name.as_bytes()[..name.len() - 2], b"a"].concat();
                masked.as_slice()
            } else {
                name.as_bytes()
            };
            match rule {
                NameRule::Dns1123Label => dns1123_label_errors(bytes),
                NameRule::Dns1035Label => is_dns1035_label(&String::from_utf8_lossy(bytes)),
                _ => dns1123_subdomain_errors(bytes),
            }
        }
    }
}

/// `metadata.name` causes on create, after any name generation.
pub fn validate_object_meta_name(name: &str, rule: NameRule) -> Vec<StatusCause> {
    if name.is_empty() {
        return vec![field_required(
            "metadata.name",
            "name or generateName is required",
        )];
    }
    validate_name(name, rule, false)
        .into_iter()
        .map(|m| field_invalid("metadata.name", name, &m))
        .collect()
}

/// `metadata.generateName` causes; kube reports these in addition to any
/// problem with the generated name itself. An empty prefix is not checked.
pub fn validate_generate_name(prefix: &str, rule: NameRule) -> Vec<StatusCause> {
    if prefix.is_empty() {
        return Vec::new();
    }
    validate_name(prefix, rule, true)
        .into_iter()
        .map(|m| field_invalid("metadata.generateName", prefix, &m))
        .collect()
}

/// Five random characters from kube's suffix alphabet, drawn from `rng`
/// (the caller's: this crate reads no randomness of its own).
pub fn generate_name_suffix(rng: &mut impl Rng) -> String {
    (0..GENERATED_SUFFIX_LENGTH)
        .map(|_| {
            let i = rng.gen_range(0..GENERATED_SUFFIX_ALPHABET.len());
            char::from(GENERATED_SUFFIX_ALPHABET[i])
        })
        .collect()
}

/// The name kube generates from `generateName`: prefix cut to 58 bytes
/// (here at a char boundary, so the result stays valid UTF-8) plus suffix.
pub fn generate_name(prefix: &str, rng: &mut impl Rng) -> String {
    let mut end = prefix.len().min(MAX_GENERATED_NAME_LENGTH);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    let mut s = String::with_capacity(end + GENERATED_SUFFIX_LENGTH);
    s.push_str(&prefix[..end]);
    s.push_str(&generate_name_suffix(rng));
    s
}

/// What Go's `%v` would show for a JSON value that is not a string; kube
/// itself rejects such values while decoding, before validation runs.
fn render_non_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

/// kube's `ValidateLabels` over a raw JSON `labels` object; `path` is the
/// field path reported on every cause (e.g. `metadata.labels`).
pub fn validate_labels(labels: &Map<String, Value>, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (k, v) in labels {
        for m in is_qualified_name(k) {
            causes.push(field_invalid(path, k, &m));
        }
        match v {
            Value::String(s) => {
                for m in is_valid_label_value(s) {
                    causes.push(field_invalid(path, s, &m));
                }
            }
            other => causes.push(field_invalid_raw(
                path,
                &render_non_string(other),
                "label values must be strings",
            )),
        }
    }
    causes
}

/// Go's `strings.ToLower`: one rune in, one rune out.
fn go_to_lower(s: &str) -> String {
    s.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// kube's `ValidateAnnotations`: keys are qualified names compared
/// case-insensitively, and the whole map is capped at 256 KiB.
pub fn validate_annotations(annotations: &Map<String, Value>, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut total: usize = 0;
    for (k, v) in annotations {
        for m in is_qualified_name(&go_to_lower(k)) {
            causes.push(field_invalid(path, k, &m));
        }
        total = total.saturating_add(k.len());
        match v {
            Value::String(s) => total = total.saturating_add(s.len()),
            other => causes.push(field_invalid_raw(
                path,
                &render_non_string(other),
                "annotation values must be strings",
            )),
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        causes.push(field_too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES));
    }
    causes
}
