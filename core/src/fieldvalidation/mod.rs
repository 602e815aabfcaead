//! Field validation (`?fieldValidation=Ignore|Warn|Strict`): unknown fields
//! (against the kind's schema) and duplicate fields in request bodies.
//!
//! Unknown fields are always dropped from built-in objects, as kube's typed
//! decoding drops them; the directive only decides whether the client hears
//! about it — not at all (Ignore), as `Warning` headers (Warn, the default)
//! or as a 400 that stores nothing (Strict).

mod decode;
mod prune;
mod types;
mod yaml;

#[cfg(test)]
mod tests;

pub use decode::decode_json;
pub use prune::prune;
pub use types::{check_types, TypeMismatch};
pub use yaml::duplicate_keys;

use crate::status::{field_not_supported, ApiError};

/// What the client asked the server to do about unknown and duplicate fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    Ignore,
    Warn,
    Strict,
}

impl Directive {
    /// Parses the query value; absent means Warn (kube's default). `options`
    /// names the options kind for the error (CreateOptions, PatchOptions…).
    pub fn parse(value: Option<&str>, options: &str) -> Result<Directive, ApiError> {
        match value {
            None | Some("") | Some("Warn") => Ok(Directive::Warn),
            Some("Ignore") => Ok(Directive::Ignore),
            Some("Strict") => Ok(Directive::Strict),
            Some(other) => Err(ApiError::invalid(
                "meta.k8s.io",
                options,
                "",
                vec![field_not_supported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                )],
            )),
        }
    }

    /// Whether findings are reported at all (Ignore skips the bookkeeping).
    pub fn reports(self) -> bool {
        self != Directive::Ignore
    }
}

/// One finding, worded as kube words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issue {
    Unknown(String),
    Duplicate(String),
    /// A YAML duplicate key, with its line: `line 5: key "x" already set in map`.
    YamlDuplicate(String),
    /// A finding about a JSON patch's operations themselves, worded in full
    /// (`json patch unknown field "[0].foo"`).
    JsonPatch(String),
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Issue::Unknown(p) => write!(f, "unknown field \"{p}\""),
            Issue::Duplicate(p) => write!(f, "duplicate field \"{p}\""),
            Issue::YamlDuplicate(m) | Issue::JsonPatch(m) => f.write_str(m),
        }
    }
}

/// `strict decoding error: a, b, c` — YAML duplicates are grouped the way
/// kube's YAML decoder groups them, under one `yaml: unmarshal errors:`.
pub fn strict_message(issues: &[Issue]) -> String {
    let mut parts = Vec::new();
    let yaml: Vec<&str> = issues
        .iter()
        .filter_map(|i| match i {
            Issue::YamlDuplicate(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    if !yaml.is_empty() {
        parts.push(format!("yaml: unmarshal errors:\n  {}", yaml.join("\n  ")));
    }
    parts.extend(
        issues
            .iter()
            .filter(|i| !matches!(i, Issue::YamlDuplicate(_)))
            .map(Issue::to_string),
    );
    format!("strict decoding error: {}", parts.join(", "))
}

/// The answer to a request whose body has findings: the error for Strict,
/// otherwise the warnings to send (none for Ignore).
pub fn judge(
    directive: Directive,
    issues: Vec<Issue>,
    kind: &str,
    version: &str,
) -> Result<Vec<String>, ApiError> {
    match directive {
        _ if issues.is_empty() => Ok(Vec::new()),
        Directive::Ignore => Ok(Vec::new()),
        Directive::Warn => Ok(issues.iter().map(Issue::to_string).collect()),
        Directive::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {}",
            strict_message(&issues)
        ))),
    }
}
