//! kube's CEL semver library (in rules since 1.33): `semver(s)` and
//! `isSemver(s)`, each with an optional `normalize` flag that accepts a
//! leading `v`, missing minor or patch numbers and leading zeros;
//! `major()`, `minor()`, `patch()`, and precedence comparisons (shared
//! with quantities in [`super::cel_library`]). Parsing is strict Semantic
//! Versioning 2.0.0, with the error texts rules' messages show.

use crate::status::go_quote;
use cel::extractors::{Arguments, This};
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value as Cel};
use std::cmp::Ordering;
use std::sync::Arc;

type Add<'a> = &'a dyn Fn(&str, Result<(), cel::DeclarationError>);

/// A parsed version. Equal versions have equal precedence: build
/// metadata is ignored.
#[derive(Debug, Clone)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Numeric(u64),
    Alphanumeric(String),
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.precedence(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Semver {
    /// Semantic Versioning's precedence: numbers, then a version with a
    /// pre-release below the same without, identifiers compared in turn
    /// (numeric below alphanumeric, numbers by value).
    pub fn precedence(&self, other: &Self) -> Ordering {
        let numbers =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                for (a, b) in self.pre.iter().zip(&other.pre) {
                    let o = match (a, b) {
                        (Pre::Numeric(a), Pre::Numeric(b)) => a.cmp(b),
                        (Pre::Numeric(_), Pre::Alphanumeric(_)) => Ordering::Less,
                        (Pre::Alphanumeric(_), Pre::Numeric(_)) => Ordering::Greater,
                        (Pre::Alphanumeric(a), Pre::Alphanumeric(b)) => a.cmp(b),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                self.pre.len().cmp(&other.pre.len())
            }
        }
    }
}

pub fn register(ctx: &mut Context<'static, 'static>, add: Add<'_>) {
    add(
        "isSemver",
        ctx.add_function("isSemver", |Arguments(args): Arguments| {
            Ok::<_, ExecutionError>(from_args("isSemver", &args)?.is_ok())
        }),
    );
    add(
        "semver",
        ctx.add_function("semver", |Arguments(args): Arguments| {
            from_args("semver", &args)?
                .map(|v| Cel::Opaque(Arc::new(v)))
                .map_err(|e| ExecutionError::function_error("semver", e))
        }),
    );
    let part = |name: &'static str, f: fn(&Semver) -> u64| {
        move |This(v): This<Arc<dyn Opaque>>| -> Result<i64, ExecutionError> {
            let v = v
                .downcast_ref::<Semver>()
                .ok_or_else(|| ExecutionError::function_error(name, "not a semver"))?;
            i64::try_from(f(v)).map_err(|_| ExecutionError::function_error(name, "out of range"))
        }
    };
    add(
        "major",
        ctx.add_function("major", part("major", |v| v.major)),
    );
    add(
        "minor",
        ctx.add_function("minor", part("minor", |v| v.minor)),
    );
    add(
        "patch",
        ctx.add_function("patch", part("patch", |v| v.patch)),
    );
}

/// `(string)` or `(string, normalize)`, parsed.
fn from_args(name: &str, args: &[Cel]) -> Result<Result<Semver, String>, ExecutionError> {
    let (s, normalize) = match args {
        [Cel::String(s)] => (s, false),
        [Cel::String(s), Cel::Bool(n)] => (s, *n),
        _ => {
            return Err(ExecutionError::function_error(
                name,
                "expected (string) or (string, bool)",
            ))
        }
    };
    Ok(if normalize { normalized(s) } else { parse(s) })
}

/// The two versions' order, if both are versions.
pub fn compare(a: &dyn Opaque, b: &dyn Opaque) -> Option<Ordering> {
    Some(
        a.downcast_ref::<Semver>()?
            .precedence(b.downcast_ref::<Semver>()?),
    )
}

/// Accepts `v1.2`, `01.2.3` and the like: one leading `v` dropped,
/// leading zeros dropped, missing numbers zero.
fn normalized(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_string();
            }
            let trimmed = p.trim_start_matches('0');
            if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_string()
            }
        })
        .collect();
    if parts.len() < 3 && parts.last().is_some_and(|p| p.contains(['+', '-'])) {
        return Err("short version cannot contain PreRelease/Build meta data".into());
    }
    while parts.len() < 3 {
        parts.push("0".into());
    }
    parse(&parts.join("."))
}

fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".into());
    };
    let (rest, build) = match rest.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((p, pre)) => (p, Some(pre)),
        None => (rest, None),
    };
    let major = number(major, "major", "Major")?;
    let minor = number(minor, "minor", "Minor")?;
    let patch = number(patch, "patch", "Patch")?;
    let pre = pre
        .map(|p| p.split('.').map(pre_release).collect::<Result<Vec<_>, _>>())
        .transpose()?
        .unwrap_or_default();
    for b in build.into_iter().flat_map(|b| b.split('.')) {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !b.chars().all(identifier_char) {
            return Err(format!(
                "Invalid character(s) found in build meta data {}",
                go_quote(b)
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
    })
}

fn number(s: &str, lower: &str, title: &str) -> Result<u64, String> {
    if !s.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {lower} number {}",
            go_quote(s)
        ));
    }
    if leading_zero(s) {
        return Err(format!(
            "{title} number must not contain leading zeroes {}",
            go_quote(s)
        ));
    }
    parse_uint(s)
}

fn pre_release(s: &str) -> Result<Pre, String> {
    if s.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if s.chars().all(|c| c.is_ascii_digit()) {
        if leading_zero(s) {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {}",
                go_quote(s)
            ));
        }
        return parse_uint(s).map(Pre::Numeric);
    }
    if s.chars().all(identifier_char) {
        return Ok(Pre::Alphanumeric(s.to_string()));
    }
    Err(format!(
        "Invalid character(s) found in prerelease {}",
        go_quote(s)
    ))
}

/// Go's `strconv.ParseUint` and its errors.
fn parse_uint(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| {
        let why = if s.is_empty() {
            "invalid syntax"
        } else {
            "value out of range"
        };
        format!("strconv.ParseUint: parsing {}: {why}", go_quote(s))
    })
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

fn identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(a: &str, b: &str) -> Ordering {
        parse(a).unwrap().precedence(&parse(b).unwrap())
    }

    #[test]
    fn precedence_follows_semantic_versioning() {
        let ascending = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
        ];
        for w in ascending.windows(2) {
            assert_eq!(order(w[0], w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
        }
        assert_eq!(parse("1.2.3+a").unwrap(), parse("1.2.3+b").unwrap());
    }

    #[test]
    fn strict_parsing_refuses_with_the_libraries_words() {
        for (input, error) in [
            ("", "Version string empty"),
            ("1.2", "No Major.Minor.Patch elements found"),
            ("a.2.3", "Invalid character(s) found in major number \"a\""),
            (
                "01.2.3",
                "Major number must not contain leading zeroes \"01\"",
            ),
            (
                "1.02.3",
                "Minor number must not contain leading zeroes \"02\"",
            ),
            ("1.2.x", "Invalid character(s) found in patch number \"x\""),
            ("1.2.3-", "Prerelease is empty"),
            (
                "1.2.3-01",
                "Numeric PreRelease version must not contain leading zeroes \"01\"",
            ),
            (
                "1.2.3-a_b",
                "Invalid character(s) found in prerelease \"a_b\"",
            ),
            ("1.2.3+", "Build meta data is empty"),
            (
                "1.2.3+a_b",
                "Invalid character(s) found in build meta data \"a_b\"",
            ),
            ("1..3", "strconv.ParseUint: parsing \"\": invalid syntax"),
            (
                "v1.2.3",
                "Invalid character(s) found in major number \"v1\"",
            ),
        ] {
            assert_eq!(parse(input).unwrap_err(), error, "{input}");
        }
    }

    #[test]
    fn normalizing_accepts_short_and_padded_versions() {
        let v = normalized("v1.02").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 0));
        let v = normalized("01.2.003-rc.1").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
        assert_eq!(
            normalized("1.2-rc").unwrap_err(),
            "short version cannot contain PreRelease/Build meta data"
        );
        assert!(normalized("V1.0.0").is_err());
    }
}
