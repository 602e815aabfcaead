//! The layer rule of `src/` (ARCHITECTURE.md, "Layers"): a top-level
//! module imports only modules below it in [`LAYERS`]. The imports that
//! still go upward are listed in [`KNOWN_UPWARD`], each with why; the test
//! fails on any new one, and on a listed one that is gone (so the list
//! only shrinks). Reads the sources; needs no server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom to top.
const LAYERS: &[&str] = &[
    "pki",
    "serving",
    "informer",
    "security",
    "admission",
    "config",
    "context",
    "registry",
    "filters",
    "controllers",
    "openapi_pb",
    "openapi",
    "discovery",
    "metrics",
    "handlers",
    "main",
];

/// Imports that still point up, to be folded away (issue 16's layering).
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[
    (
        "serving",
        "context",
        "the listener (the entry point) lives with the transport",
    ),
    ("serving", "filters", "the listener runs the filter chain"),
    ("serving", "handlers", "the listener hands requests over"),
    (
        "security",
        "filters",
        "the authenticators' caches (in filters/authn) are part of each executor's security state",
    ),
    (
        "informer",
        "registry",
        "informers read storage through the registry's error mapping",
    ),
    (
        "admission",
        "registry",
        "NamespaceLifecycle reads storage through the registry's error mapping",
    ),
    (
        "registry",
        "filters",
        "the authorizer the registry consults (escalation, create-on-update) lives in filters/authz",
    ),
    (
        "filters",
        "handlers",
        "the chain answers refusals with the handlers' Status rendering",
    ),
];

fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// (importer, imported) → one file that does it.
fn edges() -> BTreeMap<(String, String), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let from = module_of(rel);
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("crate::") {
                let to: String = text[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !to.is_empty() && to != from {
                    out.entry((from.clone(), to))
                        .or_insert_with(|| rel.display().to_string());
                }
            }
        }
    }
    out
}

#[test]
fn src_imports_point_down_the_layers() {
    let rank = |m: &str| {
        LAYERS
            .iter()
            .position(|l| *l == m)
            .unwrap_or_else(|| panic!("module {m} is in no layer: add it to LAYERS"))
    };
    let known: BTreeSet<(&str, &str)> = KNOWN_UPWARD.iter().map(|(a, b, _)| (*a, *b)).collect();
    let mut upward = BTreeSet::new();
    for ((from, to), file) in edges() {
        if rank(&to) > rank(&from) {
            assert!(
                known.contains(&(from.as_str(), to.as_str())),
                "{file}: {from} imports {to}, which is above it (LAYERS in tests/layers.rs)"
            );
            upward.insert((from, to));
        }
    }
    for (from, to, _) in KNOWN_UPWARD {
        assert!(
            upward.contains(&(from.to_string(), to.to_string())),
            "{from} no longer imports {to}: remove it from KNOWN_UPWARD"
        );
    }
}
