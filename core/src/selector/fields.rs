//! Field selectors (`fieldSelector=metadata.name=x,status.phase!=Running`)
//! with kube's term splitting, value escaping and error texts.
//!
//! Field names are not validated here: which fields a resource supports is
//! the resource's business, and kube reports that separately.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;

/// Anything fields can be looked up in. A field that is absent compares as
/// the empty string, as with kube's `fields.Set`.
pub trait Fields {
    fn get(&self, field: &str) -> Option<&str>;
}

impl Fields for BTreeMap<String, String> {
    fn get(&self, field: &str) -> Option<&str> {
        BTreeMap::get(self, field).map(String::as_str)
    }
}

impl<S: BuildHasher> Fields for HashMap<String, String, S> {
    fn get(&self, field: &str) -> Option<&str> {
        HashMap::get(self, field).map(String::as_str)
    }
}

/// Pairs in any order; the first pair with the field wins.
impl Fields for [(String, String)] {
    fn get(&self, field: &str) -> Option<&str> {
        self.iter()
            .find(|(k, _)| k == field)
            .map(|(_, v)| v.as_str())
    }
}

impl Fields for Vec<(String, String)> {
    fn get(&self, field: &str) -> Option<&str> {
        Fields::get(self.as_slice(), field)
    }
}

/// `field=value` (`negate == false`) or `field!=value`; `==` parses to the
/// same thing as `=`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    pub field: String,
    pub value: String,
    pub negate: bool,
}

impl FieldRequirement {
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        let got = fields.get(&self.field).unwrap_or("");
        (got == self.value) != self.negate
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.negate { "!=" } else { "=" };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// The AND of its requirements; empty means "everything".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Escapes `\`, `,` and `=` so an arbitrary value survives a round trip
/// through the selector string (kube's `EscapeValue`).
pub fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// kube's `UnescapeValue`: only `\\`, `\,` and `\=` are escapes, and a bare
/// `,` or `=` in a value is an error (reported by code point, as kube does).
pub fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ))
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// Splits on commas that are not escaped; escapes stay in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator; the field side has no escaping, so
/// the earliest `!=`, `==` or `=` wins (checked in that order per position).
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

impl FieldSelector {
    /// Parses kube's field selector syntax. Terms are ordered by their raw
    /// text, as kube sorts them, and terms with both an empty field and an
    /// empty value are dropped (kube's `Transform` does that).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let (field, op, raw) = split_term(part)
                .ok_or_else(|| format!("invalid selector: '{s}'; can't understand '{part}'"))?;
            let value = unescape_value(raw)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                value,
                negate: op == "!=",
            });
        }
        Ok(FieldSelector { requirements })
    }

    pub fn everything() -> Self {
        FieldSelector::default()
    }

    pub fn from_requirements(requirements: Vec<FieldRequirement>) -> Self {
        FieldSelector { requirements }
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        self.requirements.iter().all(|r| r.matches(fields))
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The value a positive `field=value` term pins, so callers can use an
    /// index (e.g. `metadata.name`, `spec.nodeName`) instead of a scan.
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| !r.negate && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// True when one of the terms is `field=value` (kube's authorizers
    /// look for such a term among all of them, not only the first).
    pub fn requires_equal(&self, field: &str, value: &str) -> bool {
        self.requirements
            .iter()
            .any(|r| !r.negate && r.field == field && r.value == value)
    }

    /// Every field the selector mentions, for checking them against the
    /// resource's supported field labels.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }
}

/// kube's `String()`: terms joined by `,` with values escaped.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(field: &str, value: &str, negate: bool) -> FieldRequirement {
        FieldRequirement {
            field: field.into(),
            value: value.into(),
            negate,
        }
    }

    #[test]
    fn parses_each_operator() {
        let s = FieldSelector::parse("a=1,b==2,c!=3").unwrap();
        assert_eq!(
            s.requirements(),
            &[
                req("a", "1", false),
                req("b", "2", false),
                req("c", "3", true)
            ]
        );
    }

    #[test]
    fn terms_are_ordered_by_raw_text() {
        let s = FieldSelector::parse("z=1,a!=2,m==3").unwrap();
        let fields: Vec<&str> = s.fields().collect();
        assert_eq!(fields, ["a", "m", "z"]);
        assert_eq!(s.to_string(), "a!=2,m=3,z=1");
    }

    #[test]
    fn empty_and_everything() {
        for input in ["", ",", ",,,", "="] {
            let s = FieldSelector::parse(input).unwrap();
            assert!(s.is_empty(), "{input:?}");
            assert!(s.matches(&set(&[("a", "b")])));
        }
        assert!(FieldSelector::everything().is_empty());
        assert_eq!(FieldSelector::everything().to_string(), "");
    }

    #[test]
    fn empty_field_or_value_is_kept_when_the_other_is_set() {
        let s = FieldSelector::parse("=x").unwrap();
        assert_eq!(s.requirements(), &[req("", "x", false)]);
        let s = FieldSelector::parse("a=").unwrap();
        assert_eq!(s.requirements(), &[req("a", "", false)]);
        assert!(s.matches(&set(&[])));
        assert!(!s.matches(&set(&[("a", "v")])));
    }

    #[test]
    fn missing_fields_compare_as_empty() {
        let s = FieldSelector::parse("spec.nodeName!=").unwrap();
        assert!(!s.matches(&set(&[])));
        assert!(s.matches(&set(&[("spec.nodeName", "n1")])));
        let s = FieldSelector::parse("spec.nodeName=n1").unwrap();
        assert!(!s.matches(&set(&[])));
    }

    #[test]
    fn first_operator_wins() {
        let s = FieldSelector::parse("a=!b").unwrap();
        assert_eq!(s.requirements(), &[req("a", "!b", false)]);
        let s = FieldSelector::parse("a!==b").unwrap_err();
        assert_eq!(
            s,
            "invalid field selector: unescaped character in value: 61"
        );
        let e = FieldSelector::parse("a===b").unwrap_err();
        assert_eq!(
            e,
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn escaping() {
        let s = FieldSelector::parse(r"a=x\,y\=z\\w,b=2").unwrap();
        assert_eq!(
            s.requirements(),
            &[req("a", r"x,y=z\w", false), req("b", "2", false)]
        );
        assert_eq!(s.to_string(), r"a=x\,y\=z\\w,b=2");
        assert_eq!(escape_value(r"\,="), r"\\\,\=");
        assert_eq!(unescape_value("plain").unwrap(), "plain");
    }

    #[test]
    fn escape_errors() {
        assert_eq!(
            FieldSelector::parse(r"a=x\!").unwrap_err(),
            r"invalid field selector: invalid escape sequence: \!"
        );
        assert_eq!(
            FieldSelector::parse(r"a=x\").unwrap_err(),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            FieldSelector::parse(r"a=\é").unwrap_err(),
            r"invalid field selector: invalid escape sequence: \é"
        );
        assert_eq!(
            unescape_value("a,b").unwrap_err(),
            "invalid field selector: unescaped character in value: 44"
        );
    }

    #[test]
    fn unparseable_term() {
        assert_eq!(
            FieldSelector::parse("a=b,nonsense").unwrap_err(),
            "invalid selector: 'a=b,nonsense'; can't understand 'nonsense'"
        );
        assert_eq!(
            FieldSelector::parse("a!b").unwrap_err(),
            "invalid selector: 'a!b'; can't understand 'a!b'"
        );
    }

    #[test]
    fn exact_match_only_for_positive_terms() {
        let s = FieldSelector::parse("metadata.name=x,spec.nodeName!=y").unwrap();
        assert_eq!(s.exact_match("metadata.name"), Some("x"));
        assert_eq!(s.exact_match("spec.nodeName"), None);
        assert_eq!(s.exact_match("other"), None);
    }

    #[test]
    fn unicode_values_and_fields() {
        let s = FieldSelector::parse("métadata=日本,x!=é").unwrap();
        assert!(s.matches(&set(&[("métadata", "日本")])));
        assert!(!s.matches(&set(&[("métadata", "日本"), ("x", "é")])));
        let reparsed = FieldSelector::parse(&s.to_string()).unwrap();
        assert_eq!(reparsed, s);
    }

    #[test]
    fn lookup_impls() {
        let s = FieldSelector::parse("a=1,b!=2").unwrap();
        let v: Vec<(String, String)> = vec![("b".into(), "3".into()), ("a".into(), "1".into())];
        assert!(s.matches(&v));
        assert!(s.matches(v.as_slice()));
        let h: HashMap<String, String> = v.iter().cloned().collect();
        assert!(s.matches(&h));
        let r = req("a", "1", true);
        assert!(!r.matches(&v));
        assert_eq!(r.to_string(), "a!=1");
        let built = FieldSelector::from_requirements(vec![req("k", "v", false)]);
        assert_eq!(built.to_string(), "k=v");
    }

    fn field_name() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["a", "b", "c", "status.phase", "métadata.nom"])
            .prop_map(String::from)
    }

    fn field_value() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["", "x", "y", "a,b", "c=d", r"e\f", "!", "é"])
            .prop_map(String::from)
    }

    fn requirement() -> impl Strategy<Value = FieldRequirement> {
        (field_name(), field_value(), any::<bool>()).prop_map(|(field, value, negate)| {
            FieldRequirement {
                field,
                value,
                negate,
            }
        })
    }

    fn field_set() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(field_name(), field_value(), 0..4)
    }

    /// Obviously-correct semantics: every term compares the field, with
    /// absent fields read as "".
    fn reference(reqs: &[FieldRequirement], set: &BTreeMap<String, String>) -> bool {
        for r in reqs {
            let have = match set.get(&r.field) {
                Some(v) => v.clone(),
                None => String::new(),
            };
            if r.negate && have == r.value {
                return false;
            }
            if !r.negate && have != r.value {
                return false;
            }
        }
        true
    }

    fn render(reqs: &[FieldRequirement]) -> String {
        let terms: Vec<String> = reqs
            .iter()
            .map(|r| {
                let op = if r.negate { "!=" } else { "==" };
                let mut v = String::new();
                for c in r.value.chars() {
                    if c == '\\' || c == ',' || c == '=' {
                        v.push('\\');
                    }
                    v.push(c);
                }
                format!("{}{op}{v}", r.field)
            })
            .collect();
        terms.join(",")
    }

    fn sorted(reqs: &[FieldRequirement]) -> Vec<FieldRequirement> {
        let mut v = reqs.to_vec();
        v.sort_by(|a, b| (&a.field, &a.value, a.negate).cmp(&(&b.field, &b.value, b.negate)));
        v
    }

    proptest! {
        #[test]
        fn matches_agrees_with_reference(
            reqs in prop::collection::vec(requirement(), 0..5),
            set in field_set(),
        ) {
            let sel = FieldSelector::parse(&render(&reqs)).unwrap();
            prop_assert_eq!(sorted(sel.requirements()), sorted(&reqs));
            prop_assert_eq!(sel.matches(&set), reference(&reqs, &set));
        }

        #[test]
        fn display_round_trips(reqs in prop::collection::vec(requirement(), 0..5)) {
            let sel = FieldSelector::from_requirements(reqs);
            let back = FieldSelector::parse(&sel.to_string()).unwrap();
            prop_assert_eq!(sorted(back.requirements()), sorted(sel.requirements()));
            prop_assert_eq!(back.to_string(), FieldSelector::parse(&back.to_string()).unwrap().to_string());
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = FieldSelector::parse(&s);
        }

        #[test]
        fn never_panics_on_selector_alphabet(s in "[a-z=!,\\\\é ]{0,30}") {
            if let Ok(sel) = FieldSelector::parse(&s) {
                let again = FieldSelector::parse(&sel.to_string());
                prop_assert!(again.is_ok());
            }
        }
    }
}
