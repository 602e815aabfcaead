//! kube's CEL format library: `format.<name>()` (or `format.named(name)`)
//! gives a format, and `<format>.validate(s)` answers `optional.none()`
//! for a valid string or the list of what is wrong with it, in the
//! words of kube's own validators.

use crate::validation::{self, NameRule};
use cel::extractors::This;
use cel::objects::{Opaque, OptionalValue};
use cel::{Context, ExecutionError, Value as Cel};
use std::sync::Arc;

type Add<'a> = &'a dyn Fn(&str, Result<(), cel::DeclarationError>);

/// The formats kube names, in its spelling.
const NAMES: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

#[derive(Debug, PartialEq, Eq)]
struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

pub fn register(ctx: &mut Context<'static, 'static>, add: Add<'_>) {
    for &name in NAMES {
        let qualified = format!("format.{name}");
        add(
            &qualified,
            ctx.add_function(&qualified, move || Cel::Opaque(Arc::new(Format(name)))),
        );
    }
    add(
        "format.named",
        ctx.add_function("format.named", |s: Arc<String>| {
            let found = NAMES.iter().find(|n| ***n == *s);
            Cel::Opaque(Arc::new(match found {
                Some(n) => OptionalValue::of(Cel::Opaque(Arc::new(Format(n)))),
                None => OptionalValue::none(),
            }))
        }),
    );
    add(
        "validate",
        ctx.add_function(
            "validate",
            |This(f): This<Arc<dyn Opaque>>, s: Arc<String>| {
                let f = f
                    .downcast_ref::<Format>()
                    .ok_or_else(|| ExecutionError::function_error("validate", "not a format"))?;
                let errors = check(f.0, &s);
                Ok::<_, ExecutionError>(Cel::Opaque(Arc::new(if errors.is_empty() {
                    OptionalValue::none()
                } else {
                    OptionalValue::of(Cel::List(Arc::new(
                        errors
                            .into_iter()
                            .map(|e| Cel::String(Arc::new(e)))
                            .collect(),
                    )))
                })))
            },
        ),
    );
}

/// What is wrong with `s` as format `name` (nothing: valid).
fn check(name: &str, s: &str) -> Vec<String> {
    let strfmt = |format: &str, why: &str| {
        if super::formats::valid(format, s) {
            vec![]
        } else {
            vec![why.to_string()]
        }
    };
    match name {
        "dns1123Label" => validation::validate_name(s, NameRule::Dns1123Label, false),
        "dns1123LabelPrefix" => validation::validate_name(s, NameRule::Dns1123Label, true),
        "dns1123Subdomain" => validation::validate_name(s, NameRule::Dns1123Subdomain, false),
        "dns1123SubdomainPrefix" => validation::validate_name(s, NameRule::Dns1123Subdomain, true),
        "dns1035Label" => validation::validate_name(s, NameRule::Dns1035Label, false),
        "dns1035LabelPrefix" => validation::validate_name(s, NameRule::Dns1035Label, true),
        "qualifiedName" => validation::is_qualified_name(s),
        "labelValue" => validation::is_valid_label_value(s),
        "uri" => uri(s),
        "uuid" => strfmt("uuid", "does not match the UUID format"),
        "byte" => strfmt("byte", "invalid base64"),
        "date" => strfmt("date", "invalid date"),
        "datetime" => strfmt("datetime", "invalid datetime"),
        _ => vec![],
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI or an absolute path.
fn uri(s: &str) -> Vec<String> {
    if s.starts_with('/')
        || url::Url::parse(s).is_ok_and(|u| !u.cannot_be_a_base() || s.contains(':'))
    {
        return vec![];
    }
    vec![format!("parse {s:?}: invalid URI for request")]
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn formats_answer_kubes_validators() {
        assert!(check("dns1123Label", "web-1").is_empty());
        assert!(!check("dns1123Label", "Web").is_empty());
        assert!(check("dns1123LabelPrefix", "web-").is_empty());
        assert!(!check("dns1035Label", "1web").is_empty());
        assert!(check("dns1035LabelPrefix", "web-").is_empty());
        assert!(!check("dns1035LabelPrefix", "1web-").is_empty());
        assert!(check("qualifiedName", "example.com/name").is_empty());
        assert!(check("labelValue", "").is_empty());
        assert_eq!(check("uuid", "nope"), ["does not match the UUID format"]);
        assert!(check("uuid", "0b9d0a5c-3c8e-4c4b-9f57-6c2e5d0c6d1e").is_empty());
        assert!(check("uri", "https://example.com/x").is_empty());
        assert!(check("uri", "/x").is_empty());
        assert!(!check("uri", "x").is_empty());
        assert_eq!(check("date", "2024-13-01"), ["invalid date"]);
        assert!(check("datetime", "2024-01-01T00:00:00Z").is_empty());
    }
}
